"""Under `--json` (or `--format json`) a script reads exactly one JSON document on stdout,
whatever happens: an error, a usage mistake, broken rules, a job's own output, a probed
step's prints (issue 22, items 8 and 11)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ddp_doctor.output import errordoc, render
from helpers import FIXTURES, ROOT, cli

ERROR = FIXTURES / "versions" / "torch_1_10_flag_on.txt"
JSON_OPTIONS = [("--json",), ("--format", "json")]


def _one_document(stdout: str) -> dict:
    data = json.loads(stdout)  # raises on anything before or after the one document
    assert isinstance(data, dict)
    return data


def _error(stdout: str, code: int) -> dict:
    data = _one_document(stdout)
    assert data["status"] == "error"
    assert data["error"]["exit_code"] == code
    assert data["schema_version"] == render.SCHEMA_VERSION
    return data["error"]


def test_the_error_document_has_the_reports_schema_version():
    assert errordoc.SCHEMA_VERSION == render.SCHEMA_VERSION


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("options", JSON_OPTIONS)
def test_input_errors_print_a_json_document(tmp_path, lang, options):
    empty = tmp_path / "empty.log"
    empty.write_text("")
    for args, key in (
        ([str(tmp_path / "missing.log")], "err_no_such_file"),
        ([str(empty)], "err_empty"),
        ([str(tmp_path)], "err_is_directory"),
    ):
        done = cli("triage", *args, "--lang", lang, *options)
        assert done.returncode == 3, done.err
        error = _error(done.out, 3)
        assert error["id"] == key
        assert error["message"] in done.err  # the same words as the stderr line


@pytest.mark.parametrize("options", JSON_OPTIONS)
def test_a_usage_error_prints_a_json_document(options):
    done = cli("triage", "--max-bytes", "0", *options)
    assert done.returncode == 2
    assert _error(done.out, 2)["id"] == "usage"


def test_an_unknown_answer_prints_a_json_document(tmp_path):
    answers = tmp_path / "a.yaml"
    answers.write_text("framework: nonsense\n")
    done = cli("--answers", str(answers), "--json", "--lang", "zh")
    assert done.returncode == 2
    assert "nonsense" in _error(done.out, 2)["message"]


def test_broken_rules_print_a_json_document(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "signatures.yaml").write_text("families: [unclosed\n")
    done = cli("triage", str(ERROR), "--rules", str(rules), "--json")
    assert done.returncode == 4, done.err
    _error(done.out, 4)


def test_without_json_stdout_stays_empty_on_an_error(tmp_path):
    done = cli("triage", str(tmp_path / "missing.log"), "--format", "markdown")
    assert done.returncode == 3 and done.out == ""


# ---------------------------------------------------------------------------- run --json


def _run(*command: str, options=("--json",), lang="en"):
    env = {k: v for k, v in os.environ.items() if k != "DDP_DOCTOR_LANG"}
    return subprocess.run(
        [sys.executable, "-m", "ddp_doctor", "run", "--lang", lang, *options, "--", *command],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


DDP_DEATH = (
    "import sys; print('job says hello'); "
    f"sys.stderr.write(open({str(ERROR)!r}).read()); sys.exit(1)"
)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("options", JSON_OPTIONS)
def test_run_json_is_the_only_thing_on_stdout(lang, options):
    done = _run(sys.executable, "-c", DDP_DEATH, options=options, lang=lang)
    assert done.returncode == 1
    data = _one_document(done.stdout)
    assert data["family"] == "unfinished_reduction" and data["lang"] == lang
    assert data["run"]["job_exit_code"] == 1
    assert done.stderr.startswith("job says hello\n")  # the job's stdout, passed to stderr


@pytest.mark.parametrize(
    ("code", "status"), [("print('fine')", "no_known_error"), ("raise SystemExit(5)", None)]
)
def test_run_json_prints_a_document_for_every_outcome(code, status):
    done = _run(sys.executable, "-c", code)
    data = _one_document(done.stdout)
    assert data["run"]["job_exit_code"] == done.returncode
    if status:
        assert data["status"] == status


def test_run_json_for_a_command_that_does_not_exist():
    done = _run("no-such-command-anywhere")
    assert done.returncode == 127
    assert _error(done.stdout, 127)["id"] == "run_not_found"


def test_run_json_for_a_refused_report(tmp_path):
    existing = tmp_path / "r.json"
    existing.write_text("keep")
    done = _run("true", options=("--json", "--report", str(existing)))
    assert done.returncode == 3
    assert _error(done.stdout, 3)["id"] == "run_report_exists"


# ---------------------------------------------------------------------------- probe --json

CHATTY = """
import os
import torch

print("importing the model file")


def make():
    print("building the model")
    model = torch.nn.Module()
    model.add_module("used", torch.nn.Linear(2, 1))
    model.add_module("unused", torch.nn.Linear(2, 1))

    def step(m):
        print("one step")
        os.write(1, b"C code writing to descriptor 1\\n")
        return m.used(torch.ones(1, 2)).sum()

    return model, step


def broken():
    print("about to fail")
    raise ValueError("no model today")
"""


@pytest.fixture
def chatty(tmp_path) -> Path:
    pytest.importorskip("torch")
    path = tmp_path / "chatty.py"
    path.write_text(CHATTY)
    return path


@pytest.mark.parametrize("options", JSON_OPTIONS)
def test_probe_json_sends_the_steps_own_output_to_stderr(chatty, options):
    done = cli("probe", f"{chatty}:make", "--steps", "2", *options)
    assert done.returncode == 1, done.err
    data = _one_document(done.out)
    assert [p["name"] for p in data["never_reached"]] == ["unused.weight", "unused.bias"]
    for said in ("importing the model file", "building the model", "one step", "descriptor 1"):
        assert said in done.err


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_probe_json_failure_prints_a_json_document(chatty, lang):
    done = cli("probe", f"{chatty}:broken", "--json", "--lang", lang)
    assert done.returncode == 3
    error = _error(done.out, 3)
    assert error["id"] == "probe_cli_factory_failed" and "no model today" in error["message"]
    assert "about to fail" in done.err
