"""Hostile or odd `--answers` files (issue 15.9): a clear one-line error and exit code 3,
never a traceback, a RecursionError or a hang. Driven through the installed CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CLI = Path(sys.executable).with_name("ddp-doctor")
EXIT_INPUT = 3


def run(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    if not CLI.exists():
        pytest.skip("ddp-doctor is not installed in this environment (pip install -e .)")
    env = {**os.environ, "DDP_DOCTOR_LANG": "en", "NO_COLOR": "1"}
    return subprocess.run(
        [str(CLI), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def assert_refused(proc: subprocess.CompletedProcess, path: Path, words: str) -> None:
    assert proc.returncode == EXIT_INPUT, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and words in lines[0], proc.stderr
    if proc.args[-1] == "--json":  # a script still reads one JSON document: the error's
        error = json.loads(proc.stdout)["error"]
        assert error["exit_code"] == EXIT_INPUT and lines[0].endswith(error["message"])
    else:
        assert proc.stdout == ""


def test_deeply_nested_answers_are_refused_without_recursion(tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_text("backward_calls: " + "[" * 20000 + "]" * 20000 + "\n")
    assert_refused(run("--answers", str(path), "--json"), path, "mapping of question id")


def test_an_alias_bomb_is_refused_at_once(tmp_path):
    # nine levels of nine aliases: about 400 bytes that stringify to 9**9 items
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    assert len(path.read_bytes()) < 1024
    assert_refused(run("--answers", str(path), "--json", timeout=20), path, "mapping")


def test_a_list_as_an_answer_is_refused(tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text("backward_calls: [many, once]\n")
    assert_refused(run("--answers", str(path), "--json"), path, "mapping of question id")


def test_a_huge_answers_file_is_refused(tmp_path):
    path = tmp_path / "huge.yaml"
    path.write_text("# padding\n" * 200_000)
    assert_refused(run("--answers", str(path), "--json"), path, "larger than")


def test_a_fifo_with_no_writer_does_not_hang(tmp_path):
    fifo = tmp_path / "answers.fifo"
    os.mkfifo(fifo)
    proc = run("--answers", str(fifo), "--json", timeout=20)
    assert proc.returncode == 0, proc.stderr  # an empty answers file: no answers, a report
    assert json.loads(proc.stdout)["causes"]  # the report came, nothing waited for a writer


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash for <(...)")
def test_the_reproduce_commands_process_substitution_works():
    if not CLI.exists():
        pytest.skip("ddp-doctor is not installed")
    script = f"{CLI} --json --answers <(echo '{{step_pattern: backward_many, backward_from_intermediate: yes}}')"
    proc = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["causes"][0]["id"] == "multiple_backward"


def test_what_the_user_typed_is_read_again_in_the_sessions_order(tmp_path):
    """A saved session keeps the lines whose facts no answer says alone: `said` (the
    description) is read before the answers, `said_later` (a detail typed after the report)
    after them, so a later detail wins over an earlier answer, as it did in the session."""
    before = tmp_path / "before.yaml"
    before.write_text(
        'said: "some GPUs skip the branch depending on their data"\n', encoding="utf-8"
    )
    doc = json.loads(run("--answers", str(before), "--json").stdout)
    assert doc["facts"]["conditional_modules"] == "ranks"
    assert doc["causes"][0]["id"] == "conditional_branch"
    assert "said" not in doc["answers"]  # typed text, not an answer to a question

    later = tmp_path / "later.yaml"
    later.write_text(
        "requires_grad_changed: 'no'\n"
        "said_later: actually I freeze the backbone after wrapping the model in DDP\n",
        encoding="utf-8",
    )
    doc = json.loads(run("--answers", str(later), "--json").stdout)
    assert doc["facts"]["requires_grad_changed"] is True
    assert doc["causes"][0]["id"] == "frozen_params"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash for <(...)")
def test_the_reproduce_command_carries_a_typed_sentence_whole():
    """A sentence with quotes, commas and colons survives the one-line command."""
    from ddp_doctor.output.reproduce import reproduce_command

    if not CLI.exists():
        pytest.skip("ddp-doctor is not installed")
    said = 'it\'s "odd": some GPUs skip the branch, depending on their data'
    command = reproduce_command("en", {"said": said, "step_pattern": "branches"})
    script = command.replace("ddp-doctor", str(CLI), 1) + " --json"
    proc = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["facts"]["conditional_modules"] == "ranks"
    assert doc["answers"] == {"step_pattern": "branches"}


@pytest.mark.parametrize(
    "description",
    [
        "some GPUs skip the branch depending on their data",
        "I already set find_unused_parameters=True",
        "同一个 batch 先前向两次再反向一次，BatchNorm 在判别器里",
        "my loss only uses the first output of forward",
    ],
)
def test_a_saved_sessions_answers_give_its_diagnosis_again(tmp_path, description):
    """The session's state after a description and two answers, saved as the session saves
    it, gives the same causes and fixes through `--answers` (README: the saved file
    "reproduces the diagnosis"); before, a description whose facts no answer says alone was
    dropped from the file."""
    import yaml
    from ddp_doctor.knowledge.kb import load
    from ddp_doctor.talk.answers import answers_for_file
    from ddp_doctor.talk.interview import Interview

    kb = load()
    state = Interview.start(kb)
    state.describe(description)
    for _ in range(2):
        asked = state.next_question()
        if asked is None:
            break
        state.answer(asked, asked.question.options[-1].value)  # "I don't know" is last
    session = state.diagnose()
    path = tmp_path / "report.answers.yaml"
    answers = answers_for_file(
        kb, state.text_facts, state.answers, state.description, state.said_later
    )
    path.write_text(yaml.safe_dump(answers, allow_unicode=True), encoding="utf-8")
    doc = json.loads(run("--answers", str(path), "--json").stdout)
    assert [c["id"] for c in doc["causes"]] == [c.cause.id for c in session.causes][:3]
    assert [f["id"] for f in doc["fixes"]] == [f.fix.id for f in session.fixes]
