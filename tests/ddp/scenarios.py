"""Tiny, deterministic DDP scenarios that trigger (or avoid) the unused-parameter errors.

Each scenario is a seeded model plus a step function. The same step function runs
under real DistributedDataParallel (one call per rank) and on one plain process for
the reference (one call per rank's batch, each loss scaled by 1/world_size), so the
reference is exactly the math DDP's gradient averaging should reproduce.

A fix is a set of fix ids (``"a+b"`` on the command line). Every fix is either a DDP
keyword, set by running the printed constructor snippet (printed.ddp_kwargs), or one
visible ``if FIX in fixes:`` branch in a model or step function below, so a printed code
snippet can be mapped to the line it stands for; the generic zero-weighted term runs as
printed too (printed.add_zero_term).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

# Fix ids: stable, shared with the knowledge base (rules/fixes.yaml).
FIND_UNUSED = "find_unused_parameters"
STATIC_GRAPH = "static_graph"
SUM_LOSSES = "sum_losses_single_backward"
NO_SYNC_FIRST = "no_sync_first_backward"
ZERO_WEIGHT_AUX = "zero_weight_aux_loss"
INCLUDE_ALL_TASKS = "include_all_task_losses"
DROP_UNUSED_OUTPUTS = "drop_unused_outputs"
REMOVE_UNUSED_MODULE = "remove_unused_module"
FREEZE_BEFORE_WRAPPING = "freeze_before_wrapping"
CHECKPOINT_NON_REENTRANT = "checkpoint_non_reentrant"
TIE_BEFORE_WRAPPING = "tie_before_wrapping"
DISABLE_FIND_UNUSED = "disable_find_unused"
LOSS_FROM_OUTPUTS = "loss_from_forward_outputs"
# Not a rules fix: the no_sync() that users try first, around the first backward only
# (the forward outside it). Measured so the difference to the snippet stays on record.
NO_SYNC_BACKWARD_ONLY = "no_sync_backward_only"
# Not a rules fix: static_graph=True is in the user's constructor, but ddp-doctor was not
# told, so a later snippet is printed as for anyone (printed.py). `static_graph` before a
# fix means the user did say so (a follow-up).
STATIC_GRAPH_UNTOLD = "static_graph_untold"

FIX_IDS = (
    FIND_UNUSED,
    STATIC_GRAPH,
    SUM_LOSSES,
    NO_SYNC_FIRST,
    ZERO_WEIGHT_AUX,
    INCLUDE_ALL_TASKS,
    DROP_UNUSED_OUTPUTS,
    REMOVE_UNUSED_MODULE,
    FREEZE_BEFORE_WRAPPING,
    CHECKPOINT_NON_REENTRANT,
    TIE_BEFORE_WRAPPING,
    DISABLE_FIND_UNUSED,
    LOSS_FROM_OUTPUTS,
    NO_SYNC_BACKWARD_ONLY,
    STATIC_GRAPH_UNTOLD,
)

# Fixes that mean to leave the training math as the user wrote it (they only change how
# DDP is told about it). Their run must equal the single-process run of the UNFIXED code:
# e.g. a zero-weighted term that makes AdamW decay an unused module is caught here.
MATH_NEUTRAL = frozenset(
    {
        FIND_UNUSED,
        STATIC_GRAPH,
        SUM_LOSSES,
        NO_SYNC_FIRST,
        NO_SYNC_BACKWARD_ONLY,
        ZERO_WEIGHT_AUX,
        DISABLE_FIND_UNUSED,
        STATIC_GRAPH_UNTOLD,
    }
)

Fixes = frozenset  # of fix ids
IN, HID, OUT = 8, 16, 4
BATCH = 4
LR = 0.1


def parse_fixes(text: str | None) -> frozenset[str]:
    """``"a+b"`` -> {"a", "b"}; None or "" or "none" -> no fix."""
    if not text or text == "none":
        return frozenset()
    fixes = frozenset(part.strip() for part in text.split("+"))
    unknown = fixes - set(FIX_IDS)
    if unknown:
        raise ValueError(f"unknown fix id(s): {sorted(unknown)}; known: {FIX_IDS}")
    return fixes


def intended_math(fix: str | None) -> str | None:
    """The fix combination whose single-process run is the reference for `fix`."""
    kept = sorted(parse_fixes(fix) - MATH_NEUTRAL)
    return "+".join(kept) or None


def no_sync_if_ddp(model: nn.Module):
    """``model.no_sync()`` under DDP; nothing on the plain reference model."""
    return model.no_sync() if hasattr(model, "no_sync") else contextlib.nullcontext()


def regression_batch(rank: int, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    # One generator per (rank, step): every process and the reference see the same data.
    gen = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(BATCH, IN, generator=gen), torch.randn(BATCH, OUT, generator=gen)


def token_batch(rank: int, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(1000 * step + rank)
    tokens = torch.randint(0, VOCAB, (BATCH, 5), generator=gen)
    return tokens, torch.randint(0, VOCAB, (BATCH, 5), generator=gen)


# --------------------------------------------------------------------------- models


class UnusedModule(nn.Module):
    """`unused` is registered but never called in forward."""

    def __init__(self, fixes):
        super().__init__()
        self.body = nn.Linear(IN, HID)
        self.head = nn.Linear(HID, OUT)
        self.unused = nn.Linear(HID, OUT)
        if REMOVE_UNUSED_MODULE in fixes:
            del self.unused  # fix: the module is not needed, so it is not there
        if FREEZE_BEFORE_WRAPPING in fixes:
            # fix: frozen before DDP sees it, as the two fixes print it for the real error
            _freeze_as_printed(
                self, (REMOVE_UNUSED_MODULE, FREEZE_BEFORE_WRAPPING), "unused_module"
            )

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


class AuxOutput(nn.Module):
    """forward returns (main, aux); the aux head's output is ignored by the loss."""

    def __init__(self, fixes):
        super().__init__()
        self.body = nn.Linear(IN, HID)
        self.main_head = nn.Linear(HID, OUT)
        self.aux_head = nn.Linear(HID, OUT)
        self.return_aux = DROP_UNUSED_OUTPUTS not in fixes

    def forward(self, x):
        h = torch.relu(self.body(x))
        if not self.return_aux:
            return self.main_head(h)  # fix: the aux output is neither computed nor returned
        return self.main_head(h), self.aux_head(h)


class ReentrantBlock(nn.Module):
    """A middle block under checkpoint(use_reentrant=True), as gradient checkpointing on in an
    LLM fine-tune; the fix `checkpoint_non_reentrant` makes it non-reentrant (`reentrant=False`:
    the user's code already is)."""

    def __init__(self, fixes, reentrant: bool = True):
        super().__init__()
        self.block = nn.Linear(HID, HID)
        self.reentrant = reentrant and CHECKPOINT_NON_REENTRANT not in fixes

    def _run(self, h):
        return torch.relu(self.block(h))

    def forward(self, h):
        return checkpoint(self._run, h, use_reentrant=self.reentrant)


class AuxOutputCheckpointed(AuxOutput):
    """`AuxOutput` with a `ReentrantBlock` after the body."""

    def __init__(self, fixes, reentrant: bool = True):
        super().__init__(fixes)
        self.middle = ReentrantBlock(fixes, reentrant)

    def forward(self, x):
        h = self.middle(torch.relu(self.body(x)))
        if not self.return_aux:
            return self.main_head(h)
        return self.main_head(h), self.aux_head(h)


