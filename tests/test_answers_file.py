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
