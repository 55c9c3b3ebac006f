"""Real DDP (gloo, 2 CPU ranks): each scenario reproduces its error family, and each
fix measured correct in FINDINGS.md runs clean and matches the non-DDP reference.

All selected jobs start together on a 2-worker pool when the module's first test asks,
so the file costs about (jobs x ~5 s) / 2 instead of running them one by one.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

harness.need_torch()

pytestmark = pytest.mark.ddp

# (scenario, fix) -> the error families accepted; all measured on torch 2.13.0 CPU.
FAILING = {
    ("unused_module", None): {"unfinished_reduction"},
    ("unused_forward_output", None): {"unfinished_reduction"},
    ("unused_forward_output", "drop_unused_outputs"): {"unfinished_reduction"},
    ("unused_output_in_object", "find_unused_parameters"): {"ready_twice"},
    ("multitask_missing_loss", None): {"unfinished_reduction"},
    ("two_backward_intermediate", None): {"unfinished_reduction"},
    ("two_backward_intermediate", "static_graph"): {"static_graph_changed"},
    ("two_backward_retain_graph", None): {"ready_twice"},
    ("two_backward_retain_graph", "find_unused_parameters"): {"undefined_grad_allreduced"},
    ("two_backward_retain_graph", "static_graph"): {"static_graph_changed"},
    ("branch_some_steps", None): {"unfinished_reduction"},
    ("branch_some_steps", "static_graph"): {"static_graph_changed"},
    # Whichever rank dies first is reported: its own error or its peer's hang-up.
    ("branch_some_ranks", None): {"peer_closed", "unfinished_reduction"},
    ("requires_grad_after_wrap", None): {"unfinished_reduction"},
    ("checkpoint_reentrant", None): {"ready_twice"},
    ("tied_weights_after_wrap", None): {"unfinished_reduction"},
    ("loss_from_hooked_features", "find_unused_parameters"): {"unfinished_reduction"},
    # issue 20: a branch that moves with step and rank (MoE-like), one chosen by the data
    ("branch_moving_ranks", None): {"peer_closed", "unfinished_reduction"},
    ("branch_data_chosen", None): {"peer_closed", "unfinished_reduction"},
    ("branch_moving_ranks", "static_graph"): {"static_graph_changed"},
    ("unused_forward_output", "static_graph"): {"static_graph_changed"},
}

# Fixes that remove the error AND reproduce the single-process reference.
CORRECT = [
    ("unused_module", "find_unused_parameters"),
    ("unused_module", "remove_unused_module"),
    ("unused_module", "freeze_before_wrapping"),
    ("unused_forward_output", "find_unused_parameters"),
    ("unused_forward_output", "zero_weight_aux_loss"),
    ("unused_forward_output", "drop_unused_outputs+find_unused_parameters"),
    ("multitask_missing_loss", "include_all_task_losses"),
    ("multitask_missing_loss", "find_unused_parameters"),
    ("two_backward_intermediate", "find_unused_parameters"),
    ("two_backward_intermediate", "sum_losses_single_backward"),
    ("two_backward_intermediate", "no_sync_first_backward"),
    ("two_backward_intermediate", "zero_weight_aux_loss"),
    ("two_backward_retain_graph", "sum_losses_single_backward"),
    ("branch_some_steps", "find_unused_parameters"),
    ("branch_some_steps", "zero_weight_aux_loss"),
    ("branch_some_ranks", "find_unused_parameters"),
    ("requires_grad_after_wrap", "freeze_before_wrapping"),
    ("requires_grad_after_wrap", "find_unused_parameters"),
    ("checkpoint_reentrant", "static_graph"),
    ("checkpoint_reentrant", "checkpoint_non_reentrant"),
    ("checkpoint_non_reentrant", None),
    ("tied_weights", None),
    ("tied_weights_after_wrap", "find_unused_parameters"),
]

# Runs clean but the ranks' parameters differ from the reference: a WRONG fix.
SILENTLY_WRONG = [
    ("two_backward_retain_graph", "zero_weight_aux_loss"),
    ("loss_from_hooked_features", "static_graph"),
    ("unused_output_in_object", "static_graph"),
]

# (scenario, fix, debug, launcher) jobs beyond the default (debug=None, spawn).
EXTRA = [
    ("unused_module", None, "INFO", "spawn"),
    ("unused_module", None, None, "torchrun"),
    ("clean_with_find_unused", None, None, "spawn"),
]


def _key(scenario, fix=None, debug=None, launcher="spawn"):
    return (scenario, fix, debug, launcher)


@pytest.fixture(scope="module")
def jobs(request):
    """Start every job this session selected from this module (shared pool, two at a time)."""
    wanted = []
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        if item.module is request.module and callspec and "key" in callspec.params:
            wanted.append(callspec.params["key"])
    return {key: harness.submit(*key) for key in dict.fromkeys(wanted)}


def _ids(key):
    scenario, fix, debug, launcher = key
    return "-".join(p for p in (scenario, fix or "nofix", debug, launcher) if p)


@pytest.mark.parametrize("key", [_key(s, f) for s, f in FAILING], ids=_ids)
def test_failing_scenario_reproduces_its_error(jobs, key):
    result = jobs[key].result()
    expected = FAILING[key[:2]]
    assert not result.ok, result.output[-3000:]
    assert result.family in expected, result.output[-3000:]


@pytest.mark.parametrize("key", [_key(s, f) for s, f in CORRECT], ids=_ids)
def test_correct_fix_runs_clean_and_matches_reference(jobs, key):
    result = jobs[key].result()
    assert result.ok, result.output[-3000:]
    ref = harness.reference_params(key[0], key[1], steps=harness.STEPS)
    assert harness.param_mismatches(result.params, ref) == []


@pytest.mark.parametrize("key", [_key(s, f) for s, f in SILENTLY_WRONG], ids=_ids)
def test_silencing_fix_leaves_wrong_parameters(jobs, key):
    result = jobs[key].result()
    assert result.ok, result.output[-3000:]
    ref = harness.reference_params(key[0], key[1], steps=harness.STEPS)
    assert not harness.params_match(result.params, ref)


@pytest.mark.parametrize("key", [_key("unused_module", None, "INFO")], ids=_ids)
def test_debug_info_names_the_unused_parameters(jobs, key):
    output = jobs[key].result().output
    assert "did not receive grad for rank" in output
    assert "unused.bias, unused.weight" in output


@pytest.mark.parametrize("key", [_key("unused_module", None, None, "torchrun")], ids=_ids)
def test_torchrun_launcher_reproduces_the_error(jobs, key):
    result = jobs[key].result()
    assert result.returncode not in (0, None)
    assert result.family == "unfinished_reduction", result.output[-3000:]


@pytest.mark.parametrize("key", [_key("clean_with_find_unused")], ids=_ids)
def test_find_unused_on_a_clean_model_only_warns(jobs, key):
    result = jobs[key].result()
    assert result.ok, result.output[-3000:]
    assert result.family == "find_unused_warning"
    ref = harness.reference_params("clean_with_find_unused", None, steps=harness.STEPS)
    assert harness.params_match(result.params, ref)


@pytest.mark.parametrize(
    "key", [_key("loss_from_hooked_features", "find_unused_parameters")], ids=_ids
)
def test_failing_with_the_flag_on_says_so(jobs, key):
    assert "Since `find_unused_parameters=True` is enabled" in jobs[key].result().output


def test_reference_is_deterministic():
    first = harness.reference_params("unused_module", "find_unused_parameters", steps=2)
    again = harness.reference_params("unused_module", "find_unused_parameters", steps=2)
    assert harness.params_match({0: first}, again, atol=0)


STATIC_GRAPH_FAILURES = [k for k in FAILING if k[1] == "static_graph"]


@pytest.mark.parametrize("key", [_key(s, f) for s, f in STATIC_GRAPH_FAILURES], ids=_ids)
def test_static_graph_never_says_parameters_were_not_used(jobs, key):
    """With static_graph=True, reducer.cpp replaces the whole unfinished-reduction message
    by the "training graph has changed" one: the "parameters that were not used in
    producing loss" wording (and its find_unused_parameters advice) proves the flag is off."""
    output = jobs[key].result().output
    assert "training graph has changed in this iteration" in output
    assert "not used in producing loss" not in output
    assert "unused parameter detection" not in output


