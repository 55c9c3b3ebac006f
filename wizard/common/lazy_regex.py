"""A module's regex compiled the first time it is used, not when the module is imported.

Compiling a regex with `re` costs 20-300 us (a class reaching past the BMP, a lookbehind over
CJK punctuation), and a module compiled all of its own at import: ~1.5 ms of every
`triage --json` run, for regexes most runs never use (the name-list reader's, those for
control characters most logs do not hold). `LazyRegex(pattern, flags)` stands in for
`re.compile(pattern, flags)`: the first method asked for compiles it, and the compiled
pattern's own bound methods are then set on the instance, so later calls cost nothing extra.
"""

from __future__ import annotations

import re

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split")


class LazyRegex:
    """`re.compile(pattern, flags)`, compiled on first use (see the module docstring)."""

    def __init__(self, pattern: str, flags: int = 0):
        self.pattern, self.flags = pattern, flags

    def compiled(self) -> re.Pattern:
        made = self.__dict__.get("_made")
        if made is None:
            made = self._made = re.compile(self.pattern, self.flags)
            for method in _METHODS:  # instance attributes: found without __getattr__
                setattr(self, method, getattr(made, method))
        return made

    def __getattr__(self, name: str) -> Any:  # only for what is not set yet
        if name.startswith("__") or name == "_made":
            raise AttributeError(name)
        return getattr(self.compiled(), name)

    def __repr__(self) -> str:
        return f"LazyRegex({self.pattern!r})"
