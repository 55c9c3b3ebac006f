"""Every regex in the rules stays fast on hostile input (no catastrophic backtracking).

Logs are written by programs, and programs repeat themselves: 200 KB of spaces, of digits,
of `a,` or of `[rank1]: ` is an ordinary Tuesday. Each regex of the rules (and of the
normaliser and the scanner) is run with `search` and `finditer` on long runs of the
characters its own source repeats, plus generic runs, each followed by a character that
makes the match fail at the very end (where backtracking explodes). Each regex runs in its
own subprocess with a generous time-out: a linear regex needs milliseconds, a catastrophic
one needs years, so the limit never decides a close race.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "rules"
RUN_LENGTH = 200_000  # characters in each adversarial run
TIME_LIMIT = 30.0  # seconds for all inputs of one regex; linear ones take well under 1 s

GENERIC_UNITS = [
    " ",
    "\t",
    "\n",
    "1",
    "a",
    "a,",
    "a, ",
    "a.",
    "1 ",
    "1.",
    "[rank1]: ",
    "[rank1]:",
    "[default0]:",
    "0: ",
    "/",
    "\\",
    "-",
    "=",
    "x_",
    "é",
    "中",
    "site-packages/",
    "2024-01-01 12:00:00 ",
]
FAILING_ENDS = ["!", "\n!"]


def _regexes_in(node, where: str, found: dict[str, tuple[str, int]], flags: int) -> None:
    """Collect regexes: values of pattern-like keys, and `re:` strings in keyword matches."""
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{where}.{key}"
            if key in ("pattern", "library_paths") and isinstance(value, str):
                found[here] = (value, flags)
            elif key in ("patterns", "line_prefixes") and isinstance(value, list):
                for i, item in enumerate(value):
                    found[f"{here}[{i}]"] = (item, flags)
            elif key == "match" and isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, str) and item.startswith("re:"):
                        found[f"{here}[{i}]"] = (item[3:], 2)  # re.IGNORECASE, as kb.py
            else:
                _regexes_in(value, here, found, flags)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            ident = item.get("id") if isinstance(item, dict) else None
            _regexes_in(item, f"{where}[{ident or i}]", found, flags)


def rules_regexes() -> dict[str, tuple[str, int]]:
    found: dict[str, tuple[str, int]] = {}
    for path in sorted(RULES.rglob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        _regexes_in(data, path.relative_to(RULES).as_posix(), found, 8)  # re.MULTILINE
    return found


def code_regexes() -> dict[str, tuple[str, int]]:
    from ddp_doctor.reading import analyser, message, namelists, normalise, scanner, triage

    found = {}
    for module in (normalise, triage, analyser, message, namelists, scanner):
        for name, value in vars(module).items():
            if hasattr(value, "pattern") and hasattr(value, "finditer"):
                found[f"{module.__name__}.{name}"] = (value.pattern, value.flags)
    return found


def units_for(pattern: str) -> list[str]:
    """Runs worth trying on this pattern: each character its source names, and generic ones.

    A regex's quantifiers repeat the characters it names, so a run of one of them is what
    drives it deepest into backtracking.
    """
    chars = [c for c in dict.fromkeys(pattern) if c.isprintable() and c not in "()?|*+{}"]
    return list(dict.fromkeys(GENERIC_UNITS + chars))


_CHILD = textwrap.dedent(
    """
    import json, re, sys
    spec = json.loads(sys.stdin.read())
    regex = re.compile(spec["pattern"], spec["flags"])
    for unit in spec["units"]:
        run = unit * (spec["length"] // len(unit))
        for end in spec["ends"]:
            text = run + end
            regex.search(text)
            for _ in regex.finditer(text):
                pass
    print("ok")
    """
)


def runs_in_time(pattern: str, flags: int, units: list[str], limit: float) -> bool:
    spec = {
        "pattern": pattern,
        "flags": flags,
        "units": units,
        "length": RUN_LENGTH,
        "ends": FAILING_ENDS,
    }
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD],
            input=json.dumps(spec),
            capture_output=True,
            text=True,
            timeout=limit,
        )
    except subprocess.TimeoutExpired:
        return False
    assert done.returncode == 0, done.stderr
    return done.stdout.strip() == "ok"


ALL = {**rules_regexes(), **code_regexes()}


def test_rules_have_regexes():
    """The collector finds the rules' regexes (a rename in the rules would empty this test)."""
    names = " ".join(ALL)
    for part in ("line_prefixes", "library_paths", "hints", "extractors", "patterns", "facts"):
        assert part in names
    assert any(".match[" in name for name in ALL)  # keywords' `re:` entries


@pytest.mark.parametrize("name", sorted(ALL))
def test_regex_is_linear_on_long_runs(name: str):
    pattern, flags = ALL[name]
    assert runs_in_time(pattern, flags, units_for(pattern), TIME_LIMIT), (
        f"{name}: {pattern!r} backtracks catastrophically on a long run of its own characters"
    )


def test_the_check_catches_catastrophic_backtracking():
    """The harness itself: a textbook exponential regex must fail it (short limit)."""
    assert not runs_in_time(r"^(\s*a?)+$", 0, [" "], 5.0)
    assert runs_in_time(r"^\s*a$", 0, [" "], TIME_LIMIT)
