"""Triage on the corpus of real pastes from public issue threads (tests/fixtures/real/corpus).

Every paste is verbatim; its expectation (family, the names and indices it carries, the cause
where the thread settles it) was written from the thread, not from the tool's output.
`bench/corpus.py` reports the same figures in bench/CORPUS.md.
"""

from __future__ import annotations

import json

import corpus_eval
import pytest
from ddp_doctor import kb as kb_module
from helpers import cli

KB = kb_module.load()
ENTRIES = corpus_eval.load_corpus()
OUTCOMES = {e.ident: corpus_eval.run_one(KB, e) for e in ENTRIES}


def test_the_corpus_is_large_and_varied():
    families = {e.family for e in ENTRIES}
    assert len(ENTRIES) >= 150
    assert sum(e.family == corpus_eval.NONE for e in ENTRIES) >= 30
    assert {"unfinished_reduction", "mark_ready_twice", "paddle_unused_parameters"} <= families
    assert all(e.url.startswith("https://github.com/") for e in ENTRIES)
    assert all(e.text_path.read_bytes().strip() for e in ENTRIES)


@pytest.mark.parametrize("ident", sorted(OUTCOMES))
def test_family(ident):
    outcome = OUTCOMES[ident]
    assert outcome.family == outcome.expected.family


@pytest.mark.parametrize("ident", sorted(i for i, o in OUTCOMES.items() if o.carries_names))
def test_names_and_indices(ident):
    outcome = OUTCOMES[ident]
    assert outcome.names == outcome.expected.names
    assert outcome.indices == outcome.expected.indices


def test_json_for_a_negative_carries_no_causes_and_no_fixes():
    """`--json` with no known error: nothing ranked, nothing advised (issue 11)."""
    negatives = [e for e in ENTRIES if e.family == corpus_eval.NONE][:3]
    done = cli("triage", "--json", *(str(e.text_path) for e in negatives))
    report = json.loads(done.out)
    assert done.returncode == 1
    assert report["status"] == "no_known_error"
    for key in ("causes", "fixes", "diagnostics", "warnings", "conditional_fixes"):
        assert report.get(key, []) == [], key


def test_cause_in_top_two_where_the_paste_shows_it():
    """Done when: the thread's cause is in the top two on >= 90% of the pastes whose own text
    carries evidence of it."""
    score = corpus_eval.Score(list(OUTCOMES.values()))
    ok, total = score.cause(evidence=True)
    assert total >= 4
    assert ok / total >= 0.9, [
        (o.expected.ident, o.expected.cause, o.causes[:2])
        for o in OUTCOMES.values()
        if o.expected.cause and o.expected.evidence and not o.cause_top2
    ]
