"""Triage of real outputs captured from DDP jobs on torch 2.13 (tests/fixtures/real/).

The fixtures are made by tests/ddp/make_fixtures.py from the scenarios in tests/ddp/; the
expectations below come from the scenarios' models (which module each one leaves unused),
not from ddp-doctor's output. These tests need no torch.
"""

from __future__ import annotations

import pytest
from ddp_doctor.knowledge import kb as kb_module
from ddp_doctor.reading.inputs import read_sources
from helpers import FIXTURES

KB = kb_module.load()
REAL = FIXTURES / "real"

# scenario -> (family PyTorch raises, modules whose parameters it names with debug INFO)
EXPECTED = {
    "unused_module": ("unfinished_reduction", {"unused"}),
    "unused_forward_output": ("unfinished_reduction", {"aux_head"}),
    "multitask_missing_loss": ("unfinished_reduction", {"head_b"}),
    "two_backward_intermediate": ("unfinished_reduction", {"out", "tail"}),
    "two_backward_retain_graph": ("mark_ready_twice", {"stem"}),
    "branch_some_steps": ("unfinished_reduction", {"extra"}),
    "branch_odd_steps": ("unfinished_reduction", {"extra"}),
    "branch_some_ranks": ("unfinished_reduction", {"extra"}),
    "requires_grad_after_wrap": ("unfinished_reduction", {"body"}),
    "checkpoint_reentrant": ("mark_ready_twice", {"block"}),
    "tied_weights_after_wrap": ("unfinished_reduction", {"lm_head"}),
    "clean_with_find_unused": ("unused_params_warning", set()),
    "unused_output_in_object": ("unfinished_reduction", set()),
    "loss_from_hooked_features": ("unfinished_reduction", set()),
    # rank r leaves expert (r + step) % 3 idle: at step 0 rank 1's error names experts.1
    # (the captured output holds rank 1's error; rank 0 saw its peer close)
    "branch_moving_ranks": ("unfinished_reduction", {"experts.1"}),
    "branch_data_chosen": ("unfinished_reduction", {"pos_head"}),
}
# a fix changes which error PyTorch raises: scenario.fix -> family
EXPECTED_WITH_FIX = {
    "static_graph": "static_graph_changed",
    "two_backward_retain_graph.find_unused_parameters": "undefined_grad_allreduced",
    "checkpoint_reentrant.find_unused_parameters": "mark_ready_twice",
    "unused_output_in_object.find_unused_parameters": "mark_ready_twice",
    "loss_from_hooked_features.find_unused_parameters": "unfinished_reduction",
}


def _cases():
    for path in sorted(REAL.glob("*.txt")):
        stem, debug, launcher = path.stem.split("__")
        if debug == "detail":  # DETAIL in the environment crashes gloo jobs: no DDP text
            continue
        yield pytest.param(path, stem, debug, launcher, id=path.stem)


CASES = list(_cases())


def test_fixtures_are_there():
    assert len(CASES) >= 20


def _expected_family(stem: str) -> str:
    scenario, _, fix = stem.partition(".")
    if stem in EXPECTED_WITH_FIX:
        return EXPECTED_WITH_FIX[stem]
    if fix in EXPECTED_WITH_FIX:
        return EXPECTED_WITH_FIX[fix]
    return EXPECTED[scenario][0]


@pytest.mark.parametrize(("path", "stem", "debug", "launcher"), CASES)
def test_real_output_is_diagnosed(path, stem, debug, launcher):
    result = read_sources(KB, [str(path)], "en", None)
    assert result.findings, "no DDP error recognised"
    family = _expected_family(stem)
    assert result.findings[0].family == family
    first = result.findings[0]
    if family != "unused_params_warning":
        assert first.ranks, "the rank that raised is in every real output"
        assert first.user_frames, "the user's own code is in the traceback"
    scenario, _, fix = stem.partition(".")
    expected_modules = EXPECTED[scenario][1]
    if debug in ("info", "detailapi") and not fix and expected_modules:
        assert set(result.unused_modules) == expected_modules
    if debug == "nodebug" and family == "unfinished_reduction":
        assert first.unused_parameter_indices, "indices are printed without debug"
        assert not first.unused_parameter_names


def test_torchrun_output_gives_one_finding_per_rank():
    result = read_sources(KB, [str(REAL / "unused_module__info__torchrun.txt")], "en", None)
    assert sorted(f.ranks for f in result.findings) == [(0,), (1,)]
    assert result.facts["ranks_disagree"] is False


def test_static_graph_with_a_branch_is_recognised_as_graph_change():
    result = read_sources(
        KB, [str(REAL / "branch_some_steps.static_graph__nodebug__spawn.txt")], "en", None
    )
    assert result.facts["family"] == "static_graph_changed"
