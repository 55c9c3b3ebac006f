"""Rules conditions (`when:`, `ask_when:`, `avoid_when:` ...) evaluated against facts.

Two readings: `condition_holds` answers yes or no from what is known now (an unknown fact
fails a scalar test); `condition_state` also says when the answer needs a fact that is not
known yet, which is how the safety rule tells "proven for this case" from "depends on the
next answer".
"""

from __future__ import annotations

from types import MappingProxyType

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

# conditions are plain dicts or the loader's frozen mappings; a tuple of concrete types is
# many times faster than the Mapping ABC in this hot path (the engine evaluates thousands)
_MAPPINGS = (dict, MappingProxyType)


UNKNOWN = object()  # a fact's value when it is not known: equal to no expected value

# The engine evaluates the same few hundred rules conditions thousands of times per run (the
# decision table ranks every cause for every hypothetical answer). Most are plain tests
# ("family: X", "multitask: true", "framework: [a, b]"): each is read once into (fact, allowed
# values) pairs and tested without walking the general reader below. Only the loader's
# frozen mappings are remembered, never a caller's dict that could change afterwards.
_PLAIN: dict = {}  # id(condition) -> (condition, its plain tests or None)
_PLAIN_KEPT = 8192


def plain_tests(condition: Mapping[str, Any]) -> tuple[tuple[str, tuple], ...] | None:
    """(fact, allowed values) pairs when every test is a value or a list; else None."""
    tests = []
    for key, expected in condition.items():
        if key == "any" or isinstance(expected, _MAPPINGS):
            return None
        tests.append((key, tuple(expected) if isinstance(expected, list) else (expected,)))
    return tuple(tests)


def condition_holds(condition: Mapping[str, Any] | None, facts: Mapping[str, Any]) -> bool:
    """Evaluate a rules condition (see rules/README.md) against the known facts."""
    if not condition:
        return True
    if type(condition) is MappingProxyType:
        # per_object's lookup, inline: this runs ~1,300 times a report
        entry = _PLAIN.get(id(condition))
        if entry is None or entry[0] is not condition:
            if len(_PLAIN) >= _PLAIN_KEPT:
                _PLAIN.clear()
            entry = _PLAIN[id(condition)] = (condition, plain_tests(condition))
        tests = entry[1]
        if tests is not None:
            # `x in (v,)` is `x is v or x == v`: the same test as value_holds' `==` / `in`;
            # a loop, not all(...): no generator to set up on the hot path
            for key, allowed in tests:  # noqa: SIM110
                if facts.get(key, UNKNOWN) not in allowed:
                    return False
            return True
    for key, expected in condition.items():
        if key == "any":
            if not any(condition_holds(c, facts) for c in expected):
                return False
        elif not value_holds(key in facts, facts.get(key), expected):
            return False
    return True


def about_more_than_the_family(condition: Mapping[str, Any]) -> bool:
    """Does the condition look at more than the error family?"""
    return len(condition) > 1 or (len(condition) == 1 and "family" not in condition)


def value_holds(known: bool, value: Any, expected: Any) -> bool:
    if isinstance(expected, _MAPPINGS):
        if "known" in expected and known != expected["known"]:
            return False
        if "not" in expected:
            excluded = expected["not"] if isinstance(expected["not"], list) else [expected["not"]]
            return known and value not in excluded
        return True
    if not known:
        return False
    if isinstance(expected, list):
        return value in expected
    return value == expected


def condition_state(condition: Mapping[str, Any] | None, facts: Mapping[str, Any]) -> bool | None:
    """True or False when the known facts decide the condition, None when it needs a fact
    that is not known yet (a `{known: ...}` test is decided by what is known now)."""
    if not condition:
        return True
    state: bool | None = True
    for key, expected in condition.items():
        if key == "any":
            parts = [condition_state(c, facts) for c in expected]
            part = True if True in parts else (None if None in parts else False)
        elif key in facts or (isinstance(expected, _MAPPINGS) and "known" in expected):
            part = value_holds(key in facts, facts.get(key), expected)
        else:
            part = None
        if part is False:
            return False
        if part is None:
            state = None
    return state


class ConditionTable:
    """Many rules conditions read together against one fact set: which of them hold, as the
    bits of an int (bit i for `conditions[i]`), exactly as `condition_holds` reads each.

    The engine asks this of every cause's evidence for ~100 fact sets a run. Plain tests
    (`plain_tests`) are grouped by fact: for each fact the conditions name, the bits of the
    conditions its value fails, remembered per value, so a fact set costs one lookup per
    fact instead of one test per condition. Any other condition is read by
    `condition_holds`."""

    def __init__(self, conditions: list[Mapping[str, Any] | None]):
        by_fact: dict[str, list[tuple[int, tuple]]] = {}
        self._general: list[tuple[int, Mapping[str, Any]]] = []
        for i, condition in enumerate(conditions):
            tests = plain_tests(condition) if condition else ()
            if tests is None:
                self._general.append((1 << i, condition))
                continue
            for key, allowed in tests:
                by_fact.setdefault(key, []).append((1 << i, allowed))
        # (fact, its tests, value -> the bits of the conditions that value fails)
        self._facts = tuple((key, tuple(tests), {}) for key, tests in by_fact.items())
        self.every = (1 << len(conditions)) - 1

    def holding(self, facts: Mapping[str, Any]) -> int:
        """The bits of the conditions that hold for `facts`."""
        failing = 0
        get = facts.get
        for key, tests, known in self._facts:
            value = get(key, UNKNOWN)
            try:
                failing |= known[value]
            except KeyError:
                known[value] = _failing(tests, value)
                failing |= known[value]
            except TypeError:  # an unhashable value (a list): tested, not remembered
                failing |= _failing(tests, value)
        for bit, condition in self._general:
            if not failing & bit and not condition_holds(condition, facts):
                failing |= bit
        return self.every & ~failing


def _failing(tests: tuple[tuple[int, tuple], ...], value: Any) -> int:
    """The bits of the tests `value` fails (`not in`: the plain test of condition_holds)."""
    bits = 0
    for bit, allowed in tests:
        if value not in allowed:
            bits |= bit
    return bits
