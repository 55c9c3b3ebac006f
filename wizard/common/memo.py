"""Values made once per object and remembered for the rest of the run.

The engine derives the same things again and again from rules objects that never change
(the plain tests of a condition, the evidence table of the causes, the merged settings, the
ranking for a fact set): each is made once. An entry is keyed on the object's id and keeps
the object itself, so the id cannot be reused by another object while it is remembered; a
store that grows past its bound (rules reloaded many times, as the tests do) starts over.
"""

from __future__ import annotations

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Hashable
    from typing import Any


def per_object(
    store: dict, obj: object, make: Callable[..., Any], bound: int, *args: Any, key: Hashable = None
) -> Any:
    """`make(*args)`, made once per `obj` (and `key`, when the value also depends on it)."""
    entry = store.get((id(obj), key))
    if entry is None or entry[0] is not obj:
        if len(store) >= bound:
            store.clear()
        entry = store[(id(obj), key)] = (obj, make(*args))
    return entry[1]
