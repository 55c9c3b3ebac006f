"""The single-process probe, against real torch: every way a step can miss parameters.

Torch tests skip when torch is missing locally, but CI (env `CI` set) must have torch: there
the import below fails the whole module instead of silently skipping it.
"""

from __future__ import annotations

import gc
import json
import os
import re
import string
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from ddp_doctor.common.errors import ExitCode
from ddp_doctor.knowledge import kb as kb_module
from ddp_doctor.probe import (
    ProbeError,
    ProbeReport,
    find_unused_parameters,
    run_probe_command,
)

EXIT_OK, EXIT_PROBLEMS_FOUND = ExitCode.OK, ExitCode.PROBLEMS_FOUND
EXIT_CANNOT_PROBE = ExitCode.CANNOT_PROBE
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MODELS_FILE = HERE / "probe_models.py"

if os.environ.get("CI"):
    import torch
else:
    try:
        import torch
    except ImportError:
        torch = None

if torch is not None:
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    import probe_models as pm


def torch_test(test):
    return pytest.mark.torch(pytest.mark.skipif(torch is None, reason="needs torch")(test))


@pytest.fixture(scope="module")
def kb():
    return kb_module.load()


def names(params) -> list[str]:
    return [p.name for p in params]


def probe(factory, steps: int = 3, **options) -> ProbeReport:
    model, step = factory()
    return find_unused_parameters(model, step, steps=steps, **options)


# ---------------------------------------------------------------------------- the scenarios


@torch_test
def test_unused_module_is_never_reached():
    report = probe(pm.make_unused_module)
    assert names(report.never_reached) == ["unused.weight", "unused.bias"]
    assert report.unused_modules == ("unused",)
    assert not report.sometimes_reached and not report.reached_multiple_times
    assert not report.ok
    info = report.never_reached[0]
    assert (info.module, info.shape, info.steps_reached) == ("unused", (2, 4), ())


@torch_test
def test_forward_output_the_loss_ignores():
    report = probe(pm.make_ignored_output)
    assert names(report.never_reached) == ["aux_head.weight", "aux_head.bias"]
    assert report.unused_modules == ("aux_head",)


@torch_test
def test_multitask_loss_that_forgets_a_task_and_its_fix():
    report = probe(pm.make_multitask_forgets_task)
    assert report.unused_modules == ("heads.depth",)
    assert names(report.never_reached) == ["heads.depth.weight", "heads.depth.bias"]
    assert probe(pm.make_multitask_fixed).ok


@torch_test
def test_two_backward_calls_from_a_feature_and_from_the_output():
    report = probe(pm.make_two_losses)
    # The stem feeds both losses: two backward() calls mark it ready twice in DDP.
    assert names(report.reached_multiple_times) == ["stem.weight", "stem.bias"]
    assert report.reached_multiple_times[0].losses_per_step == ((1, 2),) * 3
    # The decoder is reached by the second loss only, once per step: not a problem.
    assert not report.never_reached and not report.sometimes_reached
    # The fix the report prints (one backward over the summed losses) makes it clean.
    assert probe(pm.make_two_losses_summed).ok


@torch_test
def test_branch_taken_on_some_steps_only():
    report = probe(pm.make_branchy, steps=4)
    assert names(report.sometimes_reached) == ["rare.weight", "rare.bias"]
    assert report.sometimes_reached[0].steps_reached == (1, 3)
    assert not report.never_reached and report.unused_modules == ()
    # One step alone cannot see a branch that was taken on it.
    assert probe(pm.make_branchy, steps=1).ok


@torch_test
def test_frozen_parameters_are_listed_but_not_problems():
    report = probe(pm.make_frozen_backbone)
    assert report.ok
    assert names(report.frozen) == [
        "backbone.0.weight",
        "backbone.0.bias",
        "backbone.1.weight",
        "backbone.1.bias",
    ]
    assert report.trainable_count == 2
    assert report.frozen_modules == ("backbone",)
    assert "4 parameters in `backbone`." in report.render("en")


@torch_test
def test_tied_weights_are_reported_once_with_every_name():
    clean = probe(pm.make_tied)
    assert clean.ok and clean.trainable_count == 3  # embed/lm_head weight counted once

    report = probe(pm.make_tied_unused)
    assert len(report.never_reached) == 1
    tied = report.never_reached[0]
    assert tied.names == ("proj_a.weight", "proj_b.weight")
    assert tied.aliases == ("proj_b.weight",)
    assert report.unused_modules == ("proj_a", "proj_b")


