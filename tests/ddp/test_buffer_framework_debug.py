"""Real DDP (gloo, 2 CPU ranks): what the scenarios behind three causes do without a fix,
and the measurements their `outcomes` rows rest on but do not state (issue 20).

- buffer_inplace (buffer_two_forwards): on torch 2.13 the in-place buffer error does not
  happen; one forward over the concatenated batch changes the training. A buffer the model
  itself updates in place (buffer_updated_in_forward) fails with or without the broadcast.
- framework_config (framework_flag_off*): the framework's new default stops the job; with
  reentrant checkpointing the flag fails where static_graph works.
- debug_detail_crash (debug_detail_env): DETAIL in the environment kills the job.

The outcome rows themselves are checked by test_fix_matrix.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

harness.need_torch()

pytestmark = pytest.mark.ddp


def verdict(scenario: str, fix: str | None = None) -> tuple[str, str]:
    result = harness.submit(scenario, fix).result()
    return harness.verdict(scenario, fix, result)


def test_two_forwards_through_batchnorm_train_without_error_on_this_torch():
    """The broadcast of rank 0's buffers before the second forward no longer bumps their
    autograd version (torch 2.13): no "modified by an inplace operation", and the same
    parameters as one process. If this fails on a newer torch, the error is back and
    broadcast_buffers_false can be measured for real."""
    result = harness.submit("buffer_two_forwards").result()
    assert "modified by an inplace operation" not in result.output
    assert harness.verdict("buffer_two_forwards", None, result) == ("works", "")


def test_one_forward_over_the_concatenated_batch_changes_the_training():
    """torch.cat([real, fake]) through one forward: DDP averages it right (it equals its own
    single-process run), but BatchNorm normalises both batches together, so the parameters
    differ from the two-forward training the user wrote."""
    result = harness.submit("buffer_two_forwards", "concat_one_forward").result()
    assert result.ok, result.output[-2000:]
    own = harness.reference_params("buffer_two_forwards", "concat_one_forward")
    assert harness.params_match(result.params, own)
    outcome, detail = harness.verdict("buffer_two_forwards", "concat_one_forward", result)
    assert outcome == "wrong", detail


@pytest.mark.parametrize("fix", [None, "broadcast_buffers_false"])
def test_a_buffer_the_model_updates_in_place_fails_with_or_without_the_broadcast(fix):
    """What an in-place error under DDP on torch 2.13 more likely is: the model's own update.
    broadcast_buffers=False does not help, and one process without DDP fails the same way."""
    result = harness.submit("buffer_updated_in_forward", fix).result()
    assert not result.ok
    assert "modified by an inplace operation" in result.output, result.output[-2000:]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        harness.reference_params("buffer_updated_in_forward")


def test_detail_in_the_environment_kills_the_job_before_its_first_step():
    result = harness.submit("debug_detail_env").result()
    assert not result.ok
    assert "SIGSEGV" in result.output, result.output[-2000:]
    assert all(not steps for steps in result.params.values())


def test_detail_set_after_init_process_group_trains_right():
    """The comment in the debug_level_info snippet: DETAIL from inside the script."""
    assert verdict("debug_detail_env", "detail_after_init") == ("works", "")


@pytest.mark.parametrize(
    "scenario",
    [
        "framework_flag_off",
        "framework_flag_off_ckpt_reentrant",
        "framework_flag_off_ckpt_non_reentrant",
    ],
)
def test_the_framework_default_off_stops_the_job(scenario):
    assert verdict(scenario) == ("error", "unfinished_reduction")


def test_with_reentrant_checkpointing_static_graph_works_where_the_flag_fails():
    assert verdict("framework_flag_off_ckpt_reentrant", "find_unused_parameters") == (
        "error",
        "ready_twice",
    )
    assert verdict("framework_flag_off_ckpt_reentrant", "static_graph") == ("works", "")
