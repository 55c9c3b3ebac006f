"""Regenerate tests/fixtures/real/: the untouched output of real failing DDP jobs.

    python tests/ddp/make_fixtures.py [--only NAME_SUBSTRING]
    python tests/ddp/make_fixtures.py --matrix [--only CASE_SUBSTRING]

--matrix captures, for every case of the fix matrix (matrix.CASES), the texts its paths
read into tests/fixtures/real/scenarios/<case>/: the whole output (nodebug.txt, info.txt)
and each rank's own log (rank<r>.nodebug.txt, rank<r>.info.txt), debug unset and INFO.

File names: <scenario>[.<fix>]__<debug>__<launcher>.txt with debug nodebug / info /
detail (TORCH_DISTRIBUTED_DEBUG=DETAIL in the environment) / detailapi
(torch.distributed.set_debug_level(DETAIL) after init_process_group). INDEX.md lists
each file with the family the harness classified it as.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

OUT_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "real"

# (scenario, fix, debug, debug_via, launcher)
FIXTURES = [
    ("unused_module", None, None, "env", "spawn"),
    ("unused_module", None, "INFO", "env", "spawn"),
    ("unused_module", None, "DETAIL", "env", "spawn"),
    ("unused_module", None, "DETAIL", "api", "spawn"),
    ("unused_module", None, None, "env", "torchrun"),
    ("unused_module", None, "INFO", "env", "torchrun"),
    ("unused_module", None, "DETAIL", "env", "torchrun"),
    ("unused_forward_output", None, None, "env", "spawn"),
    ("unused_forward_output", None, "INFO", "env", "spawn"),
    ("multitask_missing_loss", None, None, "env", "spawn"),
    ("multitask_missing_loss", None, "INFO", "env", "spawn"),
    ("two_backward_intermediate", None, None, "env", "spawn"),
    ("two_backward_intermediate", None, "INFO", "env", "spawn"),
    ("two_backward_retain_graph", None, None, "env", "spawn"),
    ("two_backward_retain_graph", None, "INFO", "env", "spawn"),
    ("two_backward_retain_graph", "find_unused_parameters", None, "env", "spawn"),
    ("two_backward_retain_graph", "static_graph", None, "env", "spawn"),
    ("branch_some_steps", None, None, "env", "spawn"),
    ("branch_some_steps", None, "INFO", "env", "spawn"),
    ("branch_some_steps", "static_graph", None, "env", "spawn"),
    ("branch_odd_steps", "static_graph", None, "env", "spawn"),
    ("branch_some_ranks", None, None, "env", "spawn"),
    ("branch_some_ranks", None, "INFO", "env", "spawn"),
    ("branch_some_ranks", None, "DETAIL", "api", "spawn"),
    ("requires_grad_after_wrap", None, None, "env", "spawn"),
    ("requires_grad_after_wrap", None, "INFO", "env", "spawn"),
    ("checkpoint_reentrant", None, None, "env", "spawn"),
    ("checkpoint_reentrant", None, "INFO", "env", "spawn"),
    ("checkpoint_reentrant", "find_unused_parameters", None, "env", "spawn"),
    ("tied_weights_after_wrap", None, None, "env", "spawn"),
    ("tied_weights_after_wrap", None, "INFO", "env", "spawn"),
    ("loss_from_hooked_features", None, None, "env", "spawn"),
    ("loss_from_hooked_features", "find_unused_parameters", None, "env", "spawn"),
    ("loss_from_hooked_features", "find_unused_parameters", "INFO", "env", "spawn"),
    ("unused_output_in_object", None, None, "env", "spawn"),
    ("unused_output_in_object", "find_unused_parameters", None, "env", "spawn"),
    ("unused_output_in_object", "find_unused_parameters", "INFO", "env", "spawn"),
    ("checkpoint_reentrant", None, "DETAIL", "env", "spawn"),
    ("checkpoint_reentrant", None, "DETAIL", "api", "spawn"),
    ("two_backward_intermediate", None, "DETAIL", "env", "spawn"),
    ("clean_with_find_unused", None, None, "env", "spawn"),
    # printed.error_modules reads the INFO ones: the module a printed snippet names
    ("branch_moving_ranks", None, None, "env", "spawn"),
    ("branch_moving_ranks", None, "INFO", "env", "spawn"),
    ("branch_data_chosen", None, None, "env", "spawn"),
    ("branch_data_chosen", None, "INFO", "env", "spawn"),
    # static_graph=True on: which error texts a skipped branch or an ignored output write
    # then (does the unfinished-reduction wording ever appear? an unused module: no error)
    ("branch_some_steps", "static_graph", "INFO", "env", "spawn"),
    ("unused_forward_output", "static_graph", None, "env", "spawn"),
    ("branch_moving_ranks", "static_graph", None, "env", "spawn"),
    ("branch_data_chosen", "static_graph", None, "env", "spawn"),
]


def fixture_name(scenario, fix, debug, debug_via, launcher) -> str:
    level = "nodebug" if not debug else debug.lower() + ("api" if debug_via == "api" else "")
    stem = scenario + (f".{fix}" if fix else "")
    return f"{stem}__{level}__{launcher}.txt"


def make(spec) -> tuple[str, str, int | None, bool]:
    scenario, fix, debug, via, launcher = spec
    result = harness.run_ddp(scenario, fix, debug=debug, debug_via=via, launcher=launcher)
    name = fixture_name(*spec)
    (OUT_DIR / name).write_text(result.output, encoding="utf-8")
    return name, result.family, result.returncode, result.timed_out


def capture_case(case) -> list[str]:
    """Both debug levels of one matrix case; returns a line per text written."""
    import matrix

    folder = matrix.TEXTS / case.name
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for debug, level in ((None, "nodebug"), ("INFO", "info")):
        result = harness.run_ddp(case.scenario, case.base, debug=debug)
        (folder / f"{level}.txt").write_text(result.output, encoding="utf-8")
        for rank in (0, 1):
            text = result.rank_logs.get(rank, "")
            (folder / f"rank{rank}.{level}.txt").write_text(text, encoding="utf-8")
        lines.append(f"{case.name:55} {level:8} {result.family:24} rc={result.returncode}")
    return lines


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--only", default="")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--matrix", action="store_true", help="the fix matrix cases' texts")
    args = p.parse_args()
    if args.matrix:
        import matrix

        cases = [c for c in matrix.CASES if args.only in c.name]
        with ThreadPoolExecutor(args.jobs) as pool:
            for lines in pool.map(capture_case, cases):
                print("\n".join(lines))
        return
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    specs = [s for s in FIXTURES if args.only in fixture_name(*s)]
    with ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(make, specs))
    index = OUT_DIR / "INDEX.md"
    lines = [
        "# Real DDP outputs (torch 2.13.0 CPU, gloo, 2 ranks)",
        "",
        "Generated by `tests/ddp/make_fixtures.py`; verbatim combined stdout+stderr.",
        "family = what `tests/ddp/harness.classify` calls it; rc = exit code.",
        "",
        "| file | family | rc |",
        "|---|---|---|",
    ]
    old = {}
    if index.exists() and args.only:
        for line in index.read_text().splitlines():
            if line.startswith("| `"):
                old[line.split("`")[1]] = line
    for name, family, rc, timed_out in rows:
        old[name] = f"| `{name}` | {family} | {'timeout' if timed_out else rc} |"
    lines += [old[k] for k in sorted(old)]
    index.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for name, family, rc, _ in rows:
        print(f"{name:70} {family:24} rc={rc}")


if __name__ == "__main__":
    main()