class AuxOutputComputedNotReturned(AuxOutput):
    """Fix-4 half-way: aux computed (its parameters are in the graph) but not returned."""

    def forward(self, x):
        h = torch.relu(self.body(x))
        main, aux = self.main_head(h), self.aux_head(h)
        return main if not self.return_aux else (main, aux)


class Outputs:
    """A plain container DDP cannot look into (not a tuple, dict or dataclass)."""

    def __init__(self, main, aux):
        self.main, self.aux = main, aux


class AuxOutputInObject(AuxOutput):
    def __init__(self, fixes):
        super().__init__(fixes)
        self.plain = LOSS_FROM_OUTPUTS in fixes

    def forward(self, x):
        h = torch.relu(self.body(x))
        if self.plain:
            return self.main_head(h), self.aux_head(h)  # fix: plain tensors DDP can see
        return Outputs(self.main_head(h), self.aux_head(h))


def step_object_output(model, batch, step, rank, fixes, scale):
    x, y = batch
    out = model(x)
    main = out[0] if isinstance(out, tuple) else out.main
    loss = F.mse_loss(main, y)  # the aux output is ignored
    (loss * scale).backward()
    return loss.item()


class TwoTasks(nn.Module):
    def __init__(self, fixes):
        super().__init__()
        self.body = nn.Linear(IN, HID)
        self.head_a = nn.Linear(HID, OUT)
        self.head_b = nn.Linear(HID, OUT)

    def forward(self, x):
        h = torch.relu(self.body(x))
        return {"a": self.head_a(h), "b": self.head_b(h)}


class MultiTaskLoss(nn.Module):
    """The seed's CSDN case: the loss is its own module and forgets task b."""

    def __init__(self, fixes):
        super().__init__()
        self.fixes = fixes

    def forward(self, out, y):
        loss_a = F.mse_loss(out["a"], y)
        loss_b = F.mse_loss(out["b"], y.flip(1))
        if INCLUDE_ALL_TASKS in self.fixes:
            return loss_a + loss_b  # fix 5: every task's loss goes into the total
        if ZERO_WEIGHT_AUX in self.fixes:
            return loss_a + 0 * loss_b  # fix 6: head_b takes part with zero gradient
        return loss_a  # the bug: loss_b is computed and dropped


class FeatureThenOutput(nn.Module):
    """The seed author's model: loss1 comes from an intermediate feature map, loss2 from
    the final output, so loss2 reaches every parameter and loss1 only the stem."""

    def __init__(self, fixes):
        super().__init__()
        self.stem = nn.Linear(IN, HID)
        self.tail = nn.Linear(HID, HID)
        self.out = nn.Linear(HID, OUT)

    def forward(self, x):
        h = torch.relu(self.stem(x))
        feat_logit = h.mean(dim=1, keepdim=True)  # a "logit" read off the feature map
        return feat_logit, self.out(torch.relu(self.tail(h)))


class FeatureThenOutputBranchy(FeatureThenOutput):
    """The seed's model with a branch: `extra` joins the output only when the caller says so."""

    def __init__(self, fixes):
        super().__init__(fixes)
        self.extra = nn.Linear(HID, OUT)

    def forward(self, x, use_extra: bool):
        h = torch.relu(self.stem(x))
        feat_logit = h.mean(dim=1, keepdim=True)
        out = self.out(torch.relu(self.tail(h)))
        return feat_logit, (out + self.extra(h) if use_extra else out)


class FeatureHeadThenOutput(nn.Module):
    """Variant: loss1 goes through its own small head that loss2 never reaches."""

    def __init__(self, fixes):
        super().__init__()
        self.stem = nn.Linear(IN, HID)
        self.feat_head = nn.Linear(HID, 1)
        self.tail = nn.Linear(HID, HID)
        self.out = nn.Linear(HID, OUT)

    def forward(self, x):
        h = torch.relu(self.stem(x))
        return self.feat_head(h), self.out(torch.relu(self.tail(h)))


class Branchy(nn.Module):
    """`extra` is used only when the caller says so (some steps, or some ranks)."""

    def __init__(self, fixes):
        super().__init__()
        self.body = nn.Linear(IN, HID)
        self.head = nn.Linear(HID, OUT)
        self.extra = nn.Linear(HID, OUT)

    def forward(self, x, use_extra: bool):
        h = torch.relu(self.body(x))
        out = self.head(h)
        if use_extra:
            return out + self.extra(h)
        return out  # fix 6 (zero_weight_aux_loss) runs as printed, in the step functions


class BranchyCheckpointed(Branchy):
    """`Branchy` with a `ReentrantBlock` after the body (an MoE or LayerDrop model fine-tuned
    with gradient checkpointing on)."""

    def __init__(self, fixes, reentrant: bool = True):
        super().__init__(fixes)
        self.middle = ReentrantBlock(fixes, reentrant)

    def forward(self, x, use_extra: bool):
        h = self.middle(torch.relu(self.body(x)))
        out = self.head(h)
        if use_extra:
            return out + self.extra(h)
        return out


class Checkpointed(nn.Module):
    """`block` is reused in two checkpointed segments (the case reducer.cpp warns about)."""

    def __init__(self, fixes, use_reentrant: bool):
        super().__init__()
        self.stem = nn.Linear(IN, HID)
        self.block = nn.Linear(HID, HID)
        self.head = nn.Linear(HID, OUT)
        # fix: use_reentrant=False
        self.use_reentrant = use_reentrant and CHECKPOINT_NON_REENTRANT not in fixes

    def _segment(self, h):
        return torch.relu(self.block(h))

    def forward(self, x):
        h = torch.relu(self.stem(x))
        h = checkpoint(self._segment, h, use_reentrant=self.use_reentrant)
        h = checkpoint(self._segment, h, use_reentrant=self.use_reentrant)
        return self.head(h)


class CheckpointedInput(nn.Module):
    """Reentrant checkpoint straight on the raw input, which does not require grad:
    torch warns "None of the inputs have requires_grad=True" and the stem inside the
    checkpoint gets no gradient at all."""

    def __init__(self, fixes):
        super().__init__()
        self.stem = nn.Linear(IN, HID)
        self.head = nn.Linear(HID, OUT)
        # fix: use_reentrant=False
        self.use_reentrant = CHECKPOINT_NON_REENTRANT not in fixes

    def _stem(self, x):
        return torch.relu(self.stem(x))

    def forward(self, x):
        h = checkpoint(self._stem, x, use_reentrant=self.use_reentrant)
        return self.head(h)


class CheckpointedMiddle(nn.Module):
    """One middle block under checkpoint, used once (the everyday way to save memory)."""

    def __init__(self, fixes, use_reentrant: bool):
        super().__init__()
        self.stem = nn.Linear(IN, HID)
        self.block = nn.Linear(HID, HID)
        self.head = nn.Linear(HID, OUT)
        # fix: use_reentrant=False
        self.use_reentrant = use_reentrant and CHECKPOINT_NON_REENTRANT not in fixes

    def _block(self, h):
        return torch.relu(self.block(h))

    def forward(self, x):
        h = torch.relu(self.stem(x))
        h = checkpoint(self._block, h, use_reentrant=self.use_reentrant)
        return self.head(h)


