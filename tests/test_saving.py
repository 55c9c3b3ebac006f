"""Saving never loses a file (issues 15.3 and 13 "Saving"): the installed CLI in a real
pseudo-terminal for the interview, real processes for `--save` and `run --report`."""

from __future__ import annotations

import io
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import FIXTURES, ROOT

CLI = Path(sys.executable).with_name("ddp-doctor")
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[()][0-9A-B]|\x1b[=>]")
LOG = ROOT / "examples" / "torchrun-unused-module.log"
ERROR_TEXT = (FIXTURES / "versions" / "torch_1_10_flag_on.txt").read_text(encoding="utf-8")
OLD = "an old report the user wants to keep\n"
SELECT_HINT = {"en": "(↑↓ and Enter)", "zh": "（↑↓ 选择，回车确认）"}
SAVE_PROMPT = {"en": "Save this report as Markdown?", "zh": "把这份报告保存成 Markdown 文件吗？"}
MORE_PROMPT = {"en": "Show the full report", "zh": "要看完整报告吗"}  # after the short report
CLEAR_LINE = "\x15"  # Ctrl-U: empty the file-name prompt before typing a name


def spawn(tmp_path: Path, *args: str):
    pexpect = pytest.importorskip("pexpect")
    if not CLI.exists():
        pytest.skip("ddp-doctor is not installed in this environment (pip install -e .)")
    env = {**os.environ, "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm", "COLUMNS": "100"}
    env.pop("NO_COLOR", None)
    child = pexpect.spawn(
        str(CLI),
        list(args),
        env=env,
        dimensions=(40, 100),
        encoding="utf-8",
        timeout=30,
        cwd=str(tmp_path),
    )
    child.logfile_read = io.StringIO()
    return child


def paste(text: str) -> str:
    return "\x1b[200~" + text.replace("\n", "\r") + "\x1b[201~"


# the heading above a reading asked back (printed once; the prompt below it is redrawn)
READ_BACK = {"en": "which I read from your description", "zh": "这是我从你的描述里读出来的"}
CONFIRM = {"en": "Is that right?", "zh": "这样理解对吗？"}


def to_the_save_prompt(child, lang: str, with_paste: bool = False) -> None:
    """Paste (or skip and describe), then Enter on every question until the save prompt."""
    child.expect_exact({"en": "Paste the error", "zh": "把报错粘贴进来"}[lang])
    child.expect_exact("\x1b[?2004h")  # bracketed paste on: the prompt is listening
    if with_paste:
        child.send(paste(ERROR_TEXT))  # it ends in a newline: taken at once
    else:
        child.send("\r")
        child.expect_exact({"en": "Describe", "zh": "描述"}[lang])
        child.send("I call backward twice per step\r")
    answer_until(child, SAVE_PROMPT[lang], lang)


def answer_until(child, stop: str, lang: str = "en") -> None:
    """The first option of every question, yes to a reading asked back, no to the full report,
    until `stop` is on the screen (a select points at nothing until ↓ is pressed)."""
    while True:
        seen = child.expect_exact([SELECT_HINT[lang], READ_BACK[lang], MORE_PROMPT[lang], stop])
        if seen == 0:
            child.send("\x1b[B\r")
            continue
        if seen == 1:  # "backward twice", read from the sentence, which the fix rests on
            child.expect_exact(CONFIRM[lang])
            child.send("y")
            continue
        if seen == 2:  # the last prompt before saving; its echo must not be matched again
            child.send("n")
            child.expect_exact(stop)
        return


FOLLOW_UP = ["Enter alone leaves", "直接按回车退出"]  # the session's last prompt (follow-ups)


def finish(child) -> tuple[int, str]:
    import pexpect

    if child.expect([pexpect.EOF, *FOLLOW_UP]) != 0:
        child.send("\r")  # Enter alone leaves the follow-up prompt
        child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus, ANSI.sub("", child.logfile_read.getvalue())


