"""`run` whose own stdout fails (a full disk) says so and exits non-zero, as the job would
have on its own; a failed job keeps its exit code (issue 22, item 24)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers import ROOT

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
PRINTER = "for i in range(5000): print(f'line {i} ' + 'x' * 60)"


def _run_into_full_disk(code: str, lang: str = "en"):
    env = {k: v for k, v in os.environ.items() if k != "DDP_DOCTOR_LANG"}
    with open("/dev/full", "wb") as full:
        return subprocess.run(
            [sys.executable, "-m", "ddp_doctor", "run", "--lang", lang, "--", sys.executable,
             "-c", code],
            stdout=full, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env, timeout=120,
        )  # fmt: skip


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_lost_output_of_a_clean_job_is_an_error(lang):
    done = _run_into_full_disk(PRINTER, lang)
    assert done.returncode == 3
    said = {"en": "cannot pass the job's output on", "zh": "无法转发训练命令的输出"}[lang]
    lines = [line for line in done.stderr.splitlines() if said in line]
    assert len(lines) == 1 and "Traceback" not in done.stderr


def test_a_failed_job_keeps_its_exit_code_when_its_output_is_lost():
    done = _run_into_full_disk(PRINTER + "\nraise SystemExit(7)")
    assert done.returncode == 7
    assert "cannot pass the job's output on" in done.stderr