class CheckpointedSharedOneSegment(CheckpointedMiddle):
    """The shared block called twice inside ONE reentrant checkpoint segment."""

    def _twice(self, h):
        return torch.relu(self.block(torch.relu(self.block(h))))

    def forward(self, x):
        h = torch.relu(self.stem(x))
        h = checkpoint(self._twice, h, use_reentrant=self.use_reentrant)
        return self.head(h)


VOCAB, EMB = 10, 8


class TiedLM(nn.Module):
    """Embedding and output projection share one weight."""

    def __init__(self, fixes):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, EMB)
        self.mix = nn.Linear(EMB, EMB)
        self.lm_head = nn.Linear(EMB, VOCAB, bias=False)
        self.lm_head.weight = self.emb.weight  # tied before wrapping

    def forward(self, tokens):
        return self.lm_head(torch.tanh(self.mix(self.emb(tokens))))


class TiedLMTiedAfterWrap(TiedLM):
    """Same model, but the weights are tied only after DDP has been built."""

    def __init__(self, fixes):
        super().__init__(fixes)
        self.lm_head.weight = nn.Parameter(self.emb.weight.detach().clone())
        if TIE_BEFORE_WRAPPING in fixes:
            self.lm_head.weight = self.emb.weight  # fix: the model is complete before DDP


class Clean(nn.Module):
    def __init__(self, fixes):
        super().__init__()
        self.body = nn.Linear(IN, HID)
        self.head = nn.Linear(HID, OUT)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


class FrozenLateCheckpointed(nn.Module):
    """A stem, a `ReentrantBlock`, then `body` and `head`: layers frozen after wrapping in a
    model fine-tuned with gradient checkpointing (the block's input comes from a trained
    stem, so checkpointing itself trains it)."""

    def __init__(self, fixes):
        super().__init__()
        self.stem = nn.Linear(IN, HID)
        self.middle = ReentrantBlock(fixes)
        self.body = nn.Linear(HID, HID)
        self.head = nn.Linear(HID, OUT)

    def forward(self, x):
        h = self.middle(torch.relu(self.stem(x)))
        return self.head(torch.relu(self.body(h)))


class HookedFeatures(Clean):
    """A forward hook on `body` keeps its output (feature-matching / distillation style)."""

    def __init__(self, fixes):
        super().__init__(fixes)
        self.features = None
        self.body.register_forward_hook(self._keep)
        self.return_features = LOSS_FROM_OUTPUTS in fixes

    def _keep(self, module, args, output):
        self.features = output

    def forward(self, x):
        out = super().forward(x)
        if self.return_features:
            return out, self.features  # fix: forward returns what the loss uses
        return out


def step_hooked_features(model, batch, step, rank, fixes, scale):
    x, y = batch
    if LOSS_FROM_OUTPUTS in fixes:
        _, features = model(x)  # fix: the loss is built from what forward returns
        loss = features.pow(2).mean()
        (loss * scale).backward()
        return loss.item()
    model(x)  # the returned output is ignored ...
    inner = model.module if hasattr(model, "module") else model
    loss = inner.features.pow(2).mean()  # ... the loss reads the hooked features only
    (loss * scale).backward()
    return loss.item()


N_EXPERTS = 3


class MovingExperts(nn.Module):
    """Mixture-of-Experts-like layer: on each step, on each rank, one expert gets no tokens,
    and which one moves (rank r at step s leaves expert (r + s) % N_EXPERTS idle), as MoE
    routing does. The idle set differs across ranks within a step and across steps."""

    def __init__(self, fixes):
        super().__init__()
        self.body = nn.Linear(IN, HID)
        self.experts = nn.ModuleList(nn.Linear(HID, OUT) for _ in range(N_EXPERTS))

    def forward(self, x, idle: int):
        h = torch.relu(self.body(x))
        return sum(e(h) for i, e in enumerate(self.experts) if i != idle)


class DataChosenHead(nn.Module):
    """`pos_head` runs only when the batch holds a positive label: each rank's own data
    decides, so the ranks disagree on some steps and agree on others."""

    def __init__(self, fixes):
        super().__init__()
        self.body = nn.Linear(IN, HID)
        self.head = nn.Linear(HID, OUT)
        self.pos_head = nn.Linear(HID, OUT)

    def forward(self, x, labels):
        h = torch.relu(self.body(x))
        out = self.head(h)
        if bool((labels > 0).any()):  # the data decides the branch
            out = out + self.pos_head(h)
        return out


LABEL_SEED = 6


def labelled_batch(rank: int, step: int):
    """(x, y, labels): a label is positive when a draw exceeds 1.0 (about 1 in 6), so a
    batch of 4 holds one about half the time. The seed offset is chosen so that over 3 steps
    both ranks run pos_head on step 0, only rank 1 on step 1, only rank 0 on step 2
    (data_chosen_pattern(); test_scenarios_reproduce.py checks it)."""
    gen = torch.Generator().manual_seed(1000 * step + rank + LABEL_SEED)
    x, y = torch.randn(BATCH, IN, generator=gen), torch.randn(BATCH, OUT, generator=gen)
    return x, y, (torch.randn(BATCH, generator=gen) > 1.0).long()


def data_chosen_pattern(steps: int = 3, world_size: int = 2) -> list[list[bool]]:
    """[step][rank] -> does that rank's batch hold a positive label (pos_head runs)?"""
    return [
        [bool((labelled_batch(r, s)[2] > 0).any()) for r in range(world_size)] for s in range(steps)
    ]


def _with_printed_zero_term(model, loss, fixes, scenario):
    """fixes.yaml `zero_weight_aux_loss`, the generic form as ddp-doctor prints it for this
    scenario's real error (tests/ddp/printed.py); nothing on the reference model."""
    if ZERO_WEIGHT_AUX in fixes and hasattr(model, "module"):
        import printed

        return printed.add_zero_term(model, loss, scenario)
    return loss


def step_moving_experts(model, batch, step, rank, fixes, scale):
    x, y = batch
    loss = F.mse_loss(model(x, idle=(rank + step) % N_EXPERTS), y)
    loss = _with_printed_zero_term(model, loss, fixes, "branch_moving_ranks")
    (loss * scale).backward()
    return loss.item()


def step_data_chosen(model, batch, step, rank, fixes, scale):
    x, y, labels = batch
    loss = F.mse_loss(model(x, labels), y)
    loss = _with_printed_zero_term(model, loss, fixes, "branch_data_chosen")
    (loss * scale).backward()
    return loss.item()


# ------------------------------------------------------------------ step functions
# step(model, batch, step, rank, fixes, scale) runs forward and backward(s) and
# returns the loss value to print; `scale` is 1 under DDP and 1/world_size for the
# reference. Gradients accumulate; the caller zeroes them and steps the optimizer.


def step_single_output(model, batch, step, rank, fixes, scale):
    x, y = batch
    loss = F.mse_loss(model(x), y)
    (loss * scale).backward()
    return loss.item()


