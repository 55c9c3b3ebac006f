"""A real DDP training script for one scenario: what a user would launch.

    torchrun --nproc_per_node=2 tests/ddp/run_scenario.py --scenario unused_module
    python tests/ddp/run_scenario.py --scenario unused_module --fix find_unused_parameters

Under torchrun it uses the RANK/WORLD_SIZE/MASTER_* environment; otherwise it spawns
--world-size processes itself with torch.multiprocessing.spawn. gloo on CPU, 127.0.0.1.
It prints one line per rank per step and dies with the real error, untouched.
"""

from __future__ import annotations

import argparse
import datetime
import os
import socket
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scenarios as sc  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", required=True, choices=sorted(sc.SCENARIOS))
    p.add_argument("--fix", default=None, help="fix id, or several joined by '+'")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--world-size", type=int, default=2, help="when not under torchrun")
    p.add_argument("--param-dir", default=None, help="write rank<r>_step<s>.pt here")
    p.add_argument(
        "--debug-api",
        choices=["INFO", "DETAIL"],
        default=None,
        help="call torch.distributed.set_debug_level(...) after init_process_group",
    )
    p.add_argument(
        "--pg-timeout",
        type=float,
        default=30.0,
        help="seconds before a stuck gloo collective fails (instead of 30 min)",
    )
    return p.parse_args(argv)


def train(rank: int, world_size: int, args: argparse.Namespace) -> None:
    dist.init_process_group(
        "gloo",
        rank=rank,
        world_size=world_size,
        timeout=datetime.timedelta(seconds=args.pg_timeout),
    )
    if args.debug_api:
        dist.set_debug_level(getattr(dist.DebugLevel, args.debug_api))
    scenario = sc.SCENARIOS[args.scenario]
    fixes = sc.parse_fixes(args.fix)
    module = sc.build_model(scenario, fixes)
    model = DDP(module, **sc.ddp_kwargs(fixes, scenario.base_ddp_kwargs))
    if scenario.after_wrap:
        scenario.after_wrap(model.module, fixes)
    optimizer = torch.optim.SGD(model.module.parameters(), lr=sc.LR)
    for step in range(args.steps):
        optimizer.zero_grad()
        loss = scenario.step(model, scenario.batch(rank, step), step, rank, fixes, 1.0)
        optimizer.step()
        # One write per line, so two ranks sharing a pipe do not glue lines together.
        sys.stdout.write(f"rank {rank} step {step} loss {loss:.6f}\n")
        sys.stdout.flush()
        if args.param_dir:
            snap = sc.param_snapshot(model.module)
            torch.save(snap, Path(args.param_dir) / f"rank{rank}_step{step}.pt")
    dist.destroy_process_group()


def _spawned(rank: int, world_size: int, args: argparse.Namespace) -> None:
    train(rank, world_size, args)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv=None) -> None:
    args = parse_args(argv)
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # under torchrun
        train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)
        return
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(free_port()))
    torch.multiprocessing.spawn(_spawned, args=(args.world_size, args), nprocs=args.world_size)


if __name__ == "__main__":
    main()
