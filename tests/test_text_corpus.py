"""The real-sentence corpus is well-formed, and free-text understanding does not fall below
what bench/text_accuracy.py measured (the figures are in README and bench/TEXT.md)."""

from __future__ import annotations

import pytest
from ddp_doctor.knowledge.kb import load
from helpers import ROOT, script_module

KB = load()
bench = script_module("bench/text_accuracy.py")
SENTENCES, QUESTIONS = bench.load_corpus()


def test_every_item_names_its_source_and_a_known_cause():
    causes = {c.id for c in KB.causes}
    families = {f.id for f in KB.families}
    assert len(SENTENCES) >= 160 and len(QUESTIONS) >= 43
    for item in SENTENCES:
        assert item["source"].startswith("https://"), item
        assert item["cause"] in causes, item
        assert item.get("family", "unfinished_reduction") in families, item
        assert item["split"] in ("dev", "held_out") and item["lang"] in ("en", "zh")
    for item in QUESTIONS:
        assert item["source"].startswith("https://") and item["fix"] in KB.fixes, item


def test_every_item_has_the_split_its_source_and_text_give():
    """The split is not chosen by hand: bench.split_for (SHA-1 of source + text, last byte even ->
    dev) decides it, for the items already there and for every item added later."""
    for item in SENTENCES + QUESTIONS:
        assert item["split"] == bench.split_for(item["source"], item["text"]), item


def test_sentences_are_not_copied_into_the_lexicon():
    """Held-out sentences must stay unseen: none of them appears in rules/lexicon.yaml."""
    lexicon = (ROOT / "rules" / "lexicon.yaml").read_text(encoding="utf-8").lower()
    for item in SENTENCES + QUESTIONS:
        assert item["text"].lower() not in lexicon, item["text"]


@pytest.fixture(scope="module")
def measured():
    return bench.measure(KB, SENTENCES, QUESTIONS)


# measured (bench/TEXT.md): en all 87%, held-out 76%; zh all 85%, held-out 83% (18 items)
@pytest.mark.parametrize(
    ("lang", "split", "floor"),
    [("en", "all", 0.85), ("en", "held_out", 0.74), ("zh", "all", 0.82), ("zh", "held_out", 0.8)],
)
def test_top_two_does_not_fall(measured, lang, split, floor):
    row = measured["sentences"][(lang, split)]
    assert row["top2"] / row["n"] >= floor


def test_questions_are_answered_from_the_right_entry(measured):
    row = measured["questions"][("all", "all")]
    # measured 63% (95% before the 57 questions collected on 2026-12-03, which name their fix
    # less often, "why multiply the term by zero?", or are statements, "There is a warning.")
    assert row["answered"] / row["n"] >= 0.6
    # and about what was asked (cost, safety, where to set it...): measured 51%
    assert row["aspect"] / row["n"] >= 0.48


@pytest.fixture(scope="module")
def measured_both():
    return bench.measure_both(KB, SENTENCES, QUESTIONS)


def test_both_readers_answer_more_than_the_lexicon_alone(measured, measured_both):
    """`ask` reads with the lexicon and the nearest examples (rules/examples.yaml); measured on
    the held-out half, which no example holds (bench/TEXT.md): right entry 33/49, right aspect
    26/49, right reading answered or among the choices offered 38/49 (32/49 before a fix's
    readings were offered after the diagnosis of a statement that names it)."""
    alone = measured["questions"][("all", "held_out")]
    both = measured_both[("questions", "all", "held_out")]
    assert both["entry"] >= alone["answered"] and both["aspect"] >= alone["aspect"]
    assert both["entry"] / both["n"] >= 0.6
    assert both["aspect"] / both["n"] >= 0.42
    assert both["among"] / both["n"] >= 0.72


def test_the_examples_do_not_take_descriptions_for_questions(measured_both):
    """A description answered as a question would lose its diagnosis: measured 0 of 195."""
    for lang in ("en", "zh"):
        row = measured_both[("sentences", lang, "all")]
        assert row["hijacked"] / row["n"] <= 0.02


def test_writing_text_md_keeps_its_hand_written_sections(tmp_path):
    """`--write` replaces the generated tables of bench/TEXT.md and keeps the batch sections
    (also in a file written before the marker existed)."""
    path = tmp_path / "TEXT.md"
    path.write_text(
        "# old tables\n| 1 |\n\n## The first batch added\nkept text\n", encoding="utf-8"
    )
    bench.write_text_md("# new tables\n| 2 |\n", path)
    first = path.read_text(encoding="utf-8")
    assert first.startswith("# new tables\n| 2 |\n") and "| 1 |" not in first
    assert first.endswith("## The first batch added\nkept text\n") and bench.MARKER in first
    bench.write_text_md("# newer\n", path)
    second = path.read_text(encoding="utf-8")
    assert second == first.replace("# new tables\n| 2 |\n", "# newer\n")