def step_unused_module(model, batch, step, rank, fixes, scale):
    x, y = batch
    loss = F.mse_loss(model(x), y)
    # fix 6, generic form, as printed for this model's real error
    loss = _with_printed_zero_term(model, loss, fixes, "unused_module")
    (loss * scale).backward()
    return loss.item()


def step_aux_output(model, batch, step, rank, fixes, scale):
    x, y = batch
    out = model(x)
    if isinstance(out, tuple):
        main, aux = out
        loss = F.mse_loss(main, y)  # the bug: aux is returned but ignored
        if ZERO_WEIGHT_AUX in fixes:
            loss = loss + 0 * aux.mean()  # fix 6
    else:
        loss = F.mse_loss(out, y)
    (loss * scale).backward()
    return loss.item()


def make_step_multitask():
    criterion_by_fixes: dict = {}

    def step(model, batch, step, rank, fixes, scale):
        criterion = criterion_by_fixes.setdefault(fixes, MultiTaskLoss(fixes))
        x, y = batch
        loss = criterion(model(x), y)
        (loss * scale).backward()
        return loss.item()

    return step


def _adv_loss(logit):
    # The seed's auxiliary loss shape: softplus(-logit).mean().
    return F.softplus(-logit).mean()


def step_two_backward_two_forwards(model, batch, step, rank, fixes, scale):
    """Seed case, GAN style: forward, backward(loss1 from the feature logit); forward
    again, backward(loss2 from the final output); one optimizer step afterwards."""
    x, y = batch
    if SUM_LOSSES in fixes:
        feat_logit, out = model(x)  # fix: one forward, one backward over the sum
        loss = _adv_loss(feat_logit) + F.mse_loss(out, y)
        (loss * scale).backward()
        return loss.item()
    first = no_sync_if_ddp(model) if NO_SYNC_FIRST in fixes else contextlib.nullcontext()
    with first:  # fix: no_sync around the first forward+backward
        feat_logit, out = model(x)
        loss1 = _adv_loss(feat_logit)
        if ZERO_WEIGHT_AUX in fixes:
            loss1 = loss1 + _adv_loss(out) * 0  # fix 6, as in the seed
        (loss1 * scale).backward()
    _, out = model(x)
    loss2 = F.mse_loss(out, y)
    (loss2 * scale).backward()
    return loss1.item() + loss2.item()


def step_two_backward_retain_graph(model, batch, step, rank, fixes, scale):
    """Seed case, one forward: backward(loss1, retain_graph=True) then backward(loss2)."""
    x, y = batch
    if NO_SYNC_FIRST in fixes:
        return _no_sync_snippet(model, x, y, scale)  # fix: what the printed snippet says
    feat_logit, out = model(x)
    loss1 = _adv_loss(feat_logit)
    loss2 = F.mse_loss(out, y)
    if SUM_LOSSES in fixes:
        ((loss1 + loss2) * scale).backward()  # fix: one backward over the sum
        return loss1.item() + loss2.item()
    if ZERO_WEIGHT_AUX in fixes:
        loss1 = loss1 + _adv_loss(out) * 0  # fix 6, as in the seed
    # What users try: no_sync around the first backward only (the forward is outside).
    first = no_sync_if_ddp(model) if NO_SYNC_BACKWARD_ONLY in fixes else contextlib.nullcontext()
    with first:
        (loss1 * scale).backward(retain_graph=True)
    (loss2 * scale).backward()
    return loss1.item() + loss2.item()


def _two_backward_branch(model, batch, fixes, scale, use_extra: bool):
    """Two backward calls on one forward AND a branch; the fix sums the losses into one
    backward (the flag, a DDP keyword, comes from the constructor)."""
    x, y = batch
    feat_logit, out = model(x, use_extra=use_extra)
    loss1 = _adv_loss(feat_logit)
    loss2 = F.mse_loss(out, y)
    if SUM_LOSSES in fixes:
        ((loss1 + loss2) * scale).backward()  # fix: one backward over the sum
        return loss1.item() + loss2.item()
    (loss1 * scale).backward(retain_graph=True)
    (loss2 * scale).backward()
    return loss1.item() + loss2.item()


def step_two_backward_branch_steps(model, batch, step, rank, fixes, scale):
    return _two_backward_branch(model, batch, fixes, scale, use_extra=step % 2 == 0)


def step_two_backward_branch_ranks(model, batch, step, rank, fixes, scale):
    return _two_backward_branch(model, batch, fixes, scale, use_extra=rank == 0)


def _no_sync_snippet(model, x, y, scale):
    """fixes.yaml `no_sync_first_backward`, line for line: the first forward AND backward
    inside `model.no_sync()`, the last forward and backward outside."""
    with no_sync_if_ddp(model):  # forward AND backward inside: gradients stay local
        feat, _ = model(x)
        loss1 = _adv_loss(feat)
        (loss1 * scale).backward()
    _, out = model(x)  # last forward + backward outside: accumulated grads are averaged
    loss2 = F.mse_loss(out, y)
    (loss2 * scale).backward()
    return loss1.item() + loss2.item()


def step_two_backward_no_retain(model, batch, step, rank, fixes, scale):
    """One forward, then loss1.backward() and loss2.backward() without retain_graph: the
    second backward runs through a graph the first one freed."""
    x, y = batch
    if NO_SYNC_FIRST in fixes:
        return _no_sync_snippet(model, x, y, scale)
    feat_logit, out = model(x)
    loss1 = _adv_loss(feat_logit)
    loss2 = F.mse_loss(out, y)
    if SUM_LOSSES in fixes:
        ((loss1 + loss2) * scale).backward()  # fix: one backward over the sum
        return loss1.item() + loss2.item()
    if ZERO_WEIGHT_AUX in fixes:
        loss1 = loss1 + _adv_loss(out) * 0  # fix 6, as in the seed
    (loss1 * scale).backward()  # the bug: no retain_graph, and a second backward follows
    (loss2 * scale).backward()
    return loss1.item() + loss2.item()


def step_branch_some_steps(model, batch, step, rank, fixes, scale):
    x, y = batch
    loss = F.mse_loss(model(x, use_extra=step % 2 == 0), y)  # extra on even steps
    loss = _with_printed_zero_term(model, loss, fixes, "branch_some_steps")
    (loss * scale).backward()
    return loss.item()


def step_branch_odd_steps(model, batch, step, rank, fixes, scale):
    x, y = batch
    loss = F.mse_loss(model(x, use_extra=step % 2 == 1), y)  # extra skipped on step 0
    loss = _with_printed_zero_term(model, loss, fixes, "branch_some_steps")
    (loss * scale).backward()
    return loss.item()


def step_branch_some_ranks(model, batch, step, rank, fixes, scale):
    x, y = batch
    loss = F.mse_loss(model(x, use_extra=rank == 1), y)  # extra only on rank 1
    loss = _with_printed_zero_term(model, loss, fixes, "branch_some_ranks")
    (loss * scale).backward()
    return loss.item()


def step_extra_forward(model, batch, step, rank, fixes, scale):
    """An extra forward with grad enabled whose output is never backpropagated
    (a metric, a teacher pass, a logging call) before the real forward+backward."""
    x, y = batch
    model(x).sum().item()  # the bug: should be under torch.no_grad()
    loss = F.mse_loss(model(x), y)
    (loss * scale).backward()
    return loss.item()


