"""The fix matrix on real DDP (gloo, 2 CPU ranks): no advised fix fails, on any path.

For every case of matrix.CASES (a scenario, or a follow-up: the scenario with a fix already
applied) and every path a user takes (`triage` of the whole output and of each rank's log,
debug unset and INFO, `run` around the live job, `ask` in English and Chinese, an honest
`--answers` with the paste):

1. every fix the report ADVISES (JSON `fixes` of kind fix) is applied to the real job through
   matrix.BRIDGE (the code path its snippet stands for) and works: no error, every rank's
   parameters after every step equal the single-process run of the code the user meant,
   and every module the user means to train changes; a follow-up never re-advises what is
   already on;
2. every fix it warns against really fails here (an error, or wrong parameters);
3. every conditional fix whose condition this case's honest answers satisfy works here;
4. every `outcomes` entry in rules/fixes.yaml agrees with its scenario's real run;
5. every result recorded in tests/ddp/measured.json (what docs/fix-matrix.md shows) still
   holds.

The jobs run on the shared two-worker pool (harness.submit), each once per session.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402

harness.need_torch()

import matrix  # noqa: E402
import scenarios  # noqa: E402

pytestmark = pytest.mark.ddp

CASE_IDS = [c.name for c in matrix.CASES]
VERDICTS: dict[tuple, tuple[str, str]] = {}


def implemented(scenario: str, applied: str) -> bool:
    """Does the scenario have code for every part of `applied`? DDP keywords apply to any
    model; the other fixes are `if FIX in fixes:` branches listed in fixes_to_measure."""
    keywords = {"find_unused_parameters", "static_graph", "disable_find_unused"}
    keywords.add(scenarios.STATIC_GRAPH_UNTOLD)
    spec = scenarios.SCENARIOS[scenario]
    own = {part for f in spec.fixes_to_measure for part in f.split("+") if part}
    return all(part in own | keywords for part in applied.split("+") if part)


def verdict(case_: matrix.Case, scenario: str, applied: str) -> tuple[str, str]:
    key = (scenario, applied or None, case_.warning_is_problem)
    if key not in VERDICTS:
        result = harness.submit(scenario, applied or None).result()
        outcome = harness.verdict(scenario, applied or None, result)
        still_warns = harness.FIND_UNUSED_WARNING in result.output
        if outcome[0] == "works" and case_.warning_is_problem and still_warns:
            outcome = ("wrong", "the speed warning is still printed")
        VERDICTS[key] = outcome
    return VERDICTS[key]


def _selected_cases(request) -> list[matrix.Case]:
    """The cases this session's selected tests of this module ask about (all by default)."""
    names = set()
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        if item.module is request.module and callspec and "name" in callspec.params:
            names.add(callspec.params["name"])
    return [c for c in matrix.CASES if c.name in names]


@pytest.fixture(scope="module")
def advice(request, tmp_path_factory) -> dict:
    """case -> path -> Advice. Starts the live `run` jobs first and every fix job the
    offline paths call for, so the pool is busy while the tests read results."""
    cases = _selected_cases(request)
    for c in cases:
        harness.submit(c.scenario, c.base, None, "run")
    tmp = tmp_path_factory.mktemp("matrix")
    table = {c.name: matrix.offline_advice(c, tmp) for c in cases}
    for c in cases:
        for per in table[c.name].values():
            for fix_id in {*per.advised, *per.warned, *matrix.conditional_ids(c, per)}:
                for scenario, applied in matrix.fix_jobs(c, fix_id):
                    if implemented(scenario, applied):
                        harness.submit(scenario, applied)
    for c in cases:
        run = harness.submit(c.scenario, c.base, None, "run").result()
        table[c.name]["run"] = matrix.advice_of(run.run_report)
    return table


def _check_advised(case_: matrix.Case, path: str, advice: matrix.Advice) -> list[str]:
    failures = []
    for fix_id in advice.advised:
        if fix_id in case_.already_on:
            failures.append(f"{path}: re-advises {fix_id}, which is already on")
            continue
        bridge = matrix.BRIDGE.get(fix_id)
        if bridge is None:
            failures.append(f"{path}: advises {fix_id}, which no scenario can apply")
            continue
        snippet = advice.snippets.get(fix_id, "")
        failures += [
            f"{path}: the {fix_id} snippet lacks {text!r}"
            for text in bridge.snippet_has
            if snippet and text not in snippet
        ]
        for scenario, applied in matrix.fix_jobs(case_, fix_id):
            if not implemented(scenario, applied):
                failures.append(f"{path}: advises {fix_id}, which {scenario} has no code for")
                continue
            result, detail = verdict(case_, scenario, applied)
            if result != "works":
                failures.append(f"{path}: advises {fix_id} ({applied}): {result} {detail}")
    return failures


@pytest.mark.parametrize("name", CASE_IDS)
def test_every_advised_fix_works(name: str, advice: dict):
    case_ = matrix.BY_NAME[name]
    failures = []
    for path, per in advice[name].items():
        failures += _check_advised(case_, path, per)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("name", CASE_IDS)
