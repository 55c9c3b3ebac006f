"""The backtracking guard user regexes must pass is the one the built-in rules pass."""

from __future__ import annotations

import re

import pytest
from ddp_doctor.knowledge import regex_guard
from test_regex_safety import ALL as BUILTIN

CATASTROPHIC = [
    r"(a+)+$",
    r"(\s*a?)+$",
    r"(a|aa)+$",
    r"(\w+\s?)+$",
    r"(.*a){12}",
    r"(?:[^,]+,?)*x",
    r"(x+x+)+y",
    r"((ab)*)+c",
    r"([a-z]+)*$",
    r"(.*,)+$",
    r"^(a|a?)(\1|a)*$",
]
LINEAR = [r"^(\w+\.)+\w+$", r"(a|b)+", r"(?:\d+ )+", r"(ab|a)+$", r"(?:\s*,)+", r"(?:foo|bar)+"]


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_builtin_regexes_pass_the_shape_check(name):
    pattern, flags = BUILTIN[name]
    assert regex_guard.static_problem(pattern, flags) is None


@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_catastrophic_shapes_are_refused(pattern):
    assert "catastrophic backtracking" in regex_guard.static_problem(pattern)


@pytest.mark.parametrize("pattern", LINEAR)
def test_linear_repeats_are_allowed(pattern):
    assert regex_guard.static_problem(pattern) is None


def test_builtin_regexes_pass_the_timed_probe():
    slow = [n for n, (p, f) in BUILTIN.items() if not regex_guard.runs_in_time(p, f, 5.0)]
    assert slow == []


def test_the_probe_stops_a_regex_that_would_run_for_hours():
    assert not regex_guard.runs_in_time(r"(a+)+$", re.MULTILINE, 0.5)


def test_a_quadratic_regex_is_refused_however_fast_the_machine():
    """`(?=(a+))+b` takes 0.1 s on a probing run of a fast machine, well within any budget,
    and seconds on a long log line: its time grows with the square of the run's length."""
    assert not regex_guard.runs_in_time(r"(?=(a+))+b", re.MULTILINE, 60.0)
    assert regex_guard.runs_in_time(r"(?=(a))+b", re.MULTILINE, 60.0)
