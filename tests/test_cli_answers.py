"""The interview without a terminal: `--answers`, `ask` and `questions`, through the installed CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ddp_doctor.knowledge.kb import load

KB = load()
FIXTURES = Path(__file__).parent / "fixtures"
CLI = Path(sys.executable).with_name("ddp-doctor")


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    if not CLI.exists():
        pytest.skip("ddp-doctor is not installed in this environment (pip install -e .)")
    env = {**os.environ, "DDP_DOCTOR_LANG": "en", "NO_COLOR": "1"}
    return subprocess.run(
        [str(CLI), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=env,
    )


def top_cause(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["causes"][0]["id"]


@pytest.mark.parametrize(
    ("answers", "cause"),
    [
        ("step_pattern: backward_many\nbackward_from_intermediate: 'yes'\n", "multiple_backward"),
        ("step_pattern: several_losses\nall_losses_summed: 'no'\n", "multitask_missing_loss"),
        ("step_pattern: none\nframework: pytorch\n", "unused_module"),
        ("requires_grad_changed: yes\n", "frozen_params"),  # a bare YAML yes works too
    ],
)
def test_answers_file_gives_the_right_cause(tmp_path, answers, cause):
    path = tmp_path / "answers.yaml"
    path.write_text(answers, encoding="utf-8")
    assert top_cause(run("--answers", str(path), "--json")) == cause


def test_answers_with_a_paste_use_the_module_it_names(tmp_path):
    fixture = FIXTURES / "real" / "unused_forward_output__info__spawn.txt"
    if not fixture.is_file():
        pytest.skip("real fixture not captured")
    answers = tmp_path / "answers.yaml"
    answers.write_text("revealed_module:aux_head: output_ignored\nframework: lightning\n")
    proc = run("--answers", str(answers), "--paste", str(fixture), "--json")
    data = json.loads(proc.stdout)
    assert top_cause(proc) == "unused_forward_output"
    assert data["framework"] == "lightning"
    assert data["answers"]["revealed_module:aux_head"] == "output_ignored"
    # the snippets speak of the user's module, not a stand-in (removing it is advice once
    # the user says it is never called)
    answers.write_text("revealed_module:aux_head: not_called\nframework: pytorch\n")
    data = json.loads(run("--answers", str(answers), "--paste", str(fixture), "--json").stdout)
    shown = data["fixes"] + data["conditional_fixes"]
    assert any("model.aux_head" in fix["snippet"] for fix in shown)


def test_answers_as_markdown_in_chinese(tmp_path):
    answers = tmp_path / "answers.yaml"
    answers.write_text("step_pattern: backward_many\n")
    proc = run("--answers", str(answers), "--format", "markdown", "--lang", "zh")
    assert proc.returncode == 0, proc.stderr
    assert "一个迭代里调用了两次（或更多次）" in proc.stdout
    assert "```python" in proc.stdout


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        ("我在一个循环里调用了两次 backward", "multiple_backward"),
        ("I call backward twice per step", "multiple_backward"),
        ("my loss only uses the first output of forward", "unused_forward_output"),
        ("多任务训练，忘了加其中一个 loss", "multitask_missing_loss"),
    ],
)
def test_ask_turns_a_sentence_into_a_diagnosis(text, cause):
    assert top_cause(run("ask", text, "--json")) == cause


def test_ask_that_understands_nothing_says_how_to_go_on():
    proc = run("ask", "hello there")
    assert proc.returncode == 1
    assert "ddp-doctor" in proc.stdout


def test_questions_lists_ids_and_option_values():
    proc = run("questions", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {row["id"]: row for row in json.loads(proc.stdout)}
    assert set(rows) == {q.id for q in KB.questions}
    for question in KB.questions:
        values = [o["value"] for o in rows[question.id]["options"]]
        assert values == [o.value for o in question.options]
        assert "unsure" in values or question.kind == "text"
    assert rows["revealed_module"]["per_module"] is True
    plain = run("questions", "--lang", "zh")
    assert "每个训练 step 调用几次 `backward()`？" in plain.stdout


@pytest.mark.parametrize(
    "answers",
    ["no_such_question: 'yes'\n", "backward_calls: seven\n"],
    ids=["unknown-id", "unknown-value"],
)
def test_unknown_answers_are_a_usage_error(tmp_path, answers):
    path = tmp_path / "answers.yaml"
    path.write_text(answers)
    proc = run("--answers", str(path))
    assert proc.returncode == 2
    bad = answers.split(":")[0] if "no_such" in answers else "backward_calls=seven"
    assert bad in proc.stderr
    assert "ddp-doctor questions" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_without_a_terminal_the_interview_refuses_with_a_hint():
    proc = run()
    assert proc.returncode == 5
    assert "triage" in proc.stderr and "--answers" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_answer_outranks_the_saved_description(tmp_path):
    """A saved session's `said:` read as "no checkpointing", then "checkpointing is on": the
    replay treats checkpointing as on, as the session did (the answer wins)."""
    answers = tmp_path / "a.yaml"
    answers.write_text(
        'said: "I do not use gradient checkpointing in this model"\nstep_pattern: checkpointing\n',
        encoding="utf-8",
    )
    proc = run("--answers", str(answers), "--json", "--lang", "en")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert "gradient_checkpointing" in [c["id"] for c in report["causes"]][:2]
    assert "find_unused_parameters" not in [f["id"] for f in report["fixes"]]


@pytest.mark.parametrize(
    "said",
    [
        "find_unused_parameters=True is on and PyTorch says it did not find any unused "
        "parameters; one layer runs on even steps only.",
        "开了 find_unused_parameters=True，PyTorch 说没找到未使用的参数；有一层只在偶数 step 执行。",
    ],
)
def test_the_warning_told_in_words_is_the_error_diagnosed(tmp_path, said):
    """A text that tells PyTorch's warning in words, not the reduction error, is diagnosed as
    that warning: with a branch on some steps, turning the flag off (the warning's usual fix)
    is warned against, and a truthful user is led to keeping it, by `ask` and by the replay of
    a saved description alike."""
    asked = json.loads(run("ask", said, "--json", "--lang", "en").stdout)
    answers = tmp_path / "a.yaml"
    answers.write_text(f"said: {json.dumps(said, ensure_ascii=False)}\nbackward_calls: one\n")
    replayed = json.loads(run("--answers", str(answers), "--json", "--lang", "en").stdout)
    for report in (asked, replayed):
        assert report["family"] == "unused_params_warning"
        assert "disable_find_unused" in [w["id"] for w in report["warnings"]]
        assert "disable_find_unused" not in [f["id"] for f in report["fixes"]]
    assert [f["id"] for f in replayed["fixes"]] == ["keep_find_unused"]


def test_a_pasted_error_outranks_the_warning_told_in_words(tmp_path):
    """The log says which error it is better than a sentence about it: a description naming
    the warning beside a pasted reduction error keeps the error's family."""
    fixture = FIXTURES / "versions" / "torch_1_10_flag_on.txt"
    answers = tmp_path / "a.yaml"
    answers.write_text('said: "PyTorch says it did not find any unused parameters"\n')
    proc = run("--answers", str(answers), "--paste", str(fixture), "--json")
    assert json.loads(proc.stdout)["family"] == "unfinished_reduction"


def test_a_said_reading_the_fix_rests_on_is_named_until_it_is_answered(tmp_path):
    """`said:` read as "backward twice", and the fix rests on it: the report names that reading
    and the line to add; once the file answers the question itself, nothing is left to name."""
    read_only = tmp_path / "read.yaml"
    read_only.write_text("said: two backward calls per step\nbackward_layout: shared\n")
    answered = tmp_path / "answered.yaml"
    answered.write_text(
        "said: two backward calls per step\nbackward_calls: many\nbackward_layout: shared\n"
    )
    report = json.loads(run("--answers", str(read_only), "--json").stdout)
    assert report["fixes"], report
    assert [(r["id"], r["answer"]) for r in report["rests_on"]] == [("backward_calls", "many")]
    shown = run("--answers", str(read_only), "--format", "markdown").stdout
    question = KB.question("backward_calls").text.en
    assert shown.startswith("The fix below rests on this reading of `said`: " + question)
    assert "add `backward_calls:`" in shown.split("# ddp-doctor")[0]
    assert json.loads(run("--answers", str(answered), "--json").stdout)["rests_on"] == []
    assert "rests on" not in run("--answers", str(answered), "--format", "markdown").stdout


def test_i_dont_know_to_a_question_the_said_text_answered_takes_the_reading_away(tmp_path):
    """A reading asked back and rejected, then "I don't know" (as a saved session keeps it):
    the replay no longer treats `backward()` as called twice, so the fix that rested on it is
    no longer given unconditionally, and the cause stays only possible."""
    answers = tmp_path / "a.yaml"
    answers.write_text("said: two backward calls per step\nbackward_calls: unsure\n")
    report = json.loads(run("--answers", str(answers), "--json").stdout)
    assert "backward_calls" not in report["facts"], report["facts"]
    assert "sum_losses_single_backward" not in [f["id"] for f in report["fixes"]]
    assert "multiple_backward" in report["plausible_causes"]
    assert len(report["plausible_causes"]) > 1  # no longer the one cause the reading made it
