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


def condition_holds(condition: Mapping[str, Any] | None, facts: Mapping[str, Any]) -> bool:
    """Evaluate a rules condition (see rules/README.md) against the known facts."""
    if not condition:
        return True
    for key, expected in condition.items():
        if key == "any":
            if not any(condition_holds(c, facts) for c in expected):
                return False
        elif not value_holds(key in facts, facts.get(key), expected):
            return False
    return True


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
