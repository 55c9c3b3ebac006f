"""The installed `ddp-doctor` on bad inputs and odd terminals: a message and an exit code.

Every case runs the console script in a subprocess, as a user would, and checks the one-line
message, the documented exit code (see the docstring of `wizard/cli/main.py`), and that no
Python traceback ever reaches the user. Every subprocess has a time-out: a hang fails.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ddp_doctor.common.errors import ExitCode

EXIT_OK, EXIT_NO_ERROR_FOUND, EXIT_INPUT = ExitCode.OK, ExitCode.NO_ERROR_FOUND, ExitCode.INPUT
EXIT_RULES, EXIT_INTERRUPTED = ExitCode.RULES, ExitCode.INTERRUPTED

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "versions" / "torch_1_10_flag_on.txt"
ERROR = FIXTURE.read_bytes()
SCRIPT = Path(sys.executable).with_name("ddp-doctor")
TIMEOUT = 60
ANSI = re.compile(r"\x1b\[")
HAN = re.compile(r"[\u4e00-\u9fff]")

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="ddp-doctor is not installed")


def clean_env(**changes: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DDP_DOCTOR_")}
    for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "NO_COLOR", "COLUMNS"):
        env.pop(name, None)
    env.update(LANG="C.UTF-8", TERM="xterm-256color")
    env.update(changes)
    return env


def run(*args: str, env: dict[str, str] | None = None, **kwargs) -> subprocess.CompletedProcess:
    kwargs.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run(
        [str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env or clean_env(),
        **kwargs,
    )


def assert_clean(done: subprocess.CompletedProcess, code: int, message: str = "") -> None:
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    assert done.returncode == code, (done.returncode, done.stderr, done.stdout[-500:])
    if message:
        assert message in done.stderr, done.stderr


def one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    return lines[0]


# ---------------------------------------------------------------------------- inputs


def test_missing_file(tmp_path):
    missing = tmp_path / "nope.log"
    done = run("triage", str(missing))
    assert_clean(done, EXIT_INPUT, f"cannot read {missing}: no such file")
    one_line(done.stderr)


def test_missing_file_in_chinese(tmp_path):
    done = run("triage", "--lang", "zh", str(tmp_path / "nope.log"))
    assert_clean(done, EXIT_INPUT, "文件不存在")


def test_directory(tmp_path):
    done = run("triage", str(tmp_path))
    assert_clean(done, EXIT_INPUT, f"{tmp_path} is a directory")


def test_fifo_without_writer_does_not_hang(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    done = run("triage", str(fifo))
    assert_clean(done, EXIT_INPUT, "is empty")


def test_endless_zeros_bounded_by_max_bytes():
    done = run("triage", "--max-bytes", "2000000", "/dev/zero")
    assert_clean(done, EXIT_INPUT, "stopped reading /dev/zero after 2000000 bytes")
    assert "looks like binary data" in done.stderr


def test_endless_text_on_stdin_bounded_by_max_bytes():
    writer = subprocess.Popen(["yes", "NCCL INFO all good"], stdout=subprocess.PIPE)
    try:
        done = run("triage", "--max-bytes", "3000000", "-", stdin=writer.stdout)
    finally:
        writer.stdout.close()
        writer.kill()
        writer.wait()
    assert_clean(done, EXIT_NO_ERROR_FOUND, "stopped reading <stdin> after 3000000 bytes")
    assert "No DDP error" in done.stdout


def test_one_100_mb_line_with_the_error_in_the_middle(tmp_path):
    """Nothing splits the whole input into lines: memory stays bounded (peak RSS)."""
    log = tmp_path / "one-line.log"
    half = 50 << 20
    with open(log, "wb") as out:
        out.write(b"x" * half)
        out.write(b" " + ERROR.replace(b"\n", b" ") + b" ")
        out.write(b"y" * half)
    report = tmp_path / "report.json"
    code, rss_mb = run_measured(["triage", "--json", str(log)], report)
    assert code == EXIT_OK
    assert '"family": "unfinished_reduction"' in report.read_text()
    assert rss_mb < 100, f"peak RSS {rss_mb:.0f} MB on a 100 MB line"


# Linux carries a parent's peak RSS over fork and exec into the child's ru_maxrss, and the
# pytest process may hold torch by now: so a small helper process starts ddp-doctor and
# reports the rusage of that grandchild, which starts from a small parent.
_MEASURE = """
import os, subprocess, sys
with open(sys.argv[1], "wb") as out:
    child = subprocess.Popen(sys.argv[2:], stdout=out, stderr=subprocess.PIPE)
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
sys.stderr.buffer.write(err)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def run_measured(args: list[str], stdout: Path) -> tuple[int, float]:
    """Exit code and peak RSS in MB of `ddp-doctor ARGS`, its output written to `stdout`."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(stdout), str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=clean_env(),
    )
    assert "Traceback" not in done.stderr, done.stderr
    code, rss_kib = done.stdout.split()
    return int(code), int(rss_kib) / 1024


def test_invalid_utf8_and_gbk_around_a_real_error(tmp_path):
    log = tmp_path / "mixed.log"
    log.write_bytes(
        "训练开始，损失 0.5\n".encode("gbk")
        + b"\xff\xfe\x80 broken \xc3\x28\n"
        + ERROR
        + "\n结束\n".encode("gbk")
        + b"\xe4\xb8"
    )
    done = run("triage", "--json", str(log))
    assert_clean(done, EXIT_OK)
    assert '"family": "unfinished_reduction"' in done.stdout


@pytest.mark.parametrize("content", [b"", b"   \n\t\n\r\n  "], ids=["empty", "whitespace"])
def test_empty_and_whitespace_only(tmp_path, content):
    log = tmp_path / "blank.log"
    log.write_bytes(content)
    done = run("triage", str(log))
    assert_clean(done, EXIT_INPUT, f"{log} is empty: nothing to diagnose")


@pytest.mark.parametrize("sentence", ["", "   "], ids=["empty", "blank"])
def test_ask_with_no_sentence_says_what_to_type(sentence):
    """`ask ""` is a usage error that shows a sentence to type, not "did you mean" readings
    guessed from nothing."""
    done = run("ask", sentence, "--lang", "en")
    assert_clean(done, ExitCode.USAGE, "ask needs a sentence")
    assert "did you mean" not in done.stdout.lower() and "closest readings" not in done.stdout
    scripted = run("ask", sentence, "--json")  # a script still reads one JSON document
    error = json.loads(scripted.stdout)["error"]
    assert error["exit_code"] == ExitCode.USAGE and "ask" in error["message"]


def test_no_known_error(tmp_path):
    log = tmp_path / "fine.log"
    log.write_text("epoch 1 loss 0.3\nepoch 2 loss 0.2\n")
    done = run("triage", str(log))
    assert_clean(done, EXIT_NO_ERROR_FOUND)
    assert "No DDP error that ddp-doctor knows" in done.stdout


def test_bad_format_is_a_usage_error():
    done = run("triage", "--format", "html", str(FIXTURE))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr


# ---------------------------------------------------------------------------- terminals


def test_rich_report_at_width_20():
    done = run("triage", "--format", "rich", str(FIXTURE), env=clean_env(COLUMNS="20"))
    assert_clean(done, EXIT_OK)
    assert done.stdout.strip()


def test_dumb_terminal_gets_plain_text():
    done = run("triage", str(FIXTURE), env=clean_env(TERM="dumb"))
    assert_clean(done, EXIT_OK)
    assert not ANSI.search(done.stdout)


def test_no_color_gets_no_escape_codes():
    done = run("triage", "--format", "rich", str(FIXTURE), env=clean_env(NO_COLOR="1"))
    assert_clean(done, EXIT_OK)
    assert not ANSI.search(done.stdout)


def test_foreign_locale_falls_back_to_english():
    done = run("triage", str(FIXTURE), env=clean_env(LANG="fr_FR.UTF-8", LC_ALL="fr_FR.UTF-8"))
    assert_clean(done, EXIT_OK)
    assert done.stderr == ""
    assert not HAN.search(done.stdout)
    assert "find_unused_parameters" in done.stdout


def test_chinese_when_asked():
    done = run("triage", "--lang", "zh", str(FIXTURE))
    assert_clean(done, EXIT_OK)
    assert len(HAN.findall(done.stdout)) > 20


def test_chinese_from_the_locale():
    done = run("triage", str(FIXTURE), env=clean_env(LANG="zh_CN.UTF-8"))
    assert_clean(done, EXIT_OK)
    assert HAN.search(done.stdout)


# ---------------------------------------------------------------------------- user rules


MALFORMED = "families:\n  - id: mine\n    title: {en: [unclosed\n"
SCHEMA_ERROR = "families:\n  - id: mine\n    severity: error\n    colour: red\n"


@pytest.mark.parametrize("content,line", [(MALFORMED, 4), (SCHEMA_ERROR, 2)])
@pytest.mark.parametrize("how", ["option", "env"])
def test_broken_user_rules_name_file_and_line(tmp_path, content, line, how):
    rules = tmp_path / "my-rules"
    rules.mkdir()
    (rules / "signatures.yaml").write_text(content)
    if how == "option":
        done = run("triage", "--rules", str(rules), str(FIXTURE))
    else:
        done = run("triage", str(FIXTURE), env=clean_env(DDP_DOCTOR_RULES=str(rules)))
    assert_clean(done, EXIT_RULES)
    message = one_line(done.stderr)
    assert f"{rules / 'signatures.yaml'}:{line}:" in message, message


def test_missing_user_rules_dir(tmp_path):
    done = run("triage", "--rules", str(tmp_path / "absent"), str(FIXTURE))
    assert_clean(done, EXIT_RULES, "rules directory not found")


# ---------------------------------------------------------------------------- signals, pipes


def test_ctrl_c_during_a_slow_fifo(tmp_path):
    fifo = tmp_path / "slow"
    os.mkfifo(fifo)
    # opened read-write: a writer that never finishes, and opening does not block
    keep = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    try:
        os.write(keep, b"step 1 loss 0.5\n" * 100)
        child = subprocess.Popen(
            [str(SCRIPT), "triage", str(fifo)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=clean_env(),
        )
        time.sleep(2.0)  # started, imported, and blocked reading the FIFO
        assert child.poll() is None, child.communicate()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=TIMEOUT)
    finally:
        os.close(keep)
    assert "Traceback" not in err, err
    assert child.returncode == EXIT_INTERRUPTED, (child.returncode, err)


def test_reader_leaving_the_pipe_is_not_an_error():
    """`ddp-doctor triage log | head -1`: no BrokenPipeError traceback."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write
    try:
        done = subprocess.run(
            [str(SCRIPT), "triage", "--format", "markdown", str(FIXTURE)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=TIMEOUT,
            env=clean_env(),
        )
    finally:
        os.close(write_end)
    assert "Traceback" not in done.stderr, done.stderr
    assert "BrokenPipe" not in done.stderr
    assert done.returncode == EXIT_OK


def test_head_one_in_a_shell_pipeline(tmp_path):
    err = tmp_path / "err"
    done = subprocess.run(
        f"'{SCRIPT}' triage --format markdown '{FIXTURE}' 2>'{err}' | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=clean_env(),
    )
    assert done.stdout.strip()
    assert "Traceback" not in err.read_text()


def test_save_to_an_unwritable_path(tmp_path):
    answers = tmp_path / "answers.yaml"
    answers.write_text("{}\n")
    target = tmp_path / "no-such-dir" / "report.md"
    done = run("--answers", str(answers), "--save", str(target), "--format", "markdown")
    assert_clean(done, EXIT_INPUT, f"cannot write {target}")
