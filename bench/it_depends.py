"""How often a report ends in "it depends on the cause" with nothing left to ask.

`tests/test_no_dead_ends.py` accepts a decision table as a way forward. A table whose rows all
say "if the cause is X, then ..." and no question that could tell the causes apart leaves the
user to guess: this walks the same answer paths (every option of every question the interview
asks, "I don't know" included, five answers deep, from each error family's first example
paste and from no paste at all, plus no paste with each fact a description can set) and
counts where each path ends:

    python bench/it_depends.py          # the counts, then the commonest cause-only endings
    python bench/it_depends.py --session

`--session` walks what the interactive session asks (`next_question` alone, its answer
budget included, seven answers deep) and counts how its interviews end: with a fix, with a
table whose deciding question the user answered "I don't know", or stopped while the report
still names a deciding question never asked (how many answers and "I don't know"s before).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEPTH = 5
# facts a description read by the lexicon can set before any question (rules/lexicon.yaml)
DESCRIBED = (
    {"forwards_per_backward": "many"},
    {"find_unused_enabled": True},
    {"static_graph_enabled": True},
    {"gradient_checkpointing": "reentrant"},
    {"lora": True},
    {"multitask": True},
    {"backward_calls": "many"},
)


def ending(diagnosis) -> str:
    if diagnosis.fixes:
        return "fix"
    if not diagnosis.conditional:
        return "no table"
    if len(diagnosis.plausible) > 1 and all(row.cause for row in diagnosis.conditional):
        return "cause-only table"
    return "table"


def walk(kb, engine, triage, facts, answers, depth, start, ends, cause_only) -> None:
    diagnosis = engine.diagnose(kb, triage, facts, answers)
    modules = triage.unused_modules if triage else ()
    asked = None
    if not diagnosis.fixes and depth:
        asked = engine.next_question(kb, facts, answers.keys(), modules, len(answers))
        asked = asked or diagnosis.splitting_question
    if asked is None:
        kind = ending(diagnosis)
        ends[kind] += 1
        if kind == "cause-only table":
            cause_only[(start, tuple(sorted(diagnosis.plausible)))] += 1
        return
    for option in asked.options:
        after = engine.apply_answer(facts, asked, option.value)
        more = {**answers, asked.key: option.value}
        walk(kb, engine, triage, after, more, depth - 1, start, ends, cause_only)


def starts(kb):
    from ddp_doctor.reading.triage import triage_text

    family = kb.engine["default_family"]
    yield "no paste", None, {"family": family}
    for fam in kb.families:
        if fam.positive:
            example = fam.positive[0]
            text = example.text or (ROOT / "tests" / example.file).read_text(encoding="utf-8")
            triage = triage_text(kb, text)
            yield fam.id, triage, dict(triage.facts)
    for facts in DESCRIBED:
        said = ", ".join(f"{k}={v}" for k, v in facts.items())
        yield f"no paste, {said}", None, {"family": family, **facts}


SESSION_DEPTH = 7


def session_walk(kb, engine, triage, facts, answers, depth, ends) -> None:
    """One interview path as the session runs it: only the questions it asks itself."""
    if not depth:
        ends[f"still asking after {SESSION_DEPTH} answers"] += 1
        return
    modules = triage.unused_modules if triage else ()
    unsure = [key for key, value in answers.items() if value == engine.UNSURE]
    asked = engine.next_question(kb, facts, answers.keys(), modules, len(answers), unsure=unsure)
    if asked is None:
        ends[session_ending(engine.diagnose(kb, triage, facts, answers), answers, len(unsure))] += 1
        return
    for option in asked.options:
        after = engine.apply_answer(facts, asked, option.value)
        more = {**answers, asked.key: option.value}
        session_walk(kb, engine, triage, after, more, depth - 1, ends)


def session_ending(diagnosis, answers, unsure: int) -> str:
    if diagnosis.fixes:
        return "fix"
    deciding = diagnosis.splitting_question
    if deciding is not None and deciding.key not in answers:
        return f"stopped, deciding question unasked ({len(answers)} answers, {unsure} unsure)"
    return "table, its question answered unsure" if diagnosis.conditional else "nothing"


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from ddp_doctor.knowledge.kb import load
    from ddp_doctor.reasoning import engine

    kb = load()
    if "--session" in sys.argv:
        ends: Counter = Counter()
        for _name, triage, facts in starts(kb):
            session_walk(kb, engine, triage, facts, {}, SESSION_DEPTH, ends)
        print("| the session ends with | paths |\n|---|---:|")
        for kind, count in sorted(ends.items(), key=lambda item: (-item[1], item[0])):
            print(f"| {kind} | {count} |")
        return 0
    ends: Counter = Counter()
    cause_only: Counter = Counter()
    for name, triage, facts in starts(kb):
        walk(kb, engine, triage, facts, {}, DEPTH, name, ends, cause_only)
    print("| path ends in | reports |\n|---|---:|")
    for kind, count in ends.most_common():
        print(f"| {kind} | {count} |")
    print("\n| start | causes left | reports |\n|---|---|---:|")
    for (start, causes), count in cause_only.most_common(12):
        print(f"| {start} | {', '.join(causes)} | {count} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
