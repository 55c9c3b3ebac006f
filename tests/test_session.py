"""The interactive session, driven like a user: keys in, screen out.

In-process runs feed keys through prompt_toolkit's pipe input (as questionary's own tests
do) and read what rich printed; the pseudo-terminal runs start the installed `ddp-doctor`
under pexpect and read the screen. Keys: "\\r" Enter, "\\x1b[B" down, "\\x03" Ctrl-C,
"\\x04" Ctrl-D, "\\x15" Ctrl-U (clear the line); a terminal paste arrives bracketed.
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ddp_doctor.knowledge.kb import load
from ddp_doctor.output.render import build_report
from ddp_doctor.reading.triage import triage_text
from ddp_doctor.reasoning import engine

pytest.importorskip("questionary")
from ddp_doctor.talk.session import run_session  # noqa: E402
from helpers import cli  # noqa: E402
from prompt_toolkit.input import create_pipe_input  # noqa: E402
from prompt_toolkit.output import DummyOutput  # noqa: E402
from rich.console import Console  # noqa: E402

KB = load()
FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).resolve().parent.parent
CLI = Path(sys.executable).with_name("ddp-doctor")
ENTER, DOWN, UP, CTRL_C, CTRL_D, CTRL_U = "\r", "\x1b[B", "\x1b[A", "\x03", "\x04", "\x15"
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[()][0-9A-B]|\x1b[=>]")


def paste(text: str) -> str:
    """What a terminal sends when the user pastes `text`."""
    return "\x1b[200~" + text.replace("\n", "\r") + "\x1b[201~"


def fixture_text() -> str:
    real = FIXTURES / "real" / "two_backward_intermediate__info__spawn.txt"
    path = real if real.is_file() else FIXTURES / "versions" / "torch_1_10_flag_on.txt"
    return path.read_text(encoding="utf-8")


@pytest.fixture(autouse=True)
def _in_a_scratch_directory(tmp_path, monkeypatch):
    """A report saved under its default name lands here, never in the checkout."""
    monkeypatch.chdir(tmp_path)


def drive(keys: str, lang: str, width: int = 160, **kwargs) -> tuple[int, str]:
    """Run the session in-process with `keys` typed; returns (exit code, printed text)."""
    out = io.StringIO()
    console = Console(file=out, width=width, highlight=False, color_system=None)
    with create_pipe_input() as pipe:
        pipe.send_text(keys)
        pipe.close()  # keys run out -> EOF, so a wrong script ends (130) instead of hanging
        code = run_session(
            KB, lang, console=console, prompt_input=pipe, prompt_output=DummyOutput(), **kwargs
        )
    return code, out.getvalue()


def flat(text: str) -> str:
    """Panel text with borders and wrapping removed, for substring checks."""
    text = re.sub(r"[│╭╮╰╯─]", " ", text)
    return re.sub(r"\s+", " ", text)


def expected(facts: dict, lang: str):
    # the session assumes the default family when nothing was pasted; so does this
    facts = {"family": KB.engine.get("default_family", "unfinished_reduction"), **facts}
    report = build_report(KB, engine.diagnose(KB, None, facts), lang)
    return report.causes[0].title, report.fixes[0].code.splitlines()[0]


def option_index(question_id: str, value: str) -> int:
    return [o.value for o in KB.question(question_id).options].index(value)


def offered_index(question_id: str, value: str, facts: dict) -> int:
    """Where `value` stands in the list as the session shows it: options these facts deny, or
    whose `offer_when` they do not meet, are not on screen."""
    from ddp_doctor.reasoning.engine import contradicts

    options = KB.question(question_id).options
    return [o.value for o in options if not (o.sets and contradicts(o, facts))].index(value)


def choose(index: int) -> str:
    """The keys that answer a select with its option at `index`: nothing is pointed at until
    the user moves, so the first ↓ points at the first option (Enter alone answers nothing)."""
    return DOWN * (index + 1) + ENTER


FIRST = choose(0)


# ---------------------------------------------------------------------------- in-process


def test_english_path_without_a_paste_describe_answer_save(tmp_path):
    report = tmp_path / "report.md"
    keys = (
        ENTER  # no paste
        + "my loss only uses the first output of forward"
        + ENTER
        # an ignored output may be a task head whose loss is left out: asked before any fix;
        # then "return what the loss uses" is proven for an ignored output and for a loss
        # built from tensors forward does not return alike, so that is not asked
        + choose(option_index("multitask", "no"))
        + choose(option_index("framework", "lightning"))
        + ENTER  # the fix rests on the reading "an output the loss ignores": Enter keeps it
        + "y"  # the full report
        + "y"  # save
        + CTRL_U
        + str(report)
        + ENTER
    )
    code, screen = drive(keys, "en")
    assert code == 0, screen
    text = flat(screen)
    assert "Got it:" in text and "Does `forward` return outputs that the loss does not use?" in text
    asked_back = text.split("The fix depends on this, which I read from your description:")[1]
    assert asked_back.split("Is that right?")[0].strip().startswith("Does `forward` return")
    title, first_line = expected(
        {
            "forward_unused_outputs": True,
            "multitask": False,
            "framework": "lightning",
        },
        "en",
    )
    assert title.replace("`", "") in text
    assert "Likely causes" in text
    assert "ddp_find_unused_parameters_true" in text  # the Lightning spelling
    assert first_line.strip() in text
    # the report, the answers and a command that reproduces the same diagnosis
    assert report.read_text(encoding="utf-8").startswith("# ddp-doctor diagnosis")
    answers = yaml.safe_load((tmp_path / "report.answers.yaml").read_text(encoding="utf-8"))
    assert answers == {
        # the description, read again on replay: how near it is to each cause's reports (the
        # engine's `text_leans`) is no answer of the interview
        "said": "my loss only uses the first output of forward",
        "forward_unused_outputs": "yes",
        "multitask": "no",
        "framework": "lightning",
    }
    command = next(line.strip() for line in screen.splitlines() if "--answers" in line)
    argv = shlex.split(command)
    assert argv[:3] == ["ddp-doctor", "--lang", "en"]
    if CLI.exists():
        proc = subprocess.run(
            [str(CLI), *argv[1:], "--json"], capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, proc.stderr
        assert '"unused_forward_output"' in proc.stdout.split('"causes"')[1][:200]


# what is true of the seed article's own case (two backward calls, the first one from an
# intermediate feature map): the honest answers to whatever the engine asks
SEED_TRUTHS = {
    "revealed_module_state": "used",
    "backward_calls": "many",
    "backward_from_intermediate": True,
    "multitask": False,
    "framework": "pytorch",
}


def honest_script(text: str, truths: dict):
    """The questions the engine will ask after this paste, the keys that answer them
    honestly, and the facts at the end."""
    result = triage_text(KB, text)
    facts, answered, script = dict(result.facts), [], []
    while asked := engine.next_question(KB, facts, answered, result.unused_modules, len(answered)):
        value = next(
            (
                o.value
                for o in asked.options
                if o.sets and all(truths.get(k) == v for k, v in o.sets.items())
            ),
            engine.UNSURE,
        )
        script.append((asked, choose(option_index(asked.question.id, value))))
        facts = engine.apply_answer(facts, asked, value)
        answered.append(asked.key)
    assert len(script) <= 4
    return result, script, facts


def test_chinese_path_with_a_paste():
    text = fixture_text()
    result, script, facts = honest_script(text, SEED_TRUTHS)
    keys = paste(text)  # a paste that ends in a newline needs no Enter
    keys += "".join(k for _, k in script) + "n" + "n"  # answers; not the full report; no save
    code, screen = drive(keys, "zh")
    assert code == 0, screen
    shown = flat(screen)
    assert "识别到" in shown
    for module in result.unused_modules:
        assert module in shown
    title = KB.cause(engine.rank_causes(KB, facts)[0].id).title.zh
    assert title.replace("`", "") in shown
    assert "把多个 loss 加起来" in shown or "loss1 + loss2" in shown
    assert "ddp-doctor --lang zh --answers" in shown  # the reproduce hint, even unsaved


def test_an_answer_outranks_what_the_description_was_read_to_say():
    # the sentence reads as "no gradient checkpointing"; the user then picks "Gradient
    # checkpointing is on" from the training-step list: the answer wins, and the flag alone
    # (which fails with reentrant checkpointing) is not what the report leads with
    keys = (
        ENTER
        + "I do not use gradient checkpointing in this model"
        + ENTER
        + choose(option_index("step_pattern", "checkpointing"))
        + choose(option_index("framework", "pytorch"))
        + "n"  # not the full report
        + "n"  # not saved
    )
    code, screen = drive(keys, "en")
    assert code == 0, screen
    text = flat(screen)
    assert "Most likely: Reentrant gradient checkpointing" in text
    assert "Fix 1: Use non-reentrant gradient checkpointing: use_reentrant=False" in text


def test_back_undoes_the_last_answer():
    step = KB.question("step_pattern")
    keys = (
        ENTER
        + ENTER  # no paste, no description
        + choose(option_index("step_pattern", "backward_many"))
        # the next question: ↑ first points at its last entry, "back"
    )
    facts = engine.apply_answer(
        {"family": "unfinished_reduction"}, engine.AskedQuestion(step, step.id), "backward_many"
    )
    second = engine.next_question(KB, facts, [step.id], (), 1)
    assert second is not None
    keys += UP + ENTER
    keys += choose(option_index("step_pattern", "freezing"))
    # whatever follows (freeze or unfreeze, framework ...): the first option; no more, no save
    facts = engine.apply_answer(
        {"family": "unfinished_reduction"}, engine.AskedQuestion(step, step.id), "freezing"
    )
    answered = [step.id]
    while asked := engine.next_question(KB, facts, answered, (), len(answered)):
        facts = engine.apply_answer(facts, asked, asked.options[0].value)
        answered.append(asked.key)
        keys += FIRST
    keys += "nn"
    code, screen = drive(keys, "en")
    assert code == 0, screen
    shown = flat(screen)
    first = shown.split("Most likely:")[1].split("Also possible")[0]
    # the undone answer (two backward calls) is gone; the second answer decides
    assert KB.cause("frozen_params").title.en.replace("`", "") in first
    assert KB.cause("multiple_backward").title.en.replace("`", "") not in first


@pytest.mark.parametrize("key", [CTRL_C, CTRL_D], ids=["ctrl-c", "ctrl-d"])
@pytest.mark.parametrize("where", ["paste", "select", "save"])
def test_ctrl_c_and_ctrl_d_leave_with_130(key, where):
    # a confirm ignores ↓ and takes Enter as its default, so FIRST answers either kind
    before = {"paste": "", "select": ENTER + ENTER, "save": ENTER + ENTER + FIRST * 4}[where]
    code, screen = drive(before + key, "zh")
    assert code == 130
    assert "已退出" in screen
    assert "Traceback" not in screen


def test_ctrl_d_after_typed_lines_ends_the_paste():
    line = "RuntimeError: Expected to have finished reduction in the prior iteration before"
    result, script, _ = honest_script(line, SEED_TRUTHS)
    keys = line + ENTER + CTRL_D + "".join(k for _, k in script) + "n" + "n"
    code, screen = drive(keys, "en")
    assert code == 0, screen
    assert "Found:" in screen


def test_a_paste_without_a_final_newline_ends_with_one_enter():
    text = fixture_text().rstrip("\n")
    _, script, _ = honest_script(text, SEED_TRUTHS)
    code, screen = drive(paste(text) + ENTER + "".join(k for _, k in script) + "nn", "en")
    assert code == 0, screen
    assert "Found:" in screen and "Most likely:" in screen


def test_one_found_line_per_error_however_many_ranks_print_it():
    text = (ROOT / "examples" / "torchrun-unused-module.log").read_text(encoding="utf-8")
    result, script, _ = honest_script(text, SEED_TRUTHS)
    assert len(result.findings) > 1 and len({f.ranks for f in result.findings}) > 1
    code, screen = drive(paste(text) + "".join(k for _, k in script) + "nn", "en")
    assert code == 0, screen
    assert screen.count("Found:") == 1
    assert "(rank 0, 1)" in screen


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_paste_that_is_no_ddp_error_is_not_diagnosed_as_one(lang):
    oom = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 41, in <module>\n'
        "    loss = model(x).sum()\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; "
        "23.69 GiB total capacity; 21.1 GiB already allocated)\n"
    )
    code, screen = drive(paste(oom) + "n", lang)
    assert code == 1, screen
    said = {"en": "not a DDP error", "zh": "不是 DDP"}[lang]
    assert said in flat(screen)
    # and which exception it did raise, so the user sees what was read
    assert "torch.OutOfMemoryError: CUDA out of memory" in flat(screen)
    joined = re.sub(r"\s", "", screen)  # Chinese wraps between any two characters
    for family in KB.families:  # it says what it does know
        assert re.sub(r"[\s`]", "", family.title.get(lang)) in joined
    assert "assume" not in screen and "Likely" not in screen and "最可能" not in screen
    # or describe the problem instead
    keys = paste(oom) + "y" + "two backward calls per step" + ENTER + FIRST * 3 + "nn"
    code, screen = drive(keys, lang)
    assert {"en": "Most likely:", "zh": "最可能的原因："}[lang] in screen


def test_a_pasted_file_that_is_no_ddp_error_names_what_it_raised(tmp_path):
    log = tmp_path / "job.log"
    log.write_text(
        "step 10 loss 0.31\n[rank1]: RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:825, "
        "unhandled system error\n",
        encoding="utf-8",
    )
    code, screen = drive("n", "en", paste_path=str(log))
    assert code == 1, screen
    assert "[rank1]: RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:825" in flat(screen)


def test_a_narrow_console_still_renders_the_report():
    code, screen = drive(
        # describe, then the two selects (backward layout, framework), Enter keeps the reading
        # the fix rests on, then no full report, no save
        ENTER + "two backward calls per step" + ENTER + FIRST + FIRST + ENTER + "n" + "n",
        "en",
        width=40,
    )
    assert code == 0
    # the reproduce command and code are printed unwrapped on purpose, so they copy whole
    facts = {"family": "unfinished_reduction", "backward_calls": "many", "framework": "pytorch"}
    report = build_report(KB, engine.diagnose(KB, None, facts), "en")
    code = {line for v in report.fixes + report.diagnostics for line in v.code.splitlines()}
    lines = [
        line
        for line in screen.splitlines()
        if not line.strip().startswith("ddp-doctor ") and line.rstrip() not in code
    ]
    assert max(len(line) for line in lines) <= 40
    assert "backward" in screen and "Fix 1" in screen


# ---------------------------------------------------------------------------- a real terminal


def spawn(*args: str, width: int = 100, cwd=None):
    pexpect = pytest.importorskip("pexpect")
    if not CLI.exists():
        pytest.skip("ddp-doctor is not installed in this environment (pip install -e .)")
    env = {
        **os.environ,
        "PROMPT_TOOLKIT_NO_CPR": "1",
        "TERM": "xterm",
        "COLUMNS": str(width),
        "LINES": "40",
    }
    env.pop("NO_COLOR", None)
    child = pexpect.spawn(
        str(CLI),
        list(args),
        env=env,
        dimensions=(40, width),
        encoding="utf-8",
        timeout=20,
        cwd=str(cwd) if cwd else os.getcwd(),
    )
    child.logfile_read = io.StringIO()
    return child


def wait_for_paste_prompt(child, message: str) -> None:
    """The message, then prompt_toolkit switching bracketed paste on: keys typed from now on
    reach the prompt (a Ctrl-D sent earlier would be eaten by the terminal's cooked mode)."""
    child.expect_exact(message)
    child.expect_exact("\x1b[?2004h")


def finish(child) -> tuple[int, str]:
    child.expect(__import__("pexpect").EOF)
    child.close()
    screen = ANSI.sub("", child.logfile_read.getvalue())
    return child.exitstatus, screen


def test_pty_chinese_paste_answer_and_report(tmp_path):
    text = fixture_text()
    result, script, facts = honest_script(text, SEED_TRUTHS)
    child = spawn("--lang", "zh", cwd=tmp_path)
    wait_for_paste_prompt(child, "把报错粘贴进来")
    child.send(paste(text))  # it ends in a newline: no Enter needed
    child.expect("识别到")
    for asked, keys in script:
        question = asked.question.text.zh.format(**asked.fields)
        child.expect_exact(question.split("`")[-1][-8:])  # the end of the question text
        child.expect_exact("（↑↓ 选择，回车确认）")
        child.send(keys)
    child.expect("完整报告")
    child.send("n")
    child.expect("保存成 Markdown")
    child.send("n")
    child.expect("直接按回车退出")  # the follow-up prompt: Enter alone leaves
    child.send(ENTER)
    code, screen = finish(child)
    assert code == 0, screen[-2000:]
    assert "Traceback" not in screen
    shown = flat(screen)
    assert "可能的原因" in shown and "修复方案 1" in shown
    top = engine.rank_causes(KB, facts)[0].id
    assert top == "multiple_backward"
    assert KB.cause(top).title.zh.replace("`", "") in shown
    assert "loss1 + loss2" in shown  # the rewrite: one backward over the summed losses
    assert "ddp-doctor --lang zh --answers" in shown


def test_pty_ctrl_c_at_a_select_and_ctrl_d_at_the_paste():
    child = spawn("--lang", "en")
    child.expect("Paste the error")
    child.send(ENTER)
    child.expect("Describe the problem")
    child.send(ENTER)
    child.expect(r"\(↑↓ and Enter\)")
    child.sendcontrol("c")
    code, screen = finish(child)
    assert code == 130 and "Stopped." in screen and "Traceback" not in screen

    child = spawn("--lang", "zh")
    wait_for_paste_prompt(child, "把报错粘贴进来")
    child.sendcontrol("d")
    code, screen = finish(child)
    assert code == 130 and "已退出" in screen and "Traceback" not in screen


def test_pty_forty_columns():
    child = spawn("--lang", "en", width=40)
    child.expect("Paste the error")
    child.send(ENTER)
    child.expect("Describe")
    child.send("I call backward twice per step" + ENTER)
    child.expect(r"Enter\)")  # do the backward() calls share one forward?
    child.send(FIRST)
    child.expect(r"Enter\)")  # framework
    child.send(FIRST)
    child.expect("Is that right")  # "backward is called more than once", read from the sentence
    child.send(ENTER)
    child.expect("full report")
    child.send("y")
    child.expect("Markdown")
    child.send("n")
    child.expect("leaves")  # the follow-up prompt: Enter alone leaves
    child.send(ENTER)
    code, screen = finish(child)
    assert code == 0 and "Traceback" not in screen
    assert "Likely causes" in screen and "Fix 1" in screen and "loss1 + loss2" in screen


def test_a_warning_with_several_losses_is_asked_on_until_a_fix_not_left_at_it_depends():
    """The unused-parameter warning (the flag found nothing unused), and several losses: the
    likeliest cause leads clearly, yet no fix is proven for the others, and the session used
    to ask the framework and stop on "It depends". It now asks the question the table would
    name, then the next, and a user with one summed loss, one backward() and no ignored output
    or branch ends with "turn the flag off": after "every loss is in the total", in one more
    answer (the rest of the training-step list: none of it) and the framework, where a question
    per cause took three and left no answer for the framework."""
    warning = FIXTURES / "real" / "corpus" / "peft-2308.txt"
    keys = (
        choose(option_index("step_pattern", "several_losses"))
        + choose(option_index("all_losses_summed", "yes"))
        + choose(offered_index("step_pattern_more", "none", {"family": "unused_params_warning"}))
        + choose(option_index("framework", "pytorch"))  # asked now that answers are left
        + "n"  # no full report
        + "n"  # not saved
        + ENTER  # no follow-up
    )
    code, screen = drive(keys, "en", paste_path=str(warning))
    assert code == 0, screen
    text = flat(screen)
    # the help line shown with "Does every task's loss go into the total ...?"
    assert "Check the line that builds the total" in text
    assert "Fix 1: Turn find_unused_parameters back off" in text, text[-3000:]
    assert "It depends on your code" not in text


def test_a_module_named_in_the_description_is_said_and_used_in_the_code():
    keys = (
        ENTER  # no paste
        + "I unfreeze `body` at epoch 5, after wrapping the model in DDP"
        + ENTER
        + choose(option_index("framework", "pytorch"))
        + ENTER  # yes, the parameters' requires_grad changes during training, as read
        + "y"  # the full report
        + "n"  # no save
        + ENTER  # no follow-up
    )
    code, screen = drive(keys, "en")
    assert code == 0, screen
    text = flat(screen)
    assert "the module you named: `body`" in text
    assert "model.body.requires_grad_(False)" in text and "YOUR_MODULE" not in text


ASKED_BACK = {
    "en": "The fix depends on this, which I read from your description:",
    "zh": "修复方法取决于下面这一点，这是我从你的描述里读出来的：",
}


@pytest.mark.parametrize(
    "lang, story",
    [
        ("en", "I use PyTorch Lightning and call backward twice per step"),
        ("zh", "我用的是 PyTorch Lightning，每个 step 调用了两次 backward"),
    ],
)
def test_the_reading_a_fix_rests_on_is_asked_back_and_enter_keeps_it(lang, story):
    """Two things read from the sentence; the fix rests only on "backward twice" (the
    framework changes its spelling, not which fix): that one is asked back before the report,
    and Enter keeps it."""
    keys = (
        ENTER
        + story
        + ENTER
        + choose(option_index("backward_layout", "shared"))
        + ENTER  # yes, as read
        + "n"  # no full report
        + "n"  # not saved
        + ENTER  # no follow-up
    )
    code, screen = drive(keys, lang)
    assert code == 0, screen
    text = flat(screen)
    asked_back = text.split(ASKED_BACK[lang])[1].split("✗")[0]
    backward = KB.question("backward_calls")
    many = next(o for o in backward.options if o.value == "many")
    assert f"{backward.text.get(lang)} → {many.label.get(lang)}" in asked_back
    assert KB.question("framework").text.get(lang) not in asked_back
    summed = KB.fixes["sum_losses_single_backward"].title.get(lang).replace("`", "")
    assert summed in text.split(ASKED_BACK[lang])[1].replace("`", "")


def test_no_to_a_reading_asks_its_question_and_the_report_follows_the_true_answer(tmp_path):
    """A reading the user says is wrong is not advised on: its question is asked, and the
    interview goes on from the true answer (one backward(), a module never called), which the
    saved answers keep."""
    keys = (
        ENTER
        + "two backward calls per step"
        + ENTER
        + choose(option_index("backward_layout", "shared"))
        + choose(option_index("framework", "pytorch"))
        + "n"  # not what I meant
        + choose(option_index("backward_calls", "one"))
        + choose(option_index("module_never_called", "yes"))
        + "n"  # no full report
        + "y"  # save
        + CTRL_U
        + str(tmp_path / "report.md")
        + ENTER
        + ENTER  # no follow-up
    )
    code, screen = drive(keys, "en")
    assert code == 0, screen
    text = flat(screen).replace("`", "")
    after = text.split(ASKED_BACK["en"])[1]
    summed = KB.fixes["sum_losses_single_backward"].title.en.replace("`", "")
    assert summed not in after
    assert "Fix 1: " + KB.fixes["remove_unused_module"].title.en.replace("`", "") in after
    answers = yaml.safe_load((tmp_path / "report.answers.yaml").read_text(encoding="utf-8"))
    assert answers["backward_calls"] == "one"


READY_TWICE = (
    "I get RuntimeError: Expected to mark a variable ready only once, "
    "after I turned on gradient checkpointing"
)


def test_an_error_quoted_in_the_description_is_the_one_diagnosed():
    """No paste, the error typed into the description: the session says it found that error
    (not the usual one it assumes when nothing was pasted) and asks about it."""
    _, screen = drive(ENTER + READY_TWICE + ENTER, "en")
    text = flat(screen)
    title = KB.family("mark_ready_twice").title.get("en").replace("`", "")
    assert f"Found: {title}" in text.replace("`", ""), text


OOM_STORY = "Training stops with torch.OutOfMemoryError: CUDA out of memory, what can I do?"


@pytest.mark.parametrize("go_on", [False, True], ids=["stop", "go on"])
def test_a_description_quoting_another_error_says_so_before_any_question(go_on):
    """No paste, and the description quotes an exception that is no DDP error: the session
    names it as one it cannot diagnose instead of asking about the usual error; the user may
    still go on with those questions."""
    keys = ENTER + OOM_STORY + ENTER + ("y" if go_on else "n")
    code, screen = drive(keys + CTRL_C, "en")
    text = flat(screen)
    assert "quoted, torch.OutOfMemoryError: CUDA out of memory, is not one ddp-doctor" in text
    asked = KB.question("step_pattern").help.get("en")  # printed above the first question
    if go_on:
        assert asked in text, text
    else:
        assert code == 1 and asked not in text, text
        assert "Nothing to diagnose" in text


def test_a_description_quoting_another_errors_message_without_its_name_says_so():
    """The same for another error's own message typed without the exception's name (as an
    issue's title gives it): named, not taken for the usual DDP error."""
    story = "Default process group has not been initialized, please make sure to call it"
    code, screen = drive(ENTER + story + ENTER + "n" + CTRL_C, "en")
    text = flat(screen)
    assert "Default process group has not been initialized" in text
    assert "is not one ddp-doctor" in text and code == 1, text


def test_after_a_paste_of_another_error_the_description_is_not_asked_about_twice():
    """The user pasted the OOM error and chose to describe the problem instead: a description
    that names the same exception again goes straight on to the questions."""
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    keys = paste(oom) + "y" + OOM_STORY + ENTER
    _, screen = drive(keys + CTRL_C, "en")
    text = flat(screen)
    assert "is not one ddp-doctor can diagnose" not in text, text
    assert KB.question("step_pattern").help.get("en") in text, text


def test_an_answers_file_whose_description_quotes_the_error_diagnoses_it(tmp_path):
    answers = tmp_path / "answers.yaml"
    answers.write_text(yaml.safe_dump({"said": READY_TWICE}), encoding="utf-8")
    report = json.loads(cli("--answers", str(answers), "--json").out)
    assert report["family"] == "mark_ready_twice"
    assert report["causes"][0]["id"] in {"gradient_checkpointing", "multiple_backward"}