@torch_test
def test_clean_model_reports_nothing():
    report = probe(pm.make_clean)
    assert report.ok
    data = report.to_dict()
    assert data["ok"] is True
    for key in ("never_reached", "sometimes_reached", "reached_multiple_times", "frozen"):
        assert data[key] == []
    assert data["unused_modules"] == []


@torch_test
def test_stale_grad_from_an_earlier_step_does_not_fool_it():
    model, step = pm.make_unused_module()
    # An earlier step that did use every parameter left a .grad on each of them: the
    # article's `if param.grad is None` check would now report nothing.
    everything = model(pm.batch()).sum() + model.unused(pm.batch()).sum()
    everything.backward()
    assert all(p.grad is not None for p in model.parameters())

    report = find_unused_parameters(model, step, steps=2)
    assert names(report.never_reached) == ["unused.weight", "unused.bias"]


@torch_test
@pytest.mark.filterwarnings("ignore:None of the inputs have requires_grad")
def test_reentrant_checkpoint_with_an_input_that_needs_no_grad():
    # Reentrant checkpointing only reaches the block's parameters through its input's grad.
    def step(model):
        return model(pm.batch()).sum()

    report = find_unused_parameters(pm.ReentrantCheckpoint(use_reentrant=True), step, steps=2)
    assert report.unused_modules == ("block",)
    assert find_unused_parameters(pm.ReentrantCheckpoint(use_reentrant=False), step).ok


@torch_test
def test_step_returning_a_dict_with_a_loss_entry():
    report = probe(pm.make_hf_style_dict)
    assert report.unused_modules == ("aux_head",)  # `logits` and `aux` are not losses


@torch_test
def test_step_returning_a_dict_of_losses_means_one_backward_each():
    model = pm.TwoLosses()

    def step(model):
        feature, output = model(pm.batch())
        return {"aux": feature.mean(), "main": output.mean()}

    report = find_unused_parameters(model, step, steps=1)
    assert names(report.reached_multiple_times) == ["stem.weight", "stem.bias"]


@torch_test
def test_grads_parameters_buffers_and_rng_are_left_as_they_were():
    model, step = pm.make_frozen_backbone()
    model.head[1].weight.grad = torch.full_like(model.head[1].weight, 7.0)
    grad_object = model.head[1].weight.grad
    params_before = {name: p.detach().clone() for name, p in model.named_parameters()}
    grads_before = {name: p.grad for name, p in model.named_parameters()}
    buffers_before = {name: b.clone() for name, b in model.named_buffers()}

    torch.manual_seed(123)
    expected_next_random = torch.rand(3)
    torch.manual_seed(123)
    find_unused_parameters(model, step, steps=3)  # train mode: dropout draws, BatchNorm updates

    assert torch.equal(torch.rand(3), expected_next_random)
    for name, p in model.named_parameters():
        assert torch.equal(p, params_before[name]), name
        assert p.grad is grads_before[name], name  # the very same object (or still None)
    assert model.head[1].weight.grad is grad_object
    assert torch.equal(grad_object, torch.full_like(grad_object, 7.0))
    for name, b in model.named_buffers():
        assert torch.equal(b, buffers_before[name]), name


@torch_test
def test_loss_without_grad_is_a_clear_error(kb):
    with pytest.raises(ProbeError) as caught:
        probe(pm.make_no_grad_loss)
    assert caught.value.key == "probe_error_loss_no_grad"
    assert "torch.no_grad()" in caught.value.message("en", kb)
    assert "不需要梯度" in caught.value.message("zh", kb)


@torch_test
def test_model_without_trainable_parameters_is_a_clear_error():
    with pytest.raises(ProbeError) as caught:
        probe(pm.make_all_frozen)
    assert caught.value.key == "probe_error_no_trainable"


