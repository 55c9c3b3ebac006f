"""`ddp-doctor probe` as a user runs it: the installed command, a module file of their own."""

from __future__ import annotations

import importlib.util
import json
import os
import re
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


COUNTED = """
import torch

class Two(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(2, 2)
        self.b = torch.nn.Linear(2, 2)

def make():
    calls = []
    def step(model):
        calls.append(1)
        x = torch.ones(1, 2)
        if len(calls) % 2:  # odd steps: two losses through `a`; even steps: `b` only
            return [model.a(x).sum(), 2 * model.a(x).sum()]
        return model.b(x).sum()
    return Two(), step
"""


@needs_torch
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_counts_line_adds_up(tmp_path, lang):
    path = module_file(tmp_path, COUNTED)
    result = ddp_doctor(
        "probe", "--lang", lang, "--steps", "2", "--format", "markdown", f"{path}:make"
    )
    assert result.returncode == 1, result.stderr
    first = result.stdout.splitlines()[0]
    numbers = [int(n) for n in re.findall(r"\d+", first)]
    problems, total, details = numbers[0], numbers[1], numbers[2:]
    if lang == "zh":  # "{count} 个可训练参数中有 {problems} 个…"
        total, problems = problems, total
    assert (problems, total) == (4, 4)
    assert sum(details) == problems, first


@needs_torch
def test_probe_markdown_and_json_formats(tmp_path):
    path = module_file(tmp_path, COUNTED)
    markdown = ddp_doctor(
        "probe", "--lang", "en", "--steps", "2", "--format", "markdown", f"{path}:make"
    )
    assert "| Problem | Parameter | Module | Shape | Reached on steps |" in markdown.stdout
    assert "| never reached |" not in markdown.stdout and "| a.weight |" in markdown.stdout
    data = json.loads(
        ddp_doctor("probe", "--steps", "2", "--format", "json", f"{path}:make").stdout
    )
    assert data["counts"] == {"never": 0, "sometimes": 2, "multiple": 2}


@needs_torch
def test_the_bundled_example_has_a_factory_to_probe():
    result = ddp_doctor(
        "probe",
        "--lang",
        "en",
        "--format",
        "markdown",
        "examples/train_unused_module.py:probe_target",
    )
    assert result.returncode == 1, result.stderr
    assert "| never reached | aux_head.weight | aux_head |" in result.stdout
    assert "Never called in `forward`: `aux_head`" in result.stdout


def test_probe_help_says_what_step_is_and_what_steps_means():
    result = ddp_doctor("probe", "--help", "--lang", "en")
    text = " ".join(result.stdout.split())
    assert result.returncode == 0
    assert "step(model) runs one forward pass and returns the loss" in text
    assert "--steps N" in text and "how many times to call step" in text


@pytest.mark.parametrize("value", ["0", "-2"])
def test_probe_steps_below_one_is_a_usage_error(value):
    result = ddp_doctor("probe", "--lang", "en", "--steps", value, "examples/x.py:make")
    assert result.returncode == 2
    assert "--steps" in result.stderr


def test_readme_documents_probes_exit_codes():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("### Exit codes", 1)[1].split("###", 1)[0]
    assert "`probe`" in table
    row_1 = next(line for line in table.splitlines() if line.startswith("| 1 |"))
    assert "probe" in row_1
