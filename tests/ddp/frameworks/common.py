"""Shared by the framework jobs: the model, the data and the single-process reference.

The data set is 8 samples and every job runs 2 ranks x 4 samples per step, so each step's
global batch is the whole data set whatever order a sampler picks: the averaged gradient
equals one full-batch step on one process, which is the reference.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import scenarios as sc  # noqa: E402

SAMPLES, PER_DEVICE, STEPS, LR = 8, 4, 2, 0.1


def data() -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(7)
    return torch.randn(SAMPLES, sc.IN, generator=gen), torch.randn(SAMPLES, sc.OUT, generator=gen)


def model() -> torch.nn.Module:
    """scenarios.UnusedModule: `unused` is registered and never called in forward."""
    torch.manual_seed(0)
    return sc.UnusedModule(frozenset())


def reference() -> dict[str, torch.Tensor]:
    net = model()
    optimizer = torch.optim.SGD(net.parameters(), lr=LR)
    x, y = data()
    for _ in range(STEPS):
        optimizer.zero_grad()
        F.mse_loss(net(x), y).backward()
        optimizer.step()
    return {name: p.detach().clone() for name, p in net.named_parameters()}


def save(module: torch.nn.Module, out_dir: str, rank: int) -> None:
    params = {name: p.detach().clone() for name, p in module.named_parameters()}
    torch.save(params, Path(out_dir) / f"rank{rank}.pt")


def end_process_group() -> None:
    """Destroy the process group the framework left behind, before the interpreter exits.

    Left to interpreter exit, the group's threads were torn down in any order: an HF Trainer
    job that had finished training aborted once ("terminate called without an active
    exception", SIGABRT), failing a test about the flag, not about DDP's error.
    """
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