@torch_test
def test_step_returning_something_else_is_a_clear_error():
    model = pm.Clean()
    with pytest.raises(ProbeError) as caught:
        find_unused_parameters(model, lambda m: 1.5, steps=1)
    assert caught.value.key == "probe_error_not_a_loss"
    with pytest.raises(ProbeError) as caught:
        find_unused_parameters(model, lambda m: [], steps=1)
    assert caught.value.key == "probe_error_no_losses"
    with pytest.raises(ProbeError) as caught:
        find_unused_parameters(model, lambda m: m(pm.batch()).sum(), steps=0)
    assert caught.value.key == "probe_error_steps"


@torch_test
def test_rendering_in_both_languages():
    report = probe(pm.make_ignored_output)
    english = report.render("en")
    assert "aux_head.weight" in english and "never reached" in english
    # forward calls aux_head, the loss ignores its output: not "never called"
    assert "Called in `forward`, but the loss does not use their output: `aux_head`" in english
    assert "Never called" not in english
    chinese = report.render("zh")
    assert "aux_head.weight" in chinese and "始终没有梯度" in chinese
    assert "`forward` 中调用了，但 loss 没有用到它们的输出：`aux_head`" in chinese
    uncalled = probe(pm.make_unused_module).render("en")
    assert "Never called in `forward`: " in uncalled and "Called in" not in uncalled
    assert "Traceback" not in english + chinese
    ok = probe(pm.make_clean).render("en")
    assert ok.startswith("OK: all 4 trainable parameters")
    json.dumps(report.to_dict())  # JSON-ready


@torch_test
def test_many_rows_are_capped_in_the_table_but_not_in_the_data():
    wide = torch.nn.ModuleDict({f"m{i}": torch.nn.Linear(2, 2) for i in range(30)})
    wide.used = torch.nn.Linear(2, 1)
    report = find_unused_parameters(wide, lambda m: m.used(torch.ones(1, 2)).sum(), steps=1)
    assert len(report.never_reached) == 60
    assert "20 more parameters" in report.render("en")
    assert len(report.to_dict()["never_reached"]) == 60


# ---------------------------------------------------------------------------- DDP agrees


@torch_test
def test_confirmed_by_single_process_ddp():
    import gc

    from torch.nn.parallel import DistributedDataParallel

    report = probe(pm.make_unused_module, steps=2, confirm_with_ddp=True)
    verdict = report.ddp_verdict
    assert verdict.ran and "Expected to have finished reduction" in verdict.error
    assert "unused.bias, unused.weight" in verdict.error  # DDP names the same parameters

    twice = probe(pm.make_two_losses, steps=2, confirm_with_ddp=True).ddp_verdict
    assert "Expected to mark a variable ready only once" in twice.error
    # ... and no DDP copy of the model is left in memory after its error, for the garbage
    # collector to tear down its reducer later, while another process group runs
    assert not [o for o in gc.get_objects() if type(o) is DistributedDataParallel]

    clean = probe(pm.make_clean, steps=2, confirm_with_ddp=True)
    assert clean.ddp_verdict.ran and clean.ddp_verdict.error is None
    assert not torch.distributed.is_initialized()  # torn down cleanly


@torch_test
def test_a_ddp_wrapped_model_is_refused():
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    caught = None
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        model, step = pm.make_clean()
        with pytest.raises(ProbeError) as caught:
            find_unused_parameters(DistributedDataParallel(model), step)
        assert caught.value.key == "probe_error_ddp_wrapped"
        # ... and a running process group is not hijacked by the DDP confirmation.
        verdict = find_unused_parameters(model, step, confirm_with_ddp=True).ddp_verdict
        assert not verdict.ran
    finally:
        # The wrapper (held by the traceback) goes before its group: freed after it, it
        # frees the group holding the GIL that a gloo worker may wait for (a torch deadlock)
        del caught
        gc.collect()
        dist.destroy_process_group()


# ---------------------------------------------------------------------------- lazy imports


def test_importing_the_probe_imports_neither_torch_nor_rich():
    code = "import sys, ddp_doctor.probe; print(sorted(m for m in ('torch', 'rich') if m in sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


# ---------------------------------------------------------------------------- messages