def step_tokens(model, batch, step, rank, fixes, scale):
    tokens, targets = batch
    logits = model(tokens)
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))
    (loss * scale).backward()
    return loss.item()


# --------------------------------------------------------------- after-wrap hooks
# after_wrap(module, fixes) runs on the inner module right after DDP is built (and on
# the reference model at the same point), to mimic code that changes a model late.


def freeze_body_after_wrap(module, fixes):
    if FREEZE_BEFORE_WRAPPING not in fixes:
        module.body.requires_grad_(False)  # the bug: DDP already registered body's params


def freeze_body_before_wrap(module, fixes):
    if FREEZE_BEFORE_WRAPPING in fixes:
        # fix: freeze first, then wrap, as printed for the real error (it names `body`)
        _freeze_as_printed(module, (FREEZE_BEFORE_WRAPPING,), "requires_grad_after_wrap")


def _freeze_as_printed(model, fix_ids, scenario):
    import printed

    printed.freeze_as_printed(model, fix_ids, scenario)


def tie_after_wrap(module, fixes):
    if TIE_BEFORE_WRAPPING not in fixes:
        module.lm_head.weight = module.emb.weight  # the bug: DDP still holds the old weight


# -------------------------------------------------------------- schedules
# schedule(module, step, fixes) runs on the inner module at the start of `step` (before
# zero_grad), on every rank and in the reference. It returns True when the code rebuilds
# the DDP wrapper after the change (the `freeze_before_wrapping` fix: "build a new
# DistributedDataParallel at each switch"); run_scenario then wraps the module again.


def unfreeze_body_at_step_1(module, step, fixes) -> bool:
    if step != 1:
        return False
    module.body.requires_grad_(True)  # stage 2: the frozen body starts training
    return FREEZE_BEFORE_WRAPPING in fixes  # fix: wrap again after changing the flag


def freeze_body_at_step_1(module, step, fixes) -> bool:
    if step != 1:
        return False
    module.body.requires_grad_(False)  # stage 2: the body stops training
    return FREEZE_BEFORE_WRAPPING in fixes  # fix: wrap again after changing the flag


def freeze_body_always(module, fixes):
    module.body.requires_grad_(False)  # stage 1 (before wrapping): the body is frozen


# ---------------------------------------------------------------------- registry


@dataclass(frozen=True)
class Scenario:
    name: str
    make_model: Callable[[frozenset], nn.Module]
    step: Callable
    batch: Callable = regression_batch
    before_wrap: Callable | None = None
    after_wrap: Callable | None = None
    base_ddp_kwargs: dict = field(default_factory=dict)
    # Fix combinations worth measuring ("" = no fix).
    fixes_to_measure: tuple[str, ...] = ("",)
    description: str = ""
    schedule: Callable | None = None
    optimizer: str = "sgd"  # "sgd" (lr 0.1, no momentum) or "adamw" (weight decay)
    set_to_none: bool = True  # optimizer.zero_grad(set_to_none=...)
    # parameter-name prefixes the user means to train: a run that leaves them at their
    # initial values trains wrongly even when it matches its own reference
    must_train: tuple[str, ...] = ()


