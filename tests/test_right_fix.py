"""The right-fix benchmark (bench/right_fix.py, issue 20) on the real DDP fixtures and the causes'
interview cases: a truthful user, answering every question the reports ask from the truth table
of the case's cause (bench/truths.yaml, written from tests/ddp/measured.json), must never be
advised a fix measured to fail for that cause, and must reach a right fix often enough.

Everything runs through the installed command line, as a user would (about 1,000 short runs)."""

from __future__ import annotations

import pytest
from helpers import ROOT, script_module

right_fix = script_module("bench/right_fix.py")

# The share of these cases that reach a right fix within 3 answers may not fall below this.
# Measured on main 46027a5 (2026-12-04, before issue 20's changes): 32 of 54. After them
# (48a1037): 49 of 56 (36/42 fixtures, 13/14 interview cases). Issue 20 asks for 90%. With the
# checkpointing check and 'return what the loss uses' proven for an ignored output (53de97b):
# 63 of 63 (49/49 fixtures, 14/14 interview cases).
FLOOR_WITHIN_3 = 0.95

# Cases advised a failing fix. On 46027a5 there were four (a loss built from tensors `forward`
# does not return was advised find_unused_parameters or static_graph); none since. A case that
# gets failing advice fails the test: add it here only with an issue that says why.
KNOWN_WRONG: set[str] = set()


def _played(tmp_path_factory, name: str, cases_of) -> list:
    """Every case `cases_of(truths, workdir)` gives, played by truthful users."""
    workdir = str(tmp_path_factory.mktemp(name))
    truths = right_fix.load_truths()
    return right_fix.run_all(cases_of(truths, workdir), truths, workdir)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    return _played(tmp_path_factory, "right-fix", right_fix.quick_cases)


def test_no_failing_fix_is_advised_to_a_truthful_user(outcomes):
    wrong = {o.case.id: [r.wrong for r in o.runs] for o in outcomes if o.wrong}
    new = {case: fixes for case, fixes in wrong.items() if case not in KNOWN_WRONG}
    assert not new, f"advised a fix measured to fail for the case's cause: {new}"


def test_truthful_users_reach_a_right_fix_within_three_answers(outcomes):
    figures = right_fix.figures(outcomes)
    share = figures.within[3] / figures.n
    misses = [o.case.id for o in outcomes if o.reached_at is None or o.reached_at > 3]
    assert share >= FLOOR_WITHIN_3, f"{figures.within[3]}/{figures.n} reached; missed: {misses}"


def test_every_real_fixture_has_a_truth_table():
    """A new fixture in tests/fixtures/real needs its cause and variant in bench/truths.yaml."""
    truths = right_fix.load_truths()
    mapped = {case.id for case in right_fix.fixture_cases(truths)}
    fixtures = {path.stem for path in (ROOT / "tests" / "fixtures" / "real").glob("*.txt")}
    assert fixtures - mapped == set()


def test_the_truth_tables_agree_with_the_measurements():
    """No fix is `right` where tests/ddp/measured.json has it fail, nor `failing` where every
    measurement has it work."""
    report = right_fix.check_tables(right_fix.load_truths())
    assert report[1:] == [], report


@pytest.fixture(scope="module")
def told_outcomes(tmp_path_factory):
    return _played(tmp_path_factory, "right-fix-told", right_fix.seeded_cases)


def test_a_user_who_already_told_part_of_the_truth_still_reaches_a_right_fix(told_outcomes):
    """Every measured cause variant, from its own error, with one or two true answers given
    before the first report (what a description in new words tells once it is read right):
    the questions that follow must still lead to a right fix, and never to a failing one. On
    main 2013fbf: 680 of 680 within 3 answers, none wrong."""
    assert len(told_outcomes) > 600  # every variant and every true answer, not a sample
    wrong = {o.case.id: [r.wrong for r in o.runs] for o in told_outcomes if o.wrong}
    assert not wrong, f"advised a fix measured to fail for the case's cause: {wrong}"
    misses = {
        o.case.id: right_fix.describe_run(o.runs[0])
        for o in told_outcomes
        if o.reached_at is None or o.reached_at > 3
    }
    assert not misses, f"no right fix within 3 answers: {misses}"
