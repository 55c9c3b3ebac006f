"""Refuse regexes that can backtrack catastrophically, before they meet a log.

A user rules file (`--rules`, DDP_DOCTOR_RULES) may hold any regex, and Python's `re`
backtracks: `(a+)+$` takes hours on a 40-byte line. Two checks, both run when rules are
loaded (never while scanning):

- `static_problem` reads the parsed regex and refuses the shapes that explode: a repeat
  inside an unbounded repeat that can split the same text between iterations in many ways
  (`(a+)+`, `(\\w+\\s?)*`, `(\\s*a?)+`), and an unbounded repeat over alternatives that can
  start alike (`(a|ab)+`). A repeat stays allowed when every iteration must pass a
  character the inner repeat cannot match (`(?:\\w+\\.)+` is linear). The built-in rules
  pass it (a test checks), so user rules meet the same bar.
- `runs_in_time` tries the regex on runs of its own characters ending in a failing one and
  stops it after a budget (Python's regex engine checks signals, so SIGALRM interrupts it),
  and refuses one whose time grows faster than its input (a quadratic regex can be quick on
  a fast machine's probe). It catches what the static check cannot see (back-references,
  lookarounds).
"""

from __future__ import annotations

import re

try:  # Python 3.11+
    from re import _constants as _c
    from re import _parser
except ImportError:  # pragma: no cover - Python < 3.11
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _parser  # type: ignore[no-redef]

# the characters a class is tested on: ASCII and a few others that logs hold
_UNIVERSE = [chr(i) for i in range(128)] + ["é", "中", "\u3000", "\u00a0", "٣"]
_BIG_REPEAT = 10  # a bounded repeat of at least this many iterations counts as unbounded
_CATEGORIES = {
    "CATEGORY_DIGIT": re.compile(r"\d"),
    "CATEGORY_NOT_DIGIT": re.compile(r"\D"),
    "CATEGORY_SPACE": re.compile(r"\s"),
    "CATEGORY_NOT_SPACE": re.compile(r"\S"),
    "CATEGORY_WORD": re.compile(r"\w"),
    "CATEGORY_NOT_WORD": re.compile(r"\W"),
}
_REPEATS = {"MAX_REPEAT", "MIN_REPEAT"}  # POSSESSIVE_REPEAT never backtracks
_LOOK = {"ASSERT", "ASSERT_NOT"}


class _Dangerous(Exception):
    pass


def static_problem(pattern: str, flags: int = 0) -> str | None:
    """Why `pattern` can backtrack catastrophically, or None when its shape is safe."""
    try:
        parsed = _parser.parse(pattern, flags)
    except re.error as exc:
        return f"invalid regex: {exc}"
    ignore_case = bool(parsed.state.flags & re.IGNORECASE)
    try:
        _visit(list(parsed), ignore_case, parsed.state)
    except _Dangerous as exc:
        return str(exc)
    except RecursionError:
        return "regex nested too deeply"
    return None


def _name(op) -> str:
    return str(op).upper()


def _visit(items: list, ignore_case: bool, state) -> None:
    for op, av in items:
        name = _name(op)
        if name in _REPEATS:
            low, high, body = av
            if high == _c.MAXREPEAT or high >= _BIG_REPEAT:
                _check_repeat(list(body), ignore_case, state)
            _visit(list(body), ignore_case, state)
        elif name == "SUBPATTERN" or name in _LOOK:
            _visit(list(av[-1]), ignore_case, state)
        elif name == "BRANCH":
            for alternative in av[1]:
                _visit(list(alternative), ignore_case, state)
        elif name == "ATOMIC_GROUP":
            _visit(list(av), ignore_case, state)


