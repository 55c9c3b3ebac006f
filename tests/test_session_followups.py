"""After the report the session takes follow-ups: questions about a fix, and details that
re-rank the report, until an empty line, Ctrl-C or Ctrl-D (all a normal end: exit code 0).

Driven like test_session.py: prompt_toolkit's pipe input in-process, pexpect on a real
terminal for the installed script.
"""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pytest
from ddp_doctor.knowledge.kb import load

pytest.importorskip("questionary")
from ddp_doctor.talk.session import run_session  # noqa: E402
from prompt_toolkit.input import create_pipe_input  # noqa: E402
from prompt_toolkit.output import DummyOutput  # noqa: E402
from rich.console import Console  # noqa: E402

KB = load()
ENTER, CTRL_C, CTRL_D, DOWN = "\r", "\x03", "\x04", "\x1b[B"
FIRST = DOWN + ENTER  # a select points at nothing until the user moves: the first option
CLI = Path(sys.executable).with_name("ddp-doctor")


@pytest.fixture(autouse=True)
def _in_a_scratch_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def drive(keys: str, lang: str) -> tuple[int, str]:
    out = io.StringIO()
    console = Console(file=out, width=160, highlight=False, color_system=None)
    with create_pipe_input() as pipe:
        pipe.send_text(keys)
        pipe.close()
        code = run_session(
            KB, lang, console=console, prompt_input=pipe, prompt_output=DummyOutput()
        )
    return code, re.sub(r"\s+", " ", re.sub(r"[│╭╮╰╯─]", " ", out.getvalue()))


# no paste; a description; the two tailoring questions (first option); Enter keeps the reading
# the fix rests on ("backward is called more than once"); no full report, no save
TO_THE_REPORT_EN = ENTER + "I call backward twice per step" + ENTER + FIRST + FIRST + ENTER + "nn"
TO_THE_REPORT_ZH = ENTER + "每个 step 调用了两次 backward" + ENTER + FIRST + FIRST + ENTER + "nn"
AFTER_UPDATE = "nn"  # an updated report: not the full one, not saved


def test_a_question_then_a_detail_then_an_empty_line():
    keys = (
        TO_THE_REPORT_EN
        + "what does find_unused_parameters cost?"
        + ENTER
        + "I also freeze the encoder after 5 epochs"
        + ENTER
        + AFTER_UPDATE
        + ENTER
    )
    code, screen = drive(keys, "en")
    assert code == 0, screen[-1500:]
    after = screen.split("Most likely:", 1)[1]  # the prompts go to the terminal, not here
    cost = KB.fixes["find_unused_parameters"].cost.en
    assert cost.split(",")[0] in after  # the answer, from the fix's own `cost`
    assert "Source: ddp-doctor's rules for the fix" in after  # where the answer comes from,
    assert "fixes.yaml" not in after  # in the reader's words, not the rules file's path
    assert "Updated report:" in after
    updated = after.split("Updated report:", 1)[1]
    frozen = KB.cause("frozen_params").title.en.replace("`", "")
    assert frozen in updated.replace("`", "")  # the detail re-ranked the causes
    assert "Traceback" not in screen


def test_chinese_follow_up_detail():
    keys = TO_THE_REPORT_ZH + "其实我用的是 Lightning" + ENTER + AFTER_UPDATE + ENTER
    code, screen = drive(keys, "zh")
    assert code == 0, screen[-1500:]
    after = screen.split("可能的原因", 1)[1]
    assert "我读到的：" in after and "PyTorch Lightning" in after
    assert "更新后的报告：" in after


def test_nothing_new_says_so_and_keeps_asking():
    code, screen = drive(TO_THE_REPORT_EN + "hello there" + ENTER + ENTER, "en")
    assert code == 0
    assert "could not tell anything new" in screen


@pytest.mark.parametrize("key", [CTRL_C, CTRL_D])
def test_ctrl_c_or_ctrl_d_at_a_follow_up_ends_normally(key):
    code, screen = drive(TO_THE_REPORT_EN + key, "en")
    assert code == 0 and "Most likely:" in screen and "Traceback" not in screen


def test_pty_follow_up_question():
    pexpect = pytest.importorskip("pexpect")
    if not CLI.exists():
        pytest.skip("ddp-doctor is not installed in this environment (pip install -e .)")
    import os

    env = {**os.environ, "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm", "COLUMNS": "100"}
    env.pop("NO_COLOR", None)
    child = pexpect.spawn(
        str(CLI), ["--lang", "en"], env=env, dimensions=(40, 100), encoding="utf-8", timeout=20
    )
    child.logfile_read = io.StringIO()
    child.expect("Paste the error")
    child.expect_exact("\x1b[?2004h")
    child.send(ENTER)
    child.expect("Describe")
    child.send("I call backward twice per step" + ENTER)
    child.expect(r"Enter\)")
    child.send(FIRST)
    child.expect(r"Enter\)")
    child.send(FIRST)
    child.expect("read from your description")  # the fix rests on the description: asked back
    child.expect("Is that right")
    child.send(ENTER)
    child.expect("full report")
    child.send("n")
    child.expect("Markdown")
    child.send("n")
    child.expect("leaves")
    child.send("is the zero-loss trick safe?" + ENTER)
    child.expect("Source: ddp-doctor's rules for the fix")  # the answer, with where it is from
    child.expect("leaves")
    child.send(ENTER)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_a_still_fails_statement_after_the_report_is_a_detail_that_re_ranks():
    keys = (
        TO_THE_REPORT_EN
        + "I already set find_unused_parameters=True and still get the same error"
        + ENTER
        + AFTER_UPDATE
        + ENTER
    )
    code, screen = drive(keys, "en")
    assert code == 0, screen[-1500:]
    after = screen.split("Most likely:", 1)[1]
    assert "Updated report:" in after  # the flag is now known to be on: the report changes


@pytest.mark.parametrize(
    ("lang", "detail"), [("en", "I use Lightning"), ("zh", "其实我用的是 PyTorch Lightning")]
)
def test_after_i_use_lightning_the_first_fix_is_lightning_code_and_can_be_saved(
    lang, detail, tmp_path
):
    """Issue 22, item 20: two backward calls, then "I use Lightning": the first fix is the
    Lightning spelling (one loss returned from `training_step`, or `manual_backward`), and
    the updated report is offered for saving."""
    report = tmp_path / "updated.md"
    keys = (
        (TO_THE_REPORT_EN if lang == "en" else TO_THE_REPORT_ZH)
        + detail
        + ENTER
        + "n"  # not the full report
        + "y"  # save the updated one
        + "\x15"  # clear the default name
        + str(report)
        + ENTER
        + ENTER
    )
    code, screen = drive(keys, lang)
    assert code == 0, screen[-1500:]
    updated = screen.split({"en": "Updated report:", "zh": "更新后的报告："}[lang], 1)[1]
    first_fix = updated.split({"en": "Fix 1", "zh": "修复方案 1"}[lang], 1)[1][:1200]
    assert "def training_step(self, batch, batch_idx):" in first_fix
    assert "return loss1 + loss2" in first_fix and "self.manual_backward(" in first_fix
    assert "DistributedDataParallel(" not in first_fix
    saved = report.read_text(encoding="utf-8")
    assert "return loss1 + loss2" in saved
