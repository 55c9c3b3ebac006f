"""Measure every scenario x fix x debug level; write a JSON table (for FINDINGS.md).

python tests/ddp/measure.py [--out measurements.json] [--scenario NAME ...] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
import scenarios as sc  # noqa: E402


def measure_one(name: str, fix: str, debug: str | None, debug_via: str, steps: int) -> dict:
    result = harness.run_ddp(name, fix or None, debug=debug, debug_via=debug_via, steps=steps)
    try:
        ref = harness.reference_params(name, fix or None, steps=steps)
        mismatches = harness.param_mismatches(result.params, ref)
    except RuntimeError as err:  # the code fails on one process too
        mismatches = [f"reference fails: {str(err)[:60]}"]
    outcome, detail = harness.verdict(name, fix or None, result)
    return {
        "scenario": name,
        "fix": fix or "none",
        "debug": debug or "nodebug",
        "debug_via": debug_via,
        "returncode": result.returncode,
        "timed_out": result.timed_out,
        "family": result.family,
        "steps_done": {r: len(p) for r, p in result.params.items()},
        "params_match": not mismatches,
        "mismatches": mismatches[:6],
        "outcome": outcome,
        "detail": detail,
        "grad_none_step0": result.grad_none,
        "output": result.output,
        "rank_logs": result.rank_logs,
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="measurements.json")
    p.add_argument("--scenario", nargs="*", default=None)
    p.add_argument("--debug", nargs="*", default=["none"], help="none INFO DETAIL DETAIL:api")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--steps", type=int, default=harness.STEPS)
    args = p.parse_args()
    jobs = []
    for name in args.scenario or sc.SCENARIOS:
        for fix in sc.SCENARIOS[name].fixes_to_measure:
            for level in args.debug:
                debug, _, via = level.partition(":")
                jobs.append((name, fix, None if debug == "none" else debug, via or "env"))
    with ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(lambda j: measure_one(*j, args.steps), jobs))
    for r in rows:
        print(
            f"{r['scenario']:32} {r['fix']:45} {r['debug']:8} "
            f"rc={r['returncode']} {r['family']:22} own-ref={r['params_match']} "
            f"{r['outcome']:5} {r['detail'][:60]} steps={r['steps_done']} "
            f"gradnone0={r['grad_none_step0'].get(0)}"
        )
    Path(args.out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
