"""Input manners in the interactive session (issue 22, items 12, 13, 14, 17).

Driven as in test_session.py: in-process through prompt_toolkit's pipe input, or the
installed `ddp-doctor` under a pseudo-terminal (pexpect) where the terminal's own behaviour
(typed-ahead keys, pastes without bracket marks) matters.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from ddp_doctor.common.wrap import text_width
from ddp_doctor.talk.session import run_session
from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output.vt100 import Vt100_Output
from rich.console import Console
from test_session import (
    CLI,
    DOWN,
    ENTER,
    KB,
    ROOT,
    drive,
    finish,
    honest_script,
    paste,
    spawn,
    triage_text,
    wait_for_paste_prompt,
)

EXAMPLE = ROOT / "examples" / "torchrun-unused-module.log"


def printed_command(screen: str) -> str:
    return next(line.strip() for line in screen.splitlines() if " --answers " in line)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_same_diagnosis_command_works_as_printed_after_declining_to_save(tmp_path, lang):
    """Item 17: a paste naming a module, a per-module answer, no save: the printed command
    (which cannot name the paste: it is in no file) must run, not exit 2."""
    if not CLI.exists():
        pytest.skip("ddp-doctor is not installed in this environment (pip install -e .)")
    text = EXAMPLE.read_text(encoding="utf-8")
    result, script, facts = honest_script(text, {"revealed_module_state": "not_called"})
    assert any(":" in asked.key for asked, _ in script)  # a per-module question was asked
    code, screen = drive(paste(text) + "".join(k for _, k in script) + "nn", lang)
    assert code == 0, screen
    command = printed_command(screen)
    assert "--paste" not in command
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(
        ["bash", "-c", command + " --json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    # the module answer was applied: the cause it speaks for leads, as in the session
    assert data["causes"][0]["id"] == "unused_module"
    # and with the error saved to a file, the same command plus --paste still works
    log = tmp_path / "error.txt"
    log.write_text(text, encoding="utf-8")
    proc = subprocess.run(
        ["bash", "-c", f"{command} --paste {log} --json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["causes"][0]["id"] == "unused_module"


# ---------------------------------------------------------------------------- item 12


def questions_after(text: str, first_value_index: int):
    """The first question after this paste, and how many follow when it is answered with
    its option at `first_value_index` and every later one with its first option."""
    from ddp_doctor.reasoning import engine

    result = triage_text(KB, text)
    facts, answered = dict(result.facts), []
    first = None
    while asked := engine.next_question(KB, facts, answered, result.unused_modules, len(answered)):
        index = first_value_index if first is None else 0
        first = first or asked
        facts = engine.apply_answer(facts, asked, asked.options[index].value)
        answered.append(asked.key)
    return first, len(answered) - 1


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_pty_a_stray_enter_answers_no_question(lang, tmp_path):
    """The Enter copied or pressed after a paste is not an answer, nor is an Enter pressed
    before moving: the first question is answered only by what the user chose."""
    text = EXAMPLE.read_text(encoding="utf-8")
    asked, later = questions_after(text, 1)
    child = spawn("--lang", lang, width=200, cwd=tmp_path)
    wait_for_paste_prompt(child, {"en": "Paste the error", "zh": "把报错粘贴进来"}[lang])
    child.send(paste(text) + ENTER)  # the paste (ending in a newline) and a stray Enter
    hint = KB.messages["session_select_hint"].get(lang)
    child.expect_exact(hint)
    child.send(ENTER)  # Enter before choosing: nothing is answered, the hint says so
    child.expect_exact({"en": "nothing is chosen", "zh": "还没有选择"}[lang])
    child.send(DOWN + DOWN + ENTER)  # the second option
    for _ in range(later):
        child.expect_exact(hint)
        child.send(DOWN + ENTER)
    child.expect({"en": "full report", "zh": "完整报告"}[lang])
    child.send("n")
    child.expect({"en": "Markdown", "zh": "保存成 Markdown"}[lang])
    child.send("n")
    child.expect({"en": "leaves", "zh": "直接按回车退出"}[lang])
    child.send(ENTER)
    code, screen = finish(child)
    assert code == 0, screen[-2000:]
    command = printed_command(screen)
    assert f"{asked.key}: {asked.options[1].value}" in command, command


# ---------------------------------------------------------------------------- item 14

ANSI_ALL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[()][0-9A-B]|\x1b[=>]")


def answered_echo(keys: str, lang: str, width: int) -> tuple[str, list[str]]:
    """The question's last frame as a `width`-column terminal shows it: the question and its
    echoed answer, one string per screen line."""
    buffer = io.StringIO()
    output = Vt100_Output(buffer, lambda: Size(rows=40, columns=width), term="xterm")
    with create_pipe_input() as pipe:
        pipe.send_text(keys)
        pipe.close()
        console = Console(file=io.StringIO(), width=width, color_system=None)
        run_session(KB, lang, console=console, prompt_input=pipe, prompt_output=output)
    # the first question's last frame, up to the second question (where Ctrl-C leaves)
    frame = "1. " + ANSI_ALL.sub("", buffer.getvalue()).split("1. ")[-1].split("2. ")[0]
    return frame, frame.split("\r\n")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_long_question_and_its_answer_wrap_on_words_at_80_columns(lang):
    step = KB.question("step_pattern")
    longest = max(range(len(step.options)), key=lambda i: len(step.options[i].label.get(lang)))
    keys = ENTER + ENTER + DOWN * (longest + 1) + ENTER + "\x03"  # no paste, no description
    frame, lines = answered_echo(keys, lang, 80)
    question, answer = step.text.get(lang), step.options[longest].label.get(lang)
    lines = [line.rstrip() for line in lines if line.strip()]
    assert len(lines) > 1  # it does not fit on one line at 80 columns
    assert all(text_width(line) <= 80 for line in lines), lines
    joined = " ".join(lines) if lang == "en" else "".join(lines)
    expected = f"1. {question} {answer}"
    if lang == "zh":  # a break between Chinese characters drops nothing; spaces may go
        joined, expected = joined.replace(" ", ""), expected.replace(" ", "")
    assert joined == expected, lines  # no character lost, and for English no word cut


# ---------------------------------------------------------------------------- item 19


def test_a_chinese_follow_up_answer_wraps_by_display_width():
    """The session's answer to a follow-up wraps as `ask` does: between Chinese characters,
    each line filling the width, none past it (it wrapped only at spaces: ragged lines)."""
    keys = (
        ENTER
        + "每个 step 调用了两次 backward"
        + ENTER
        + DOWN
        + ENTER
        + DOWN
        + ENTER
        + ENTER  # keeps the reading the fix rests on (backward is called more than once)
        + "nn"
        + "find_unused_parameters 有什么代价？"
        + ENTER
        + ENTER
    )
    code, screen = drive(keys, "zh", width=80)
    assert code == 0, screen[-1500:]
    answer = screen[screen.rfind("回答") :]
    # rich pads a line with spaces to the width: what the eye sees ends at the last character
    paragraphs = [[line.rstrip() for line in p.splitlines()] for p in answer.split("\n\n")]
    paragraphs = [p for p in paragraphs if any(p)]
    long = [p for p in paragraphs if len(p) > 1]
    assert long, answer  # the `why` text takes several lines at 80 columns
    for lines in paragraphs:
        assert all(text_width(line) <= 80 for line in lines), lines
    for lines in long:  # every line but a paragraph's last fills the width
        assert all(text_width(line) >= 76 for line in lines[:-1]), lines


# ---------------------------------------------------------------------------- item 13

UNBRACKETED = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 40, in <module>\n'
    "    out = model(x)\n"
    "RuntimeError: Expected to have finished reduction in the prior iteration before starting "
    "a new one. This error indicates that your module has parameters that were not used in "
    "producing loss.\n"
    "\n"
    "Parameters which did not receive grad for rank 0: aux_head.bias, aux_head.weight\n"
)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_pty_a_paste_without_bracket_marks_keeps_its_blank_lines(lang, tmp_path):
    """`tmux paste-buffer`, ssh, some terminals: the paste arrives as typed keys, a blank
    line inside it as a bare Enter. The lines after it arrive within milliseconds and belong
    to the paste; the Enter typed after it (a human's pause later) ends it."""
    child = spawn("--lang", lang, width=200, cwd=tmp_path)
    wait_for_paste_prompt(child, {"en": "Paste the error", "zh": "把报错粘贴进来"}[lang])
    child.send(UNBRACKETED.replace("\n", "\r"))  # one write, no bracket marks
    child.expect_exact("aux_head.weight")  # echoed as it arrives
    child.send(ENTER)  # the user's own empty line ends the paste
    found = {"en": "Found:", "zh": "识别到"}[lang]
    child.expect_exact(found)
    child.expect_exact(KB.messages["session_select_hint"].get(lang))
    child.sendcontrol("c")
    code, screen = finish(child)
    assert code == 130
    after = screen.split(found, 1)[1]
    names = KB.messages["session_found_names"].get(lang).split("{")[0].strip()
    assert names in after and "aux_head.bias, aux_head.weight" in after, after[:600]