def _scenarios() -> dict[str, Scenario]:
    items = [
        Scenario(
            "unused_module",
            UnusedModule,
            step_unused_module,
            fixes_to_measure=(
                "",
                FIND_UNUSED,
                STATIC_GRAPH,
                REMOVE_UNUSED_MODULE,
                FREEZE_BEFORE_WRAPPING,
                ZERO_WEIGHT_AUX,
                f"{ZERO_WEIGHT_AUX}+{FIND_UNUSED}",
                # forward returns a plain tensor and the loss uses only it: the fix's first
                # part is what this code already does, its second the flag
                f"{LOSS_FROM_OUTPUTS}+{FIND_UNUSED}",
            ),
            description="a registered submodule never called in forward",
        ),
        Scenario(
            "unused_forward_output",
            AuxOutput,
            step_aux_output,
            fixes_to_measure=(
                "",
                FIND_UNUSED,
                STATIC_GRAPH,
                ZERO_WEIGHT_AUX,
                DROP_UNUSED_OUTPUTS,
                f"{DROP_UNUSED_OUTPUTS}+{FIND_UNUSED}",
                f"{ZERO_WEIGHT_AUX}+{STATIC_GRAPH}",
                # forward already returns plain tensors and the loss uses only returned
                # values: the fix's first part is what this code already does, its second the flag
                f"{LOSS_FROM_OUTPUTS}+{FIND_UNUSED}",
            ),
            description="forward returns (main, aux); the loss uses only main",
        ),
        Scenario(
            "unused_forward_output_computed",
            AuxOutputComputedNotReturned,
            step_aux_output,
            fixes_to_measure=(
                DROP_UNUSED_OUTPUTS,
                f"{DROP_UNUSED_OUTPUTS}+{FIND_UNUSED}",
            ),
            description="variant of fix 4: aux still computed in forward, not returned",
        ),
        Scenario(
            "unused_output_in_object",
            AuxOutputInObject,
            step_object_output,
            fixes_to_measure=(
                "",
                FIND_UNUSED,
                STATIC_GRAPH,
                LOSS_FROM_OUTPUTS,
                f"{LOSS_FROM_OUTPUTS}+{FIND_UNUSED}",
            ),
            description="forward returns a plain object DDP cannot search; aux ignored",
        ),
        Scenario(
            "loss_from_hooked_features",
            HookedFeatures,
            step_hooked_features,
            fixes_to_measure=(
                "",
                FIND_UNUSED,
                STATIC_GRAPH,
                LOSS_FROM_OUTPUTS,
                f"{LOSS_FROM_OUTPUTS}+{FIND_UNUSED}",
            ),
            description="loss built from forward-hook features, not from forward's output",
        ),
        Scenario(
            "multitask_missing_loss",
            TwoTasks,
            make_step_multitask(),
            fixes_to_measure=(
                "",
                FIND_UNUSED,
                STATIC_GRAPH,
                INCLUDE_ALL_TASKS,
                ZERO_WEIGHT_AUX,
            ),
            must_train=("head_b.",),
            description="an nn.Module loss forgets one task's loss",
        ),
        Scenario(
            "two_backward_intermediate",
            FeatureThenOutput,
            step_two_backward_two_forwards,
            fixes_to_measure=(
                "",
                FIND_UNUSED,
                STATIC_GRAPH,
                SUM_LOSSES,
                NO_SYNC_FIRST,
                ZERO_WEIGHT_AUX,
                f"{ZERO_WEIGHT_AUX}+{STATIC_GRAPH}",
            ),
            description="two forward+backward per step, loss1 from the intermediate features",
        ),
        Scenario(
            "two_backward_intermediate_head",
            FeatureHeadThenOutput,
            step_two_backward_two_forwards,
            fixes_to_measure=(
                "",
                FIND_UNUSED,
                SUM_LOSSES,
                NO_SYNC_FIRST,
                f"{NO_SYNC_FIRST}+{FIND_UNUSED}",
                ZERO_WEIGHT_AUX,
                f"{ZERO_WEIGHT_AUX}+{FIND_UNUSED}",
            ),
            description="as two_backward_intermediate, loss1 through a head loss2 misses",
        ),
        Scenario(
            "two_backward_retain_graph",
            FeatureThenOutput,
            step_two_backward_retain_graph,
            fixes_to_measure=(
                "",
                FIND_UNUSED,
                STATIC_GRAPH,
                SUM_LOSSES,
                NO_SYNC_FIRST,
                NO_SYNC_BACKWARD_ONLY,
                ZERO_WEIGHT_AUX,
                f"{ZERO_WEIGHT_AUX}+{STATIC_GRAPH}",
                f"{SUM_LOSSES}+{FIND_UNUSED}",
            ),
            description="one forward, backward(loss1, retain_graph=True), backward(loss2)",
        ),
        Scenario(
            "two_backward_branch_steps",
            FeatureThenOutputBranchy,
            step_two_backward_branch_steps,
            fixes_to_measure=("", FIND_UNUSED, SUM_LOSSES, f"{SUM_LOSSES}+{FIND_UNUSED}"),
            description="two_backward_retain_graph with a branch taken on even steps",
        ),
        Scenario(
            "two_backward_branch_ranks",
            FeatureThenOutputBranchy,
            step_two_backward_branch_ranks,
            fixes_to_measure=("", FIND_UNUSED, SUM_LOSSES, f"{SUM_LOSSES}+{FIND_UNUSED}"),
            description="two_backward_retain_graph with a branch taken on rank 0 only",
        ),
        Scenario(
            "branch_some_steps",
            Branchy,
            step_branch_some_steps,
            fixes_to_measure=(
                "",
                FIND_UNUSED,
                STATIC_GRAPH,
                ZERO_WEIGHT_AUX,
                f"{ZERO_WEIGHT_AUX}+{FIND_UNUSED}",
            ),
            description="`extra` used on even steps only, on every rank",
        ),
        Scenario(
            "unused_forward_output_ckpt_reentrant",
            AuxOutputCheckpointed,
            step_aux_output,
            fixes_to_measure=(
                "",
                FIND_UNUSED,
                f"{DROP_UNUSED_OUTPUTS}+{FIND_UNUSED}",
                f"{CHECKPOINT_NON_REENTRANT}+{FIND_UNUSED}",
            ),
            description="unused_forward_output with a middle block under checkpoint(use_reentrant=True)",
        ),
        # the same two models with the block already non-reentrant: the flag alone is the fix
        # (and "use_reentrant=False" changes nothing), whatever kind the user could not name
        Scenario(
            "unused_forward_output_ckpt_non_reentrant",
            lambda fixes: AuxOutputCheckpointed(fixes, reentrant=False),
            step_aux_output,
            fixes_to_measure=("", FIND_UNUSED, f"{CHECKPOINT_NON_REENTRANT}+{FIND_UNUSED}"),
            description="unused_forward_output with a middle block under checkpoint(use_reentrant=False)",
        ),
        Scenario(
            "branch_some_steps_ckpt_non_reentrant",
            lambda fixes: BranchyCheckpointed(fixes, reentrant=False),
            step_branch_some_steps,
            fixes_to_measure=("", FIND_UNUSED, f"{CHECKPOINT_NON_REENTRANT}+{FIND_UNUSED}"),
            description="branch_some_steps with a middle block under checkpoint(use_reentrant=False)",
        ),
        Scenario(
            "branch_some_steps_ckpt_reentrant",
            BranchyCheckpointed,
            step_branch_some_steps,
            fixes_to_measure=("", FIND_UNUSED, f"{CHECKPOINT_NON_REENTRANT}+{FIND_UNUSED}"),
            description="branch_some_steps with a middle block under checkpoint(use_reentrant=True)",
        ),
        Scenario(
            "branch_odd_steps",
            Branchy,
            step_branch_odd_steps,
            fixes_to_measure=("", FIND_UNUSED, STATIC_GRAPH),
            description="`extra` skipped on step 0, used on odd steps",
        ),
        Scenario(
            "branch_some_ranks",
            Branchy,
            step_branch_some_ranks,
            fixes_to_measure=("", FIND_UNUSED, STATIC_GRAPH, ZERO_WEIGHT_AUX),
            description="`extra` used on rank 1 only",
        ),
        Scenario(
            "requires_grad_after_wrap",
            Clean,
            step_single_output,
            before_wrap=freeze_body_before_wrap,
            after_wrap=freeze_body_after_wrap,
            fixes_to_measure=("", FIND_UNUSED, STATIC_GRAPH, FREEZE_BEFORE_WRAPPING),
            description="body.requires_grad_(False) after DDP(...)",
        ),
        Scenario(
            "requires_grad_after_wrap_ckpt_reentrant",
            FrozenLateCheckpointed,
            step_single_output,
            before_wrap=freeze_body_before_wrap,
            after_wrap=freeze_body_after_wrap,
            fixes_to_measure=(
                "",
                FIND_UNUSED,
                STATIC_GRAPH,
                FREEZE_BEFORE_WRAPPING,
                f"{CHECKPOINT_NON_REENTRANT}+{FIND_UNUSED}",
            ),
            description="requires_grad_after_wrap with a block under checkpoint(use_reentrant=True)",
        ),
        Scenario(
            "checkpoint_reentrant",
            lambda fixes: Checkpointed(fixes, use_reentrant=True),
            step_single_output,
            fixes_to_measure=(
                "",
                FIND_UNUSED,
                STATIC_GRAPH,
                CHECKPOINT_NON_REENTRANT,
                f"{CHECKPOINT_NON_REENTRANT}+{FIND_UNUSED}",
            ),
            description="block reused in two checkpoint(use_reentrant=True) segments",
        ),
        Scenario(
            "checkpoint_non_reentrant",
            lambda fixes: Checkpointed(fixes, use_reentrant=False),
            step_single_output,
            fixes_to_measure=("", FIND_UNUSED, STATIC_GRAPH),
            description="block reused in two checkpoint(use_reentrant=False) segments",
        ),
        Scenario(
            "tied_weights",
            TiedLM,
            step_tokens,
            batch=token_batch,
            fixes_to_measure=("", FIND_UNUSED, STATIC_GRAPH),
            description="embedding and lm_head share one weight, tied before wrapping",
        ),
        Scenario(
            "tied_weights_after_wrap",
            TiedLMTiedAfterWrap,
            step_tokens,
            batch=token_batch,
            after_wrap=tie_after_wrap,
            fixes_to_measure=("", FIND_UNUSED, STATIC_GRAPH, TIE_BEFORE_WRAPPING),
            description="lm_head.weight = emb.weight assigned after DDP(...)",
        ),
        Scenario(
            "extra_forward_no_backward",
            Clean,
            step_extra_forward,
            fixes_to_measure=("", FIND_UNUSED, STATIC_GRAPH),
            description="a second forward with grad enabled and no backward each step",
        ),
        Scenario(
            "backward_twice_no_retain",
            FeatureThenOutput,
            step_two_backward_no_retain,
            fixes_to_measure=(
                "",
                FIND_UNUSED,
                STATIC_GRAPH,
                SUM_LOSSES,
                NO_SYNC_FIRST,
                ZERO_WEIGHT_AUX,
            ),
            description="one forward, loss1.backward() then loss2.backward(), no retain_graph",
        ),
        Scenario(
            "unfreeze_after_wrap",
            Clean,
            step_single_output,
            before_wrap=freeze_body_always,
            schedule=unfreeze_body_at_step_1,
            fixes_to_measure=("", FIND_UNUSED, STATIC_GRAPH, FREEZE_BEFORE_WRAPPING),
            description="body frozen before DDP(...), unfrozen at step 1 without rewrapping",
        ),
        Scenario(
            "freeze_later_step",
            Clean,
            step_single_output,
            schedule=freeze_body_at_step_1,
            fixes_to_measure=("", FIND_UNUSED, STATIC_GRAPH, FREEZE_BEFORE_WRAPPING),
            description="body.requires_grad_(False) at step 1, long after DDP(...)",
        ),
        Scenario(
            "checkpoint_input_no_grad",
            CheckpointedInput,
            step_single_output,
            fixes_to_measure=(
                "",
                FIND_UNUSED,
                STATIC_GRAPH,
                CHECKPOINT_NON_REENTRANT,
            ),
            must_train=("stem.",),
            description="checkpoint(stem, x, use_reentrant=True) on the raw input",
        ),
        Scenario(
            "checkpoint_middle_reentrant",
            lambda fixes: CheckpointedMiddle(fixes, use_reentrant=True),
            step_single_output,
            fixes_to_measure=("", FIND_UNUSED, STATIC_GRAPH, CHECKPOINT_NON_REENTRANT),
            description="one middle block under checkpoint(use_reentrant=True), used once",
        ),
        Scenario(
            "checkpoint_middle_non_reentrant",
            lambda fixes: CheckpointedMiddle(fixes, use_reentrant=False),
            step_single_output,
            fixes_to_measure=("", FIND_UNUSED, STATIC_GRAPH),
            description="one middle block under checkpoint(use_reentrant=False), used once",
        ),
        Scenario(
            "checkpoint_shared_one_segment",
            lambda fixes: CheckpointedSharedOneSegment(fixes, use_reentrant=True),
            step_single_output,
            fixes_to_measure=("", FIND_UNUSED, STATIC_GRAPH, CHECKPOINT_NON_REENTRANT),
            description="block called twice inside one checkpoint(use_reentrant=True) segment",
        ),
        Scenario(
            "unused_module_adamw",
            UnusedModule,
            step_unused_module,
            optimizer="adamw",
            fixes_to_measure=(
                "",
                FIND_UNUSED,
                STATIC_GRAPH,
                ZERO_WEIGHT_AUX,
                f"{ZERO_WEIGHT_AUX}+{FIND_UNUSED}",
                REMOVE_UNUSED_MODULE,
                FREEZE_BEFORE_WRAPPING,
                f"{LOSS_FROM_OUTPUTS}+{FIND_UNUSED}",  # as in unused_module
            ),
            description="unused_module trained with AdamW (weight decay); zero term as a parameter sum",
        ),
        Scenario(
            "unused_module_adamw_keep_grad",
            UnusedModule,
            step_unused_module,
            optimizer="adamw",
            set_to_none=False,
            fixes_to_measure=("", FIND_UNUSED, ZERO_WEIGHT_AUX),
            description="unused_module, AdamW, optimizer.zero_grad(set_to_none=False)",
        ),
        Scenario(
            "unused_forward_output_adamw",
            AuxOutput,
            step_aux_output,
            optimizer="adamw",
            fixes_to_measure=(
                "",
                FIND_UNUSED,
                ZERO_WEIGHT_AUX,
                f"{ZERO_WEIGHT_AUX}+{FIND_UNUSED}",
                f"{LOSS_FROM_OUTPUTS}+{FIND_UNUSED}",  # as in unused_forward_output
            ),
            description="unused_forward_output with AdamW; zero term on the ignored output",
        ),
        Scenario(
            "branch_some_steps_adamw",
            Branchy,
            step_branch_some_steps,
            optimizer="adamw",
            fixes_to_measure=(
                "",
                FIND_UNUSED,
                ZERO_WEIGHT_AUX,
                f"{ZERO_WEIGHT_AUX}+{FIND_UNUSED}",
            ),
            description="branch_some_steps with AdamW; zero term inside forward",
        ),
        Scenario(
            "branch_moving_ranks",
            MovingExperts,
            step_moving_experts,
            fixes_to_measure=("", FIND_UNUSED, STATIC_GRAPH, ZERO_WEIGHT_AUX),
            description="MoE-like: the idle expert moves with step and rank ((r + s) % 3)",
        ),
        Scenario(
            "branch_data_chosen",
            DataChosenHead,
            step_data_chosen,
            batch=labelled_batch,
            fixes_to_measure=("", FIND_UNUSED, STATIC_GRAPH, ZERO_WEIGHT_AUX),
            description="pos_head runs when the rank's batch has a positive label",
        ),
        Scenario(
            "clean_with_find_unused",
            Clean,
            step_single_output,
            base_ddp_kwargs={"find_unused_parameters": True},
            fixes_to_measure=("",),
            description="nothing unused, find_unused_parameters=True: warning only",
        ),
    ]
    return {s.name: s for s in items}


