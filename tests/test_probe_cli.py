"""`ddp-doctor probe` as a user runs it: the installed command, a module file of their own."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import ROOT

CONSOLE_SCRIPT = Path(sys.executable).parent / "ddp-doctor"
WRAPPER = [str(CONSOLE_SCRIPT)] if CONSOLE_SCRIPT.exists() else [sys.executable, "-m", "ddp_doctor"]
needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="the probe needs torch"
)


def ddp_doctor(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "DDP_DOCTOR_LANG"}
    return subprocess.run(
        [*WRAPPER, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )


def module_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "mymodel.py"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


@needs_torch
@pytest.mark.parametrize("call", ["sys.exit(0)", "sys.exit()", "raise SystemExit(2)"])
def test_a_step_that_exits_is_a_failure_with_a_message(tmp_path, call):
    path = module_file(
        tmp_path,
        f"""
        import sys
        import torch

        def make():
            def step(model):
                {call}
            return torch.nn.Linear(2, 1), step
        """,
    )
    result = ddp_doctor("probe", "--lang", "en", f"{path}:make")
    assert result.returncode == 3
    assert result.stdout == ""
    assert result.stderr.startswith("The step function failed on step 1: SystemExit")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("value", ["0", "-1"])
def test_max_bytes_below_one_is_a_usage_error(value):
    log = ROOT / "examples" / "torchrun-unused-module.log"
    result = ddp_doctor("triage", "--lang", "en", f"--max-bytes={value}", str(log))
    assert result.returncode == 2
    assert "--max-bytes" in result.stderr and "empty" not in result.stderr
