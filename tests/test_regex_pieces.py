"""A rules regex is not compiled while the text lacks every piece a match needs
(wizard/knowledge/regex_pieces.py, kb.LazyPattern). That shortcut is only right if it never hides a
match: these tests hold it to that, on the real rules and pastes and on random regexes."""

from __future__ import annotations

import glob
import re
from pathlib import Path

import pytest
from ddp_doctor.knowledge import kb as kb_module
from ddp_doctor.knowledge.regex_pieces import required_pieces
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
TEXTS = sorted(glob.glob(str(ROOT / "tests" / "fixtures" / "**" / "*.txt"), recursive=True))


def _rules_patterns(kb) -> list:
    patterns = [p for f in kb.families for p in f.patterns]
    patterns += [rule.pattern for f in kb.families for rule in f.facts]
    patterns += [e.pattern for e in kb.extractors] + [h.pattern for h in kb.hints]
    return patterns + list(kb.line_prefixes) + [kb.library_paths]


@pytest.mark.parametrize(
    ("pattern", "pieces"),
    [
        ("Expected to have finished reduction", ("Expected to have finished reduction",)),
        (r"Parameter (?P<value>\S+) has no gradient\.", (" has no gradient.",)),
        (r"\b(?:discriminator|generator)\.\w", ("discriminator", "generator")),
        (r"ProcessGroupGloo|backend\s*=\s*gloo", ("ProcessGroupGloo", "backend")),
        (r"^\[rank(?P<rank>\d+)\]:", ("[rank",)),
        (r"(?:ab)+c", ("ab",)),
        (r"(?i)layer_?drop", ()),  # case-folded: "LayerDrop" matches, "layer" is not needed
        (r"a(?i:BC)d", ("a",)),
        (r"x?y*", ()),
        (r"one|two?", ("one", "tw")),
        (r"one|\d", ()),  # one alternative needs no text: nothing is certain
        (r"[", ()),  # not a regex: nothing is promised, the loader compiles it as before
    ],
)
def test_the_pieces_a_match_needs(pattern, pieces):
    assert required_pieces(pattern, re.MULTILINE) == pieces


def test_the_rules_regexes_mostly_skip_compiling():
    """Most rules regexes have pieces (else the shortcut would buy nothing)."""
    patterns = _rules_patterns(kb_module.load())
    with_pieces = [p for p in patterns if p.pieces]
    assert len(with_pieces) >= 0.8 * len(patterns)


def test_no_rules_regex_misses_a_match_in_the_real_pastes():
    """Every line and every whole text of the fixtures: where a rules regex matches, the
    shortcut lets it be compiled."""
    patterns = _rules_patterns(kb_module.load())
    assert len(TEXTS) > 300
    for path in TEXTS:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        for piece in [text, *text.splitlines()]:
            for pattern in patterns:
                if not pattern.could_match(piece):
                    compiled = re.compile(pattern.pattern, pattern.flags)
                    assert compiled.search(piece) is None, (pattern.pattern, path)


def test_a_lazy_pattern_answers_as_the_compiled_one():
    pattern = kb_module.LazyPattern(
        r"grad for rank (?P<rank>\d+)", re.MULTILINE, ("grad for rank ",)
    )
    assert pattern.search("no such text") is None
    assert list(pattern.finditer("no such text")) == []
    assert pattern.findall("nothing") == []
    assert pattern.match("nothing") is None
    found = pattern.search("x\ngrad for rank 3: 1 2")
    assert found.group("rank") == "3"
    assert [m.group("rank") for m in pattern.finditer("grad for rank 1 grad for rank 2")] == [
        "1",
        "2",
    ]
    assert pattern.groupindex == {"rank": 1}


# random regexes over a tiny alphabet, and texts over it in both cases: a match must never
# be hidden by the shortcut
_ATOMS = st.sampled_from(["a", "b", "ab", "ba", "[ab]", r"\d", ".", "A"])


def _combine(children):
    return st.one_of(
        st.tuples(children, children).map(lambda p: p[0] + p[1]),
        st.tuples(children, children).map(lambda p: f"(?:{p[0]}|{p[1]})"),
        children.map(lambda p: f"(?:{p})?"),
        children.map(lambda p: f"(?:{p})+"),
        children.map(lambda p: f"(?:{p})*"),
        children.map(lambda p: f"({p})"),
        children.map(lambda p: f"(?i:{p})"),
        children.map(lambda p: rf"\b{p}"),
    )


_REGEXES = st.recursive(_ATOMS, _combine, max_leaves=8)


@settings(max_examples=400, deadline=None)
@given(_REGEXES, st.text(alphabet="abAB1 ", max_size=12))
def test_random_regexes_never_lose_a_match(pattern, text):
    pieces = required_pieces(pattern, re.MULTILINE)
    if re.search(pattern, text, re.MULTILINE):
        assert not pieces or any(p in text for p in pieces), (pattern, text, pieces)