SCENARIOS = _scenarios()


def build_model(scenario: Scenario, fixes: frozenset[str]) -> nn.Module:
    torch.manual_seed(0)  # same initial weights on every rank and in the reference
    model = scenario.make_model(fixes)
    if scenario.before_wrap:
        scenario.before_wrap(model, fixes)
    return model


ADAMW_LR, ADAMW_WEIGHT_DECAY = 0.01, 0.1


def make_optimizer(scenario: Scenario, module: nn.Module) -> torch.optim.Optimizer:
    if scenario.optimizer == "adamw":
        # weight decay shrinks every parameter that has a gradient, even a zero one: the
        # case where "zero gradient" and "no gradient" differ
        return torch.optim.AdamW(module.parameters(), lr=ADAMW_LR, weight_decay=ADAMW_WEIGHT_DECAY)
    return torch.optim.SGD(module.parameters(), lr=LR)


def param_snapshot(module: nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in module.named_parameters()}


# ============================================================================
# Issue 20: causes that had no measured fix. Kept in one block so it
# merges apart from other scenario work; it extends the registries above.
#
# - buffer_inplace: two forwards through a BatchNorm discriminator before one backward.
#   On torch 2.13 DDP's forward buffer broadcast runs inside
#   torch.autograd._unsafe_preserve_version_counter, so this no longer fails there; the
#   scenarios record that, and what broadcast_buffers=False and the one-forward
#   alternative do to the parameters.
# - framework_config: a framework builds DDP with its new default
#   find_unused_parameters=False for a model that trained under the old default True.
# - debug_detail_crash: TORCH_DISTRIBUTED_DEBUG=DETAIL in the job's environment.
# ============================================================================

BROADCAST_BUFFERS_FALSE = "broadcast_buffers_false"
# Not a rules fix: the alternative the broadcast_buffers_false snippet used to print,
# one forward over torch.cat([real, fake]) split afterwards.
CONCAT_ONE_FORWARD = "concat_one_forward"
DEBUG_LEVEL_INFO = "debug_level_info"
# Not a rules fix: DETAIL set from inside the script after init_process_group (the
# comment in the debug_level_info snippet), the environment variable unset.
DETAIL_AFTER_INIT = "detail_after_init"

