"""Snippets run where the paste ran (issue 10 item 4): no device_ids for a gloo / CPU job,
no invented module names, the framework's own spelling instead of "wrap DDP yourself",
and the DETAIL-in-the-environment crash diagnosed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ddp_doctor.knowledge.kb import load
from ddp_doctor.output.render import build_report
from ddp_doctor.reasoning import engine
from helpers import cli

KB = load()
REAL = Path(__file__).parent / "fixtures" / "real"

ERROR = (
    "Traceback (most recent call last):\n"
    '  File "/home/me/train.py", line 40, in <module>\n'
    '    dist.init_process_group(backend="{backend}")\n'
    "RuntimeError: Expected to have finished reduction in the prior iteration before starting "
    "a new one. This error indicates that your module has parameters that were not used in "
    "producing loss.\n"
    "Parameters which did not receive grad for rank 0: head.weight, head.bias\n"
)


def shown_snippets(doc: dict) -> str:
    return "\n".join(f["snippet"] for f in doc["fixes"] + doc["conditional_fixes"])


def test_a_gloo_job_gets_no_device_ids_and_a_nccl_job_does():
    gloo = json.loads(cli("triage", "--json", "-", input=ERROR.format(backend="gloo")).out)
    nccl = json.loads(cli("triage", "--json", "-", input=ERROR.format(backend="nccl")).out)
    assert gloo["facts"].get("backend") == "gloo"
    assert "DistributedDataParallel(" in shown_snippets(gloo)
    assert "device_ids" not in shown_snippets(gloo)
    assert "device_ids=[local_rank]" in shown_snippets(nccl)


def test_no_invented_module_name_when_the_error_names_none():
    facts = {"family": "unfinished_reduction", "revealed_module_state": "not_called"}
    for lang, stand_in in (("en", "model.YOUR_MODULE"), ("zh", "model.YOUR_MODULE")):
        report = build_report(KB, engine.diagnose(KB, None, facts), lang)
        code = {f.id: f.code for f in report.fixes}["remove_unused_module"]
        assert stand_in in code and "aux_head" not in code
        assert "TORCH_DISTRIBUTED_DEBUG=INFO" in code  # how to learn the real names


def test_a_framework_user_is_not_told_to_wrap_ddp_by_hand():
    spelled = {
        "hf_trainer": "Trainer(model=model",
        "lightning": "trainer.fit(model)",
        "accelerate": "accelerator.prepare(model)",
        "mmengine": "Runner.from_cfg(cfg)",
        "detectron2": "create_ddp_model(model)",
    }
    for framework, native in spelled.items():
        facts = {
            "family": "unfinished_reduction",
            "revealed_module_state": "not_called",
            "framework": framework,
        }
        report = build_report(KB, engine.diagnose(KB, None, facts), "en")
        views = {f.id: f for f in report.fixes}
        view = views["remove_unused_module"]
        assert native in view.code, (framework, view.code)
        assert "DistributedDataParallel(" not in view.code
        assert not view.framework_fallback
        # the flag itself in the framework's own spelling
        if "find_unused_parameters" in views:
            assert "DistributedDataParallel(" not in views["find_unused_parameters"].code


def test_detail_in_the_environment_sigsegv_is_diagnosed_from_the_paste():
    doc = json.loads(cli("triage", "--json", str(REAL / "unused_module__detail__torchrun.txt")).out)
    assert doc["family"] == "worker_sigsegv"
    assert doc["causes"][0]["id"] == "debug_detail_crash"
    # a fix since issue 20: tests/ddp scenario debug_detail_env measures INFO instead of DETAIL
    assert [f["id"] for f in doc["fixes"]] == ["debug_level_info"]


def test_run_knows_it_ran_with_detail(tmp_path):
    job = (
        "import os, signal, sys; "
        "print('rank 1 exitcode -11: Signal 11 (SIGSEGV) received by PID 4242', flush=True); "
        "os.kill(os.getpid(), signal.SIGSEGV)"
    )
    report = tmp_path / "report.json"
    result = cli(
        "run",
        "--report",
        str(report),
        "--",
        sys.executable,
        "-c",
        job,
        env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL"},
    )
    assert result.returncode == 139, result.err
    doc = json.loads(report.read_text(encoding="utf-8"))
    assert doc["facts"]["debug_level"] == "DETAIL"
    assert doc["causes"][0]["id"] == "debug_detail_crash"