def test_every_probe_message_key_exists_with_matching_placeholders(kb):
    source = "".join(
        path.read_text(encoding="utf-8") for path in sorted((ROOT / "wizard").glob("probe*.py"))
    )
    used = set(re.findall(r'"(probe_[a-z_]+)"', source))
    assert used <= set(kb.messages), used - set(kb.messages)
    formatter = string.Formatter()
    for key, text in kb.messages.items():
        if not key.startswith("probe_"):
            continue
        en = {field for _, field, _, _ in formatter.parse(text.en) if field}
        zh = {field for _, field, _, _ in formatter.parse(text.zh) if field}
        assert en == zh, key
        assert re.search(r"[\u4e00-\u9fff]", text.zh), key


# ---------------------------------------------------------------------------- the CLI entry


def target(factory: str) -> str:
    return f"{MODELS_FILE}:{factory}"


@pytest.fixture
def restore_sys_path(monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))


@torch_test
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_cli_unused_parameters_exit_1(kb, capsys, lang, restore_sys_path):
    code = run_probe_command(target("make_unused_module"), 2, lang, False, kb)
    out, err = capsys.readouterr()
    assert code == EXIT_PROBLEMS_FOUND == 1
    assert "unused.weight" in out and err == ""
    assert ("始终没有梯度" if lang == "zh" else "never reached") in out


@torch_test
def test_cli_clean_exit_0_and_json(kb, capsys, restore_sys_path):
    assert run_probe_command(target("make_clean"), 2, "en", False, kb) == EXIT_OK == 0
    assert "OK: all" in capsys.readouterr().out

    assert run_probe_command(target("make_ignored_output"), 2, "en", True, kb) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["unused_modules"] == ["aux_head"] and data["ok"] is False

    code = run_probe_command(
        target("make_ignored_output"), 1, "en", True, kb, confirm_with_ddp=True
    )
    verdict = json.loads(capsys.readouterr().out)["ddp_verdict"]
    assert code == 1 and "aux_head.bias, aux_head.weight" in verdict["error"]


@torch_test
def test_cli_imports_a_module_path_from_the_cwd(kb, capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "probe_cwd_target.py").write_text(
        textwrap.dedent(
            """
            import torch
            def make():
                model = torch.nn.Linear(3, 1)
                return model, lambda m: m(torch.ones(2, 3)).sum()
            """
        ),
        encoding="utf-8",
    )
    assert run_probe_command("probe_cwd_target:make", 1, "en", False, kb) == 0
    sys.modules.pop("probe_cwd_target", None)


CLI_FAILURES = [
    # (target, message in English, message in Chinese)
    ("no-colon-here", "Cannot read the target", "无法识别目标"),
    ("surely_not_a_module_xyz:make", "Cannot import surely_not_a_module_xyz", "无法导入"),
    ("missing/file.py:make", "Cannot import missing/file.py", "无法导入"),
    ("{models}:no_such_factory", "has no callable named `no_such_factory`", "没有名为"),
    ("{models}:make_failing_factory", "the dataset is missing", "出错"),
    ("{models}:make_not_a_pair", "must return `(model, step)`", "应返回"),
    ("{models}:make_failing_step", "failed on step 1: ValueError", "在第 1 步出错"),
    ("{models}:make_no_grad_loss", "does not require grad", "不需要梯度"),
    ("{models}:make_all_frozen", "no trainable parameters", "没有可训练参数"),
]


@torch_test
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize(("raw_target", "english", "chinese"), CLI_FAILURES)
def test_cli_failures_exit_3_with_one_translated_line(
    kb, capsys, restore_sys_path, lang, raw_target, english, chinese
):
    code = run_probe_command(raw_target.format(models=MODELS_FILE), 2, lang, False, kb)
    out, err = capsys.readouterr()
    assert code == EXIT_CANNOT_PROBE == 3
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert (chinese if lang == "zh" else english) in err
    assert "Traceback" not in err


@pytest.mark.parametrize(("lang", "expected"), [("en", "needs PyTorch"), ("zh", "没有安装 torch")])
def test_cli_without_torch_exits_3(lang, expected):
    # sys.modules[name] = None makes `import name` raise ImportError: torch is hidden, not faked.
    code = textwrap.dedent(
        f"""
        import sys
        sys.modules["torch"] = None
        from ddp_doctor.knowledge import kb
        from ddp_doctor.probe import run_probe_command
        sys.exit(run_probe_command("anything:make", 3, {lang!r}, False, kb.load()))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 3, result.stderr
    assert expected in result.stderr and "Traceback" not in result.stderr
