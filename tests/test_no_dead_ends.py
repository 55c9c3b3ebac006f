"""No dead ends: every report a user can reach leads somewhere.

For every error family (its first example paste, and no paste at all for the usual error),
every path of answers the interview can take (each option of each question it asks,
"I don't know" included) is walked, and every report on the way must give at least one of:

- a fix proven to work for every plausible cause (advice);
- a decision table with a row for every plausible cause, each row a fix proven for the
  causes its condition leaves (the rows are checked against the outcomes in
  test_safety.py; here: that no plausible cause is left without one);
- a question still open that splits the plausible causes;
- when nothing is plausible any more (contradictory answers), or every plausible cause is
  cured by looking elsewhere (a peer that died first, a debug level that crashes), the steps
  that find the culprit.

Never none of these: a report that ends with "it depends" and nothing to act on.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ddp_doctor.knowledge.kb import load
from ddp_doctor.reading.triage import triage_text
from ddp_doctor.reasoning import engine

KB = load()
TESTS = Path(__file__).parent
DEPTH = 5  # answers walked per path: more than a truthful user needs (bench/RIGHT_FIX.md)


def _paste(family_id: str):
    example = KB.family(family_id).positive[0]
    text = example.text or (TESTS / example.file).read_text(encoding="utf-8")
    return triage_text(KB, text)


def what_it_gives(diagnosis: engine.Diagnosis) -> str | None:
    """What the report leads the user to, or None for a dead end."""
    if diagnosis.fixes:
        return "fix"
    if not diagnosis.plausible:
        return "find the culprit" if diagnosis.diagnostics else None
    if all(
        all(KB.fixes[f].kind == "diagnostic" for f in KB.cause(c).fixes)
        for c in diagnosis.plausible
    ):
        return "find the culprit" if diagnosis.diagnostics else None
    covered = {cause for row in diagnosis.conditional for cause in row.fix.for_causes}
    if all(cause in covered for cause in diagnosis.plausible):
        return "decision table"
    if diagnosis.splitting_question is not None:
        return "question"
    return None


def _walk(triage, facts: dict, answers: dict, depth: int, dead: list) -> int:
    diagnosis = engine.diagnose(KB, triage, facts, answers)
    if what_it_gives(diagnosis) is None:
        dead.append((dict(answers), diagnosis.plausible))
        return 1
    if diagnosis.fixes or depth == 0:
        return 1
    modules = triage.unused_modules if triage else ()
    asked = engine.next_question(KB, facts, answers.keys(), modules, len(answers))
    # the interview may be over while the report still names a deciding question: a user
    # who answers it must be led somewhere too
    asked = asked or diagnosis.splitting_question
    if asked is None:
        return 1
    walked = 1
    for option in asked.options:
        after = engine.apply_answer(facts, asked, option.value)
        walked += _walk(triage, after, {**answers, asked.key: option.value}, depth - 1, dead)
    return walked


FAMILIES = [f.id for f in KB.families if f.positive]

# The dead ends left, each for a reason the rules cannot answer yet. The test fails on any
# other dead end, and on one of these once it leads somewhere (then delete it here).
KNOWN_GAPS = {
    # LlamaFactory's own message: doing as it says (the option off for LoRA) is not measured
    "llamafactory_ddp_flag": [{}],
}


def _explains(gap: dict, answers: dict) -> bool:
    """A known gap explains a dead end whose answers include one of each of its values (an
    empty gap: the bare paste itself)."""
    if not gap:
        return not answers
    return all(answers.get(question) in values for question, values in gap.items())


def _unexplained(dead: list, family_id: str) -> list:
    """The dead ends no known gap of the family explains."""
    gaps = KNOWN_GAPS.get(family_id, [])
    return [(a, p) for a, p in dead if not any(_explains(g, a) for g in gaps)]


@pytest.mark.parametrize("family_id", FAMILIES)
def test_every_answer_path_leads_somewhere(family_id: str):
    triage = _paste(family_id)
    assert triage.findings, f"{family_id}: its first example is not recognised"
    dead: list = []
    walked = _walk(triage, dict(triage.facts), {}, DEPTH, dead)
    gaps = KNOWN_GAPS.get(family_id, [])
    unexplained = _unexplained(dead, family_id)
    assert not unexplained, (
        f"{family_id}: {len(unexplained)} of {walked} reports lead nowhere: {unexplained[:4]}"
    )
    # a gap that no path meets any more is fixed: delete it from KNOWN_GAPS
    fixed = [g for g in gaps if not any(_explains(g, a) for a, _ in dead)]
    assert not fixed, f"{family_id}: these known gaps lead somewhere now: {fixed}"


def test_without_a_paste_every_answer_path_leads_somewhere():
    """The interview with nothing pasted assumes the usual error."""
    facts = {"family": KB.engine["default_family"]}
    dead: list = []
    walked = _walk(None, facts, {}, DEPTH, dead)
    assert walked > 10
    unexplained = _unexplained(dead, facts["family"])
    assert not unexplained, (
        f"{len(unexplained)} of {walked} reports lead nowhere: {unexplained[:3]}"
    )


def test_a_dead_end_is_recognised():
    """The check itself can fail: a report with plausible causes, no fix, no table and no
    question is a dead end."""
    diagnosis = engine.diagnose(KB, _paste("unfinished_reduction"), {}, {})
    stripped = engine.replace(diagnosis, fixes=(), conditional=(), splitting_question=None)
    assert stripped.plausible
    assert what_it_gives(stripped) is None
