"""Closed, full and abandoned standard streams (issue 15.7): the installed CLI under a real
shell's `>&-`, `2>&-`, `0<&-`, `> /dev/full` and `| head`. A clear line, a documented exit
code, never a traceback; `run` still starts the job and keeps the job's exit code."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import FIXTURES, ROOT

CONSOLE_SCRIPT = Path(sys.executable).parent / "ddp-doctor"
WRAPPER = [str(CONSOLE_SCRIPT)] if CONSOLE_SCRIPT.exists() else [sys.executable, "-m", "ddp_doctor"]
LOG = ROOT / "examples" / "torchrun-unused-module.log"
FLAG_ON_ERROR = FIXTURES / "versions" / "torch_1_10_flag_on.txt"


def shell(command: str, timeout: int = 120) -> subprocess.CompletedProcess:
    """Run `command` in bash with `$DD` as the installed ddp-doctor; output as text."""
    env = {k: v for k, v in os.environ.items() if k not in ("DDP_DOCTOR_LANG", "LANGUAGE")}
    env["DD"] = " ".join(shlex.quote(part) for part in WRAPPER)
    return subprocess.run(
        ["bash", "-c", command],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=timeout,
    )


@pytest.mark.parametrize(
    ("redirect", "reason"),
    [(">&-", "Bad file descriptor"), ("> /dev/full", "No space left on device")],
)
def test_a_closed_or_full_stdout_is_one_line_and_exit_3(redirect, reason):
    result = shell(f"$DD triage --lang en {LOG} {redirect}")
    assert result.returncode == 3
    assert result.stderr == f"ddp-doctor: cannot write the output: {reason}\n"


def test_a_full_stdout_in_chinese():
    result = shell(f"$DD triage --lang zh {LOG} > /dev/full")
    assert result.returncode == 3
    assert result.stderr == "ddp-doctor: 无法写出结果：No space left on device\n"


def test_help_into_a_full_stdout_is_not_a_traceback():
    result = shell("$DD --help > /dev/full")
    assert result.returncode == 3
    assert "Traceback" not in result.stderr and "cannot write the output" in result.stderr


def test_a_closed_stderr_still_gives_the_report_and_exit_0():
    result = shell(f"$DD triage --lang en {LOG} 2>&-")
    assert result.returncode == 0
    assert result.stdout.startswith("# ddp-doctor diagnosis")


def test_a_closed_stdin_is_an_empty_input_not_a_traceback():
    result = shell("$DD triage --lang en - 0<&-")
    assert (result.returncode, result.stderr) == (
        3,
        "ddp-doctor: <stdin> is empty: nothing to diagnose\n",
    )


def test_the_interview_with_a_closed_stdin_says_it_needs_a_terminal():
    result = shell("$DD --lang en 0<&-")
    assert result.returncode == 5
    assert result.stderr.startswith("ddp-doctor: the interview needs a terminal.")


def test_run_with_a_closed_stderr_starts_the_job_and_keeps_its_exit_code(tmp_path):
    marker = tmp_path / "started"
    job = f"import pathlib, sys; pathlib.Path({str(marker)!r}).write_text('yes'); print('hi'); sys.exit(7)"
    result = shell(f"$DD run --lang en -- {shlex.quote(sys.executable)} -c {shlex.quote(job)} 2>&-")
    assert marker.read_text() == "yes"
    assert (result.returncode, result.stdout) == (7, "hi\n")


def test_run_keeps_the_jobs_exit_code_when_the_reader_of_the_diagnosis_leaves():
    # the job's error and the diagnosis after it go to `head`, which leaves after one line
    job = f"import sys; sys.stderr.write(open({str(FLAG_ON_ERROR)!r}).read() * 3); sys.exit(1)"
    quoted = f"{shlex.quote(sys.executable)} -c {shlex.quote(job)}"
    result = shell(f"$DD run --lang en -- {quoted} 2>&1 | head -n 1; echo ${{PIPESTATUS[0]}}")
    assert result.stdout.splitlines()[-1] == "1"
    assert "Traceback" not in result.stderr


def test_triage_keeps_its_exit_code_when_the_reader_leaves(tmp_path):
    """`true` leaves long before ddp-doctor has loaded its rules: the write meets a closed
    pipe, and "no known error" must still exit 1 (it exited 0, as if diagnosed)."""
    log = tmp_path / "train.log"
    log.write_text("epoch 1 loss 0.5\n" * 100)
    result = shell(f"$DD triage --lang en {log} | true; echo ${{PIPESTATUS[0]}}")
    assert result.stdout.splitlines()[-1] == "1"
    assert result.stderr == ""