def _check_repeat(body: list, ignore_case: bool, state) -> None:
    """An unbounded repeat of `body`: refuse it when iterations can share out the same text
    in many ways: a part of the body that varies in length (`a+`, `a?`, `(ab|a)`) must be
    fenced by a character every iteration has to pass and the varying part cannot match."""
    barriers = _mandatory_sets(body, ignore_case)
    for part in _variable_parts(body, ignore_case, state):
        if not any(not (barrier & part) for barrier in barriers):
            raise _Dangerous(
                "catastrophic backtracking: nested repeats (like (a+)+) can split the same "
                "text between their iterations in exponentially many ways; make the inner "
                "and outer repeat match different characters, or drop one of them"
            )
    alternatives = _alternatives(body)
    if alternatives and len(alternatives) > 1:
        firsts = [_first_chars(list(a), ignore_case) for a in alternatives]
        for i, first in enumerate(firsts):
            for other in firsts[i + 1 :]:
                if first & other:
                    raise _Dangerous(
                        "catastrophic backtracking: a repeated alternation whose branches "
                        "can start with the same character (like (a|ab)+); make the "
                        "branches start differently"
                    )


def _alternatives(body: list) -> list | None:
    """The branches when the repeated body is (a group around) one alternation."""
    while len(body) == 1:
        op, av = body[0]
        name = _name(op)
        if name == "SUBPATTERN":
            body = list(av[-1])
        elif name == "BRANCH":
            return list(av[1])
        else:
            return None
    return None


def _width(items, state) -> tuple[int, int]:
    return _parser.SubPattern(state, list(items)).getwidth()


def _variable_parts(items: list, ignore_case: bool, state) -> list[frozenset]:
    """Character sets of the parts of `items` whose length varies (outside lookarounds)."""
    parts: list[frozenset] = []
    for op, av in items:
        name = _name(op)
        if name in _REPEATS:
            low, high, inner = av
            inner_low, inner_high = _width(inner, state)
            if low != high or inner_low != inner_high:
                parts.append(_chars(list(inner), ignore_case))
            parts.extend(_variable_parts(list(inner), ignore_case, state))
        elif name == "SUBPATTERN":
            parts.extend(_variable_parts(list(av[-1]), ignore_case, state))
        elif name == "BRANCH":
            widths = {_width(a, state) for a in av[1]}
            if len(widths) > 1 or any(lo != hi for lo, hi in widths):
                parts.append(_chars([(op, av)], ignore_case))
            for alternative in av[1]:
                parts.extend(_variable_parts(list(alternative), ignore_case, state))
    return parts


def _mandatory_sets(body: list, ignore_case: bool) -> list[frozenset]:
    """Character sets of the single characters every match of `body` must contain."""
    sets: list[frozenset] = []
    for op, av in body:
        name = _name(op)
        if name in ("LITERAL", "NOT_LITERAL", "ANY", "IN"):
            sets.append(_chars([(op, av)], ignore_case))
        elif name == "SUBPATTERN":
            sets.extend(_mandatory_sets(list(av[-1]), ignore_case))
        elif name in _REPEATS and av[0] >= 1:
            sets.extend(_mandatory_sets(list(av[2]), ignore_case))
    return sets


def _first_chars(items: list, ignore_case: bool) -> frozenset:
    """Characters a match of `items` can start with (all of them when unsure)."""
    if not items:
        return frozenset(_UNIVERSE)
    op, av = items[0]
    name = _name(op)
    if name in ("LITERAL", "NOT_LITERAL", "ANY", "IN"):
        return _chars([items[0]], ignore_case)
    if name == "SUBPATTERN":
        return _first_chars(list(av[-1]) + items[1:], ignore_case)
    if name in _REPEATS:
        first = _first_chars(list(av[2]), ignore_case)
        return first if av[0] >= 1 else first | _first_chars(items[1:], ignore_case)
    if name == "BRANCH":
        return frozenset().union(*(_first_chars(list(a), ignore_case) for a in av[1]))
    if name == "AT":
        return _first_chars(items[1:], ignore_case)
    return frozenset(_UNIVERSE)