def reproduce_line(screen: str) -> str:
    return next(line for line in screen.splitlines() if "ddp-doctor --lang" in line)


# ---------------------------------------------------------------------------- the interview


def test_an_existing_report_is_replaced_only_after_asking(tmp_path):
    old = tmp_path / "report.md"
    old.write_text(OLD)
    child = spawn(tmp_path, "--lang", "en")
    to_the_save_prompt(child, "en")
    child.send("y")
    child.expect_exact("File name:")
    child.send(CLEAR_LINE + "report.md\r")
    child.expect_exact("Replace the existing report.md?")
    child.send("n")  # keep it: asked again
    child.expect_exact(SAVE_PROMPT["en"])
    child.send("y")
    child.expect_exact("File name:")
    child.send(CLEAR_LINE + "other.md\r")
    code, screen = finish(child)
    assert code == 0, screen[-2000:]
    assert old.read_text() == OLD
    assert (tmp_path / "other.md").read_text(encoding="utf-8").startswith("# ddp-doctor")
    assert "--answers other.answers.yaml" in reproduce_line(screen)


def test_replacing_after_yes_is_whole(tmp_path):
    old = tmp_path / "report.md"
    old.write_text(OLD)
    child = spawn(tmp_path, "--lang", "en", "--save", "report.md")
    child.expect_exact("Paste the error")  # with --save, the first save question: replace?
    child.expect_exact("\x1b[?2004h")
    child.send("\r")
    child.expect_exact("Describe")
    child.send("I call backward twice per step\r")
    answer_until(child, "Replace the existing")
    child.send("y")
    code, screen = finish(child)
    assert code == 0, screen[-2000:]
    assert old.read_text(encoding="utf-8").startswith("# ddp-doctor diagnosis")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.answers.yaml", "report.md"]


def test_an_unwritable_name_is_an_error_and_asks_again(tmp_path):
    child = spawn(tmp_path, "--lang", "en")
    to_the_save_prompt(child, "en", with_paste=True)
    child.send("y")
    child.expect_exact("File name:")
    child.send(CLEAR_LINE + "no-such-dir/report.md\r")
    child.expect_exact("cannot write no-such-dir/report.md")
    child.expect_exact(SAVE_PROMPT["en"])  # asked again, not a silent exit 0
    child.send("n")
    code, screen = finish(child)
    assert code == 0, screen[-2000:]
    command = reproduce_line(screen)
    assert "--paste" not in command  # no error.txt that was never written
    assert "The pasted error was not saved" in screen
    assert list(tmp_path.iterdir()) == []


def test_the_pasted_error_is_saved_and_named(tmp_path):
    child = spawn(tmp_path, "--lang", "en")
    to_the_save_prompt(child, "en", with_paste=True)
    child.send("y")
    child.expect_exact("File name:")
    child.send(CLEAR_LINE + "r.md\r")
    code, screen = finish(child)
    assert code == 0, screen[-2000:]
    assert "--paste r.error.txt" in reproduce_line(screen)
    assert "Parameter indices which did not receive grad" in (tmp_path / "r.error.txt").read_text()


def test_the_paste_file_itself_is_never_saved_over(tmp_path):
    log = tmp_path / "err.txt"
    log.write_text(ERROR_TEXT, encoding="utf-8")
    child = spawn(tmp_path, "--lang", "en", "--paste", "err.txt")
    answer_until(child, SAVE_PROMPT["en"])
    child.send("y")
    child.expect_exact("File name:")
    child.send(CLEAR_LINE + "err.txt\r")
    child.expect_exact("not saving over err.txt")
    child.expect_exact(SAVE_PROMPT["en"])
    child.send("n")
    code, screen = finish(child)
    assert code == 0, screen[-2000:]
    assert log.read_text(encoding="utf-8") == ERROR_TEXT
    assert "--paste err.txt" in reproduce_line(screen)


