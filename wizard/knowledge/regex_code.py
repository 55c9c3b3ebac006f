"""Rules regexes compiled once, when the rules cache is built, and remade from their code.

Compiling a regex with Python's `re` (parse, then generate the matching engine's code) costs
~0.1 ms, and a report compiles ~15 of the rules' regexes: ~2 ms of every run, for the same
result every time. The rules cache keeps what `re` made of each (`regex_code`: the final
flags, the engine's code, the groups), and a run hands it to the engine directly
(`from_code`, ~2 us), which checks the code before it accepts it (`_sre` validates every
code it is given). Anything that does not fit (another Python, a hand-edited cache) gives
None, and the regex is compiled by `re` as before: this is only ever a shortcut.

The cache is keyed by the Python version and `_sre.MAGIC` (kb._cache_key), the code's
format; like regex_pieces.py, this reads `re`'s own (private) parser and compiler.
"""

from __future__ import annotations

import re

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def regex_code(pattern: str, flags: int) -> list | None:
    """What `re.compile(pattern, flags)` makes, as plain data for the cache; None if unsure."""
    try:
        import _sre
        from array import array

        try:  # Python 3.11+
            from re import _compiler, _parser
        except ImportError:  # pragma: no cover - Python < 3.11
            import sre_compile as _compiler  # type: ignore[no-redef]
            import sre_parse as _parser  # type: ignore[no-redef]

        parsed = _parser.parse(pattern, flags)
        words = array("I", _compiler._code(parsed, flags))
        if words.itemsize != _sre.CODESIZE:
            return None
        groupindex = dict(parsed.state.groupdict)
        indexgroup: list[str | None] = [None] * parsed.state.groups
        for name, index in groupindex.items():
            indexgroup[index] = name
        final = int(flags | parsed.state.flags)
        stored = [final, words.tobytes(), parsed.state.groups - 1, groupindex, indexgroup]
        made = from_code(pattern, stored)
        expected = re.compile(pattern, flags)
        if made is None or (made.flags, made.groups, made.groupindex) != (
            expected.flags,
            expected.groups,
            expected.groupindex,
        ):
            return None
        return stored
    except Exception:  # noqa: BLE001 - any surprise from `re`'s internals: no shortcut
        return None


def from_code(pattern: str, stored: Any) -> re.Pattern | None:
    """The compiled regex from what `regex_code` stored, or None (then compile it)."""
    try:
        import _sre

        final, code, groups, groupindex, indexgroup = stored
        if not isinstance(code, bytes) or not isinstance(groupindex, dict):
            return None
        words = memoryview(code).cast("I").tolist()
        return _sre.compile(pattern, final, words, groups, groupindex, tuple(indexgroup))
    except Exception:  # noqa: BLE001 - a code the engine refuses (validated), a wrong shape
        return None


def code_format() -> str:
    """What the stored code depends on besides the Python version (for the cache key)."""
    try:
        import _sre

        return f"{_sre.MAGIC}/{_sre.CODESIZE}"
    except (ImportError, AttributeError):  # pragma: no cover - not CPython
        return "none"
