"""Pieces of plain text of which every match of a regex must contain at least one.

Compiling a regex with Python's `re` costs more than searching a pasted error with it, and
a run reaches a few dozen of the rules' regexes, most of which cannot match the text at
hand. Whatever a match of `Expected to have finished (?:reduction|...)` is, it contains
"Expected to have finished ": when a text lacks that, the regex cannot match it and needs
no compiling. A regex made of alternatives (`ProcessGroupGloo|backend=gloo`) needs one
piece of each. This module finds such pieces once, when the rules cache is built; the
loader (kb.LazyPattern) looks for them with a plain substring search before compiling.

Only what is certain counts: characters that follow each other in a part of the pattern
that every match passes through (the top level, a plain group, a repeat taken at least
once, every alternative of a choice), matched case-sensitively. Anything optional or
case-folded is skipped; a pattern with no certain piece gets (), and is compiled as before.
"""

from __future__ import annotations

import re

try:  # Python 3.11+
    from re import _constants as _c
    from re import _parser
except ImportError:  # pragma: no cover - Python < 3.11
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _parser  # type: ignore[no-redef]

_REPEATS = {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}


def required_pieces(pattern: str, flags: int = 0) -> tuple[str, ...]:
    """Texts of which every match of `pattern` contains one; () when none is certain."""
    try:
        parsed = _parser.parse(pattern, flags)
        if parsed.state.flags & re.IGNORECASE:
            return ()
        return _needs(list(parsed))
    except (re.error, RecursionError, OverflowError, ValueError):
        return ()


def _needs(items: list) -> tuple[str, ...]:
    """The best choice of pieces for a sequence: any one of them is certain to be there."""
    runs: list[str] = []  # literal text matched as a whole, in order
    choices: list[tuple[str, ...]] = []
    current = ""
    for op, value in items:
        if op is _c.LITERAL:
            current += chr(value)
            continue
        if op is _c.AT:  # ^, $, \b match no character: the text on both sides is contiguous
            continue
        if current:
            runs.append(current)
            current = ""
        inner: tuple[str, ...] = ()
        if op is _c.SUBPATTERN and not value[1] and not value[2]:  # a group setting no flag
            inner = _needs(list(value[-1]))
        elif op is _c.BRANCH:
            options = [_needs(list(option)) for option in value[1]]
            if all(options):
                inner = tuple(dict.fromkeys(piece for option in options for piece in option))
        elif str(op) in _REPEATS and value[0] >= 1:
            inner = _needs(list(value[2]))
        if inner:
            choices.append(inner)
    if current:
        runs.append(current)
    candidates = [(run,) for run in runs] + choices
    # the rarest-looking choice: long pieces, and few of them
    return max(candidates, key=lambda c: (min(len(p) for p in c), -len(c)), default=())