def test_chinese_confirm_prompts_answer_in_chinese(tmp_path):
    (tmp_path / "report.md").write_text(OLD)
    child = spawn(tmp_path, "--lang", "zh")
    to_the_save_prompt(child, "zh")
    child.send("y")
    child.expect_exact("文件名：")
    child.send(CLEAR_LINE + "report.md\r")
    child.expect_exact("要覆盖已有的 report.md 吗？")
    child.send("n")
    child.expect_exact(SAVE_PROMPT["zh"])
    child.send("n")
    code, screen = finish(child)
    assert code == 0, screen[-2000:]
    confirms = [line for line in screen.splitlines() if "Markdown 文件吗" in line or "覆盖" in line]
    assert confirms and all("Yes" not in line and "No" not in line for line in confirms)
    assert any(line.rstrip().endswith("是") for line in confirms)
    assert any(line.rstrip().endswith("否") for line in confirms)


# ---------------------------------------------------------------------------- --save, --report


def _run(*args: str, cwd: Path, limit: int | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "DDP_DOCTOR_LANG"}
    # under a file-size limit, no bytecode: a .pyc cut short by it would break every later run
    env["PYTHONDONTWRITEBYTECODE"] = "1"

    def apply_limit() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    command = [str(CLI)] if CLI.exists() else [sys.executable, "-m", "ddp_doctor"]
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        preexec_fn=apply_limit,
    )


@pytest.fixture
def answers_and_log(tmp_path):
    (tmp_path / "a.yaml").write_text("backward_calls: many\n")
    (tmp_path / "err.txt").write_text(ERROR_TEXT, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("target", ["err.txt", "a.yaml"])
def test_save_refuses_an_input_file(answers_and_log, target):
    before = (answers_and_log / target).read_text(encoding="utf-8")
    result = _run(
        "--lang",
        "en",
        "--answers",
        "a.yaml",
        "--paste",
        "err.txt",
        "--save",
        target,
        cwd=answers_and_log,
    )
    assert result.returncode == 3
    assert result.stderr == (
        f"ddp-doctor: not saving over {target}: ddp-doctor reads it in this run; "
        "choose another name\n"
    )
    assert (answers_and_log / target).read_text(encoding="utf-8") == before


def test_save_without_a_terminal_never_replaces_a_file(answers_and_log):
    (answers_and_log / "r.md").write_text(OLD)
    result = _run(
        "--lang",
        "zh",
        "--answers",
        "a.yaml",
        "--paste",
        "err.txt",
        "--save",
        "r.md",
        cwd=answers_and_log,
    )
    assert result.returncode == 3
    assert result.stderr == "ddp-doctor: r.md 已经存在，不会覆盖（请先删除它，或者换一个文件名）\n"
    assert (answers_and_log / "r.md").read_text() == OLD


def test_save_under_a_file_size_limit_leaves_no_half_file(answers_and_log):
    result = _run(
        "--lang",
        "en",
        "--answers",
        "a.yaml",
        "--paste",
        "err.txt",
        "--save",
        "r.md",
        cwd=answers_and_log,
        limit=2048,  # the report is larger; the inputs are only read
    )
    assert result.returncode == 3
    assert "cannot write r.md" in result.stderr
    assert not (answers_and_log / "r.md").exists()
    assert sorted(p.name for p in answers_and_log.iterdir()) == ["a.yaml", "err.txt"]


def test_run_report_refuses_a_file_the_command_names(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("open('started', 'w').write('yes')\n")
    result = _run(
        "run",
        "--lang",
        "en",
        "--report",
        "train.py",
        "--",
        sys.executable,
        "train.py",
        cwd=tmp_path,
    )
    assert result.returncode == 2
    assert "not writing the report over train.py" in result.stderr
    assert script.read_text() == "open('started', 'w').write('yes')\n"
    assert not (tmp_path / "started").exists()  # refused before the job started