def test_every_warned_fix_fails(name: str, advice: dict):
    """A warning that cites a measured outcome (schema 2: cause, result, scenario) must cite
    a real one: that fix on that scenario really ends that way. A warning without one (the
    fix's own `avoid_when` matched this user's facts) must fail on this very job."""
    case_ = matrix.BY_NAME[name]
    failures = []
    for path, per in advice[name].items():
        for warning in per.warnings:
            fix_id = warning["id"]
            if warning.get("scenario"):
                scenario, applied = matrix.outcome_job(fix_id, {"scenario": warning["scenario"]})
                result, detail = verdict(case_, scenario, applied)
                if result != warning.get("result"):
                    failures.append(
                        f"{path}: warns {fix_id} is {warning.get('result')} on {scenario} "
                        f"({applied}), measured {result} {detail}"
                    )
                continue
            for scenario, applied in matrix.fix_jobs(case_, fix_id):
                if not implemented(scenario, applied):
                    continue  # nothing to run: the scenario has no code for it
                result, _ = verdict(case_, scenario, applied)
                if result == "works":
                    failures.append(f"{path}: warns against {fix_id} ({applied}), which works")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("name", CASE_IDS)
def test_conditional_fixes_hold_when_their_condition_does(name: str, advice: dict):
    """A conditional fix says "if <when>, then <fix>": where this case's honest facts meet
    the condition, the fix must work here; a conditional fix for a fix already on is a
    re-advice too."""
    from ddp_doctor.reasoning.engine import condition_holds

    case_ = matrix.BY_NAME[name]
    answers = advice[name].get("answers")
    facts = (answers and answers.facts) or {}
    failures = []
    for path, per in advice[name].items():
        for entry in per.conditional:
            fix_id = matrix.conditional_id(entry)
            if fix_id in case_.already_on:
                failures.append(f"{path}: conditional {fix_id}, which is already on")
                continue
            when = entry.get("when") or {}
            if when.get("cause") and when["cause"] != case_.cause:
                continue  # "if the cause is X": not this case's cause
            condition = when.get("facts", when) if isinstance(when, dict) else {}
            if not (facts and condition_holds(condition, facts)):
                continue
            for scenario, applied in matrix.fix_jobs(case_, fix_id):
                if implemented(scenario, applied):
                    result, detail = verdict(case_, scenario, applied)
                    if result != "works":
                        failures.append(f"{path}: if {condition} then {fix_id}: {result} {detail}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("name", CASE_IDS)
def test_the_real_job_writes_the_captured_text(name: str):
    """The texts the offline paths read are what the job writes today (same family)."""
    case_ = matrix.BY_NAME[name]
    captured = matrix.text_path(case_, "combined_info")
    assert captured.exists(), f"run: python tests/ddp/make_fixtures.py --matrix --only {name}"
    text = captured.read_text(encoding="utf-8")
    want = harness.classify(text, 1 if case_.crashes else 0, False)
    live = harness.submit(case_.scenario, case_.base, None, "run").result()
    # Only the job's own words: under `run` the output also holds ddp-doctor's diagnosis,
    # which quotes other error texts (e.g. "training graph has changed" in a fix's warning).
    # A crashing rank writes its traceback to its own log; a clean job gets no diagnosis.
    crashed = live.returncode != 0 and live.rank_logs
    job_output = "\n".join(live.rank_logs.values()) if crashed else live.output
    assert harness.classify(job_output, live.returncode, live.timed_out) == want


OUTCOMES = matrix.outcome_entries()


@pytest.mark.parametrize(
    ("fix_id", "entry"),
    OUTCOMES,
    ids=[f"{f}-{e.get('cause')}-{e.get('scenario')}" for f, e in OUTCOMES],
)
def test_outcome_agrees_with_the_real_job(fix_id: str, entry: dict):
    scenario, applied = matrix.outcome_job(fix_id, entry)
    assert scenario in scenarios.SCENARIOS, f"no scenario {scenario}"
    assert implemented(scenario, applied), f"{scenario} has no code for {applied}"
    result = harness.submit(scenario, applied).result()
    outcome, detail = harness.verdict(scenario, applied, result)
    assert outcome == entry["result"], f"{fix_id} on {scenario} ({applied}): {outcome} {detail}"


def test_recorded_results_still_hold():
    """docs/fix-matrix.md shows tests/ddp/measured.json: every record must still be true
    (run last: most jobs are done by then)."""
    measured = matrix.load_measured()
    records = {k: v for k, v in measured.items() if not k.startswith("_") and v["result"] != "n/a"}
    assert records, "no recorded results: run python tests/ddp/matrix_doc.py --measure"
    futures = {}
    for key in records:
        scenario, applied = key.split("|")
        applied = None if applied == "none" else applied
        futures[key] = (scenario, applied, harness.submit(scenario, applied))
    stale = []
    for key, (scenario, applied, future) in futures.items():
        outcome, detail = harness.verdict(scenario, applied, future.result())
        if outcome != records[key]["result"]:
            stale.append(f"{key}: recorded {records[key]['result']}, now {outcome} {detail}")
    assert not stale, "\n".join(stale)