def test_data_chosen_branch_splits_the_ranks():
    """branch_data_chosen: both ranks run pos_head on step 0, only one rank on steps 1 and 2."""
    import scenarios

    assert scenarios.data_chosen_pattern() == [[True, True], [False, True], [True, False]]


def test_printed_find_unused_snippet_drops_static_graph_when_told():
    """The find_unused_parameters snippet as printed: for a user who said static_graph=True is
    on it also turns that off (the two together fail); for anyone else it adds the flag only."""
    import printed

    told = printed.ddp_kwargs("static_graph+find_unused_parameters")
    untold = printed.ddp_kwargs("static_graph_untold+find_unused_parameters")
    assert told == {"static_graph": False, "find_unused_parameters": True}
    assert untold == {"static_graph": True, "find_unused_parameters": True}


@pytest.mark.parametrize("fix_id", ["drop_unused_outputs", "loss_from_forward_outputs"])
def test_every_printed_find_unused_turns_static_graph_off_when_told(fix_id):
    """Fixes whose snippet builds DDP with the flag run on its code path (matrix.BRIDGE):
    their own constructor line must turn static_graph off as find_unused_parameters' does."""
    import printed

    told = printed.render(fix_id, (("static_graph_enabled", True),))
    assert "find_unused_parameters=True, static_graph=False" in told
    assert "static_graph" not in printed.render(fix_id)


@pytest.mark.parametrize(
    ("scenario", "fix_ids"),
    [
        ("unused_module", ("remove_unused_module", "freeze_before_wrapping")),
        ("requires_grad_after_wrap", ("freeze_before_wrapping",)),
    ],
)
def test_printed_freeze_line_freezes_what_the_real_error_lists(scenario, fix_ids):
    """The freeze line as printed for the scenario's real error (`model.unused...`, before
    wrapping) runs on the model and stops exactly the parameters that error lists; the jobs
    of these fixes run it that way (scenarios.py)."""
    import printed
    import scenarios as sc
    from ddp_doctor.knowledge import kb
    from ddp_doctor.reading import triage

    paste = printed.REAL / f"{scenario}__info__spawn.txt"
    found = triage.triage_text(kb.load(), paste.read_text(encoding="utf-8")).findings
    listed = {name for finding in found for name in finding.unused_parameter_names}
    model = sc.build_model(sc.SCENARIOS[scenario], frozenset())
    printed.freeze_as_printed(model, fix_ids, scenario)
    frozen = {name for name, p in model.named_parameters() if not p.requires_grad}
    assert frozen == set(listed) and frozen


def test_printed_zero_term_reaches_the_module_inside_ddp():
    """The generic zero term as printed for the MoE scenario's real error names the expert
    through `model.module` (on the wrapper, `model.experts` is an AttributeError)."""
    import printed

    code = printed.render(
        "zero_weight_aux_loss", modules=printed.error_modules("branch_moving_ranks")
    )
    block = printed.zero_term_block(code)
    assert "model.experts[1].parameters()" in block
    assert "zero_term(model.module)" in block