def _chars(items: list, ignore_case: bool) -> frozenset:
    """Characters (of a sample universe) any part of `items` can match."""
    found: set[str] = set()
    for op, av in items:
        name = _name(op)
        if name == "LITERAL":
            found |= _cased(chr(av), ignore_case)
        elif name == "NOT_LITERAL":
            excluded = _cased(chr(av), ignore_case)
            found |= {c for c in _UNIVERSE if c not in excluded}
        elif name == "ANY":
            found |= set(_UNIVERSE)
        elif name == "IN":
            found |= _class_chars(av, ignore_case)
        elif name == "SUBPATTERN":
            found |= _chars(list(av[-1]), ignore_case)
        elif name in _REPEATS or name == "POSSESSIVE_REPEAT":
            found |= _chars(list(av[2]), ignore_case)
        elif name == "BRANCH":
            for alternative in av[1]:
                found |= _chars(list(alternative), ignore_case)
        elif name in ("GROUPREF", "GROUPREF_EXISTS"):
            found |= set(_UNIVERSE)
    return frozenset(found)


def _cased(char: str, ignore_case: bool) -> set[str]:
    return {char, char.lower(), char.upper()} if ignore_case else {char}


def _class_chars(items, ignore_case: bool) -> set[str]:
    negate = False
    members: set[str] = set()
    for op, av in items:
        name = _name(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            members |= _cased(chr(av), ignore_case)
        elif name == "RANGE":
            low, high = av
            members |= {c for c in _UNIVERSE if low <= ord(c) <= high}
            if ignore_case:
                members |= {c.swapcase() for c in members}
        elif name == "CATEGORY":
            regex = _CATEGORIES.get(_name(av))
            members |= {c for c in _UNIVERSE if regex is None or regex.match(c)}
    return {c for c in _UNIVERSE if c not in members} if negate else members


# ---------------------------------------------------------------------------- probing

PROBE_LENGTH = (
    20_000  # characters per probing run: linear regexes need milliseconds, quadratic ones seconds
)
# How a probing run ends: a regex that ends in `!` matches a run ending in `!` at once and
# must also meet one that ends otherwise (`(?s).*.*.*!` is cubic on a run with no `!`); NUL
# stands for any character a rule does not expect, and the bare run for a regex whose last
# part is a class (`.*.*[^a]`).
_PROBE_ENDS = ("!", "\n!", "\x00", "\n\x00", "")
_GENERIC_UNITS = (" ", "a", "1", "a,", "a ", "[rank1]: ", "中", "\t", "/", ".")


def runs_in_time(pattern: str, flags: int, budget: float) -> bool:
    """Whether `pattern` gets through runs of its own characters within `budget` seconds.

    Uses SIGALRM, so it only probes in the main thread of a Unix process; elsewhere it
    answers True (the static check still applies)."""
    import signal
    import threading

    if (
        not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        return True
    regex = re.compile(pattern, flags)
    units = list(dict.fromkeys(_GENERIC_UNITS + tuple(c for c in pattern if c.isprintable())))

    class _TimeUp(Exception):
        pass

    def _alarm(_signum, _frame):
        raise _TimeUp

    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, budget)
        return not any(_grows_too_fast(regex, unit, end) for unit in units for end in _PROBE_ENDS)
    except _TimeUp:
        return False
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# A quadratic regex is quick enough on one probing run of a fast machine to pass the budget
# (`(?=(a+))+b`: 0.1 s on 20,000 characters), and seconds on a 10 MB log line. So the run is
# also timed at a quarter of its length: a linear regex takes ~4x as long on the whole run, a
# quadratic one ~16x. Only a whole run slower than _GROWTH_FLOOR is judged, and a suspect one
# is timed again (the best of three), so a pause of the machine refuses nothing.
_SUPERLINEAR = 8.0
_GROWTH_FLOOR = 0.02  # seconds: a linear regex needs about a millisecond on a whole run


def _grows_too_fast(regex: re.Pattern, unit: str, end: str) -> bool:
    from time import perf_counter

    whole = unit * (PROBE_LENGTH // len(unit)) + end
    quarter = unit * (PROBE_LENGTH // 4 // len(unit)) + end
    small = large = float("inf")
    for _ in range(3):
        start = perf_counter()
        regex.search(quarter)
        middle = perf_counter()
        regex.search(whole)
        small, large = min(small, middle - start), min(large, perf_counter() - middle)
        if large < _GROWTH_FLOOR or large < _SUPERLINEAR * small:
            return False
    return True
