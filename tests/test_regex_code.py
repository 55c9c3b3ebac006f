"""The rules cache keeps what `re` compiled each rules regex to (knowledge/regex_code.py),
and a run remakes the regex from it instead of compiling it (issue 23). The remade regex
must be the one `re.compile` makes, and a stored code that is not (a hand-edited cache)
must never be used."""

from __future__ import annotations

import re

import pytest
from ddp_doctor.knowledge import kb as kb_module
from ddp_doctor.knowledge.regex_code import from_code, regex_code

RAW = kb_module._read_raw([kb_module._builtin_rules_dir()])
CODES = RAW[kb_module.CODE_KEY]


def test_every_rules_regex_has_its_code_for_the_flags_it_is_compiled_with():
    kb = kb_module._build(RAW)
    lazy = [p for f in kb.families for p in f.patterns]
    lazy += [r.pattern for f in kb.families for r in f.facts] + [h.pattern for h in kb.hints]
    lazy += [e.pattern for e in kb.extractors] + list(kb.line_prefixes)
    lazy += [kb.library_paths, kb.error_line]
    missing = [p.pattern for p in lazy if p.code is None]
    assert not missing


@pytest.mark.parametrize("key", sorted(CODES))
def test_a_regex_remade_from_its_code_is_the_one_re_compiles(key):
    flags, pattern = key.split("/", 1)
    made = from_code(pattern, CODES[key])
    # re.Pattern equality compares the pattern, the flags and the compiled code itself
    assert made == re.compile(pattern, int(flags))
    assert made.groupindex == re.compile(pattern, int(flags)).groupindex


@pytest.mark.parametrize(
    "damage",
    [
        lambda s: [s[0], b"\xff\xff\xff\x7f" * 8, *s[2:]],  # code the engine refuses
        lambda s: [s[0], s[1][:-4], *s[2:]],  # truncated code
        lambda s: [s[0], "not bytes", *s[2:]],
        lambda s: s[:3],
        lambda s: None,
    ],
    ids=["garbage", "truncated", "not-bytes", "short", "none"],
)
def test_a_damaged_code_gives_nothing_and_the_regex_is_compiled_instead(damage):
    stored = regex_code(r"Parameter indices which did not receive grad for rank (\d+)", 8)
    assert stored is not None
    assert from_code("x", damage(stored)) is None
    lazy = kb_module.LazyPattern(r"rank (\d+)", re.MULTILINE, (), damage(stored))
    assert lazy.search("on rank 3").group(1) == "3"
