"""A real DDP training script for one scenario: what a user would launch.

    torchrun --nproc_per_node=2 tests/ddp/run_scenario.py --scenario unused_module
    python tests/ddp/run_scenario.py --scenario unused_module --fix find_unused_parameters

Under torchrun it uses the RANK/WORLD_SIZE/MASTER_* environment; otherwise it spawns
--world-size processes itself with torch.multiprocessing (forked, as mp.spawn runs them
otherwise). gloo on CPU, 127.0.0.1.
It prints one line per rank per step and dies with the real error, untouched.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import socket
import sys
import threading
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import printed  # noqa: E402
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
    log = RankLog(Path(args.param_dir) / f"rank{rank}.log") if args.param_dir else None
    try:
        _train(rank, world_size, args)
    except BaseException:
        # spawn hands the traceback to the parent instead of printing it; a per-rank log
        # (torchrun's, a cluster's) shows it, so it goes in here
        if log and not under_torchrun():
            log.write(traceback.format_exc())
        raise
    finally:
        if log:
            log.close()


def _train(rank: int, world_size: int, args: argparse.Namespace) -> None:
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
    # the DDP keywords as the printed snippets of the fixes set them, in the order given
    kwargs = printed.ddp_kwargs(args.fix, scenario.base_ddp_kwargs)
    model = DDP(module, **kwargs)
    if scenario.after_wrap:
        scenario.after_wrap(model.module, fixes)
    optimizer = sc.make_optimizer(scenario, model.module)
    for step in range(args.steps):
        if scenario.schedule and scenario.schedule(module, step, fixes):
            model = DDP(module, **kwargs)  # the code rebuilds the wrapper after the change
        optimizer.zero_grad(set_to_none=scenario.set_to_none)
        loss = scenario.step(model, scenario.batch(rank, step), step, rank, fixes, 1.0)
        if step == 0 and args.param_dir:  # what the `grad is None` check would print here
            none = [n for n, p in module.named_parameters() if p.requires_grad and p.grad is None]
            (Path(args.param_dir) / f"rank{rank}_gradnone.json").write_text(json.dumps(none))
        optimizer.step()
        # One write per line, so two ranks sharing a pipe do not glue lines together.
        sys.stdout.write(f"rank {rank} step {step} loss {loss:.6f}\n")
        sys.stdout.flush()
        if args.param_dir:
            snap = sc.param_snapshot(model.module)
            torch.save(snap, Path(args.param_dir) / f"rank{rank}_step{step}.pt")
    # The wrapper goes before its group: freed after it, its reducer would free the group
    # holding the GIL while a gloo worker may still need the GIL (a deadlock of torch 2.13)
    del model
    dist.destroy_process_group()


class RankLog:
    """This rank's own log: everything written to its stdout and stderr (Python and C++,
    such as the reducer's warnings) is copied to `path` as it passes through, as a
    launcher's per-rank log file would hold it."""

    def __init__(self, path: Path):
        self.file = open(path, "ab", buffering=0)  # noqa: SIM115 (closed in close())
        self.lock = threading.Lock()
        self.saved = {fd: os.dup(fd) for fd in (1, 2)}
        self.threads = []
        for fd in (1, 2):
            read_end, write_end = os.pipe()
            os.dup2(write_end, fd)
            os.close(write_end)
            thread = threading.Thread(target=self._copy, args=(read_end, self.saved[fd]))
            thread.start()
            self.threads.append(thread)

    def _copy(self, read_end: int, target: int) -> None:
        while chunk := os.read(read_end, 65536):
            os.write(target, chunk)
            with self.lock:
                self.file.write(chunk)
        os.close(read_end)

    def write(self, text: str) -> None:
        sys.stderr.flush()
        with self.lock:
            self.file.write(text.encode("utf-8", errors="replace"))

    def close(self) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, saved in self.saved.items():
            os.dup2(saved, fd)  # the pipe's last write end closes: the copier sees EOF
        for thread in self.threads:
            thread.join(timeout=5)
        self.file.close()


def _spawned(rank: int, world_size: int, args: argparse.Namespace) -> None:
    train(rank, world_size, args)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def under_torchrun() -> bool:
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def main(argv=None) -> None:
    args = parse_args(argv)
    # what the scenario's job runs with before any fix (e.g. a debug level in the
    # environment): set before the ranks import torch.distributed, which reads it
    env, debug_api = sc.job_environment(args.scenario, sc.parse_fixes(args.fix))
    os.environ.update(env)
    args.debug_api = args.debug_api or debug_api
    if env:  # torchrun's ranks imported it already, and forked ranks inherit it: read it again
        dist.set_debug_level_from_env()
    if under_torchrun():
        train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)
        return
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(free_port()))
    # forked, not spawned: the ranks inherit the imported torch instead of importing it again
    # (~1.5 s each, most of a job's time; the test suite runs hundreds of jobs). What a rank
    # raises reaches the parent as it does under mp.spawn (the same ProcessRaisedException).
    torch.multiprocessing.start_processes(
        _spawned, args=(args.world_size, args), nprocs=args.world_size, start_method="fork"
    )


if __name__ == "__main__":
    main()