FIX_IDS = (
    *FIX_IDS,
    BROADCAST_BUFFERS_FALSE,
    CONCAT_ONE_FORWARD,
    DEBUG_LEVEL_INFO,
    DETAIL_AFTER_INIT,
)
# All four mean the math the user wrote (two separate batches through BatchNorm; the
# same training with another debug level): their reference is the unfixed code's.
MATH_NEUTRAL = MATH_NEUTRAL | {
    BROADCAST_BUFFERS_FALSE,
    CONCAT_ONE_FORWARD,
    DEBUG_LEVEL_INFO,
    DETAIL_AFTER_INIT,
}


class BatchNormDiscriminator(nn.Module):
    """A GAN discriminator with BatchNorm: running statistics are buffers DDP broadcasts
    from rank 0 at the start of every forward (broadcast_buffers=True, the default)."""

    def __init__(self, fixes):
        super().__init__()
        self.body = nn.Linear(IN, HID)
        self.norm = nn.BatchNorm1d(HID)
        self.head = nn.Linear(HID, 1)

    def forward(self, x):
        return self.head(torch.relu(self.norm(self.body(x))))


def real_fake_batch(rank: int, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(1000 * step + rank)
    real = torch.randn(BATCH, IN, generator=gen)
    fake = 0.5 * torch.randn(BATCH, IN, generator=gen) + 1.0  # other statistics than real
    return real, fake


def step_real_then_fake(model, batch, step, rank, fixes, scale):
    """Discriminator step: D(real), then D(fake), then one backward over both losses."""
    real, fake = batch
    if CONCAT_ONE_FORWARD in fixes:
        out = model(torch.cat([real, fake]))  # one forward: BatchNorm sees both batches
        d_real, d_fake = out.split([real.size(0), fake.size(0)])
    else:
        d_real = model(real)  # first forward (saves tensors for backward) ...
        d_fake = model(fake)  # ... second forward before the backward
    loss = F.softplus(-d_real).mean() + F.softplus(d_fake).mean()
    (loss * scale).backward()
    return loss.item()


class FrameworkWrapped(nn.Module):
    """What a framework wraps for you: `unused` is never called, so the model trained
    under the old default find_unused_parameters=True and stops under the new False.
    `checkpointing` puts the middle block under torch.utils.checkpoint, as the HF Trainer's
    gradient_checkpointing=True does (and then the Trainer turns the flag off itself)."""

    def __init__(self, fixes, checkpointing: str | None = None):
        super().__init__()
        self.body = nn.Linear(IN, HID)
        self.block = nn.Linear(HID, HID)
        self.head = nn.Linear(HID, OUT)
        self.unused = nn.Linear(HID, OUT)
        self.checkpointing = checkpointing  # None, "reentrant" or "non_reentrant"
        # the fix switches a reentrant checkpoint to non-reentrant
        self.reentrant = checkpointing == "reentrant" and CHECKPOINT_NON_REENTRANT not in fixes

    def _block(self, h):
        return torch.relu(self.block(h))

    def forward(self, x):
        h = torch.relu(self.body(x))
        if self.checkpointing is None:
            h = self._block(h)
        else:
            h = checkpoint(self._block, h, use_reentrant=self.reentrant)
        return self.head(h)


class BufferUpdatedInForward(nn.Module):
    """The model's own in-place buffer update (a running scale, an EMA kept in `forward`):
    the second forward changes a buffer the first graph saved, with or without DDP."""

    def __init__(self, fixes):
        super().__init__()
        self.body = nn.Linear(IN, HID)
        self.head = nn.Linear(HID, 1)
        self.register_buffer("scale", torch.ones(HID))

    def forward(self, x):
        with torch.no_grad():
            self.scale.mul_(0.9).add_(0.1)  # in place, every forward
        return self.head(torch.relu(self.body(x) * self.scale))  # saves `scale` for backward


# The framework's new default, as the wrapper it builds passes it.
FRAMEWORK_DEFAULT_OFF = {"find_unused_parameters": False}


def job_environment(name: str, fixes: frozenset[str]) -> tuple[dict, str | None]:
    """(environment variables, debug level set by API after init) a scenario's job runs
    with, before any fix; run_scenario.py applies them before the ranks start."""
    if name != "debug_detail_env":
        return {}, None
    if DEBUG_LEVEL_INFO in fixes:
        return {"TORCH_DISTRIBUTED_DEBUG": "INFO"}, None  # fix: INFO in the environment
    if DETAIL_AFTER_INIT in fixes:
        return {"TORCH_DISTRIBUTED_DEBUG": "OFF"}, "DETAIL"  # DETAIL only after init
    return {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}, None  # the bug: DETAIL before start


SCENARIOS.update(
    {
        s.name: s
        for s in (
            Scenario(
                "buffer_two_forwards",
                BatchNormDiscriminator,
                step_real_then_fake,
                batch=real_fake_batch,
                fixes_to_measure=("", BROADCAST_BUFFERS_FALSE, CONCAT_ONE_FORWARD),
                description="BatchNorm discriminator: D(real), D(fake), one backward",
            ),
            Scenario(
                "buffer_updated_in_forward",
                BufferUpdatedInForward,
                step_real_then_fake,
                batch=real_fake_batch,
                fixes_to_measure=("", BROADCAST_BUFFERS_FALSE),
                description="the model updates a buffer in place in forward; two forwards, one backward",
            ),
            Scenario(
                "framework_flag_off",
                FrameworkWrapped,
                step_single_output,
                base_ddp_kwargs=FRAMEWORK_DEFAULT_OFF,
                fixes_to_measure=("", FIND_UNUSED, STATIC_GRAPH, f"{STATIC_GRAPH}+{FIND_UNUSED}"),
                description="a framework's new default find_unused_parameters=False, a module never called",
            ),
            Scenario(
                "framework_flag_off_ckpt_reentrant",
                lambda fixes: FrameworkWrapped(fixes, checkpointing="reentrant"),
                step_single_output,
                base_ddp_kwargs=FRAMEWORK_DEFAULT_OFF,
                fixes_to_measure=(
                    "",
                    FIND_UNUSED,
                    STATIC_GRAPH,
                    f"{CHECKPOINT_NON_REENTRANT}+{FIND_UNUSED}",  # both halves at once
                ),
                description="framework_flag_off with a block under checkpoint(use_reentrant=True)",
            ),
            Scenario(
                "framework_flag_off_ckpt_non_reentrant",
                lambda fixes: FrameworkWrapped(fixes, checkpointing="non_reentrant"),
                step_single_output,
                base_ddp_kwargs=FRAMEWORK_DEFAULT_OFF,
                # the non-reentrant switch is what this code already does: the fix is its flag
                fixes_to_measure=("", FIND_UNUSED, f"{CHECKPOINT_NON_REENTRANT}+{FIND_UNUSED}"),
                description="framework_flag_off with a block under checkpoint(use_reentrant=False)",
            ),
            Scenario(
                "debug_detail_env",
                Clean,
                step_single_output,
                fixes_to_measure=("", DEBUG_LEVEL_INFO, DETAIL_AFTER_INIT),
                description="TORCH_DISTRIBUTED_DEBUG=DETAIL in the environment, nothing unused",
            ),
        )
    }
)
