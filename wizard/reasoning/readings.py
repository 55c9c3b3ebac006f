"""What the user's own words were read to say, in the questions' words, and which of those
readings the advice rests on.

A fact read from a sentence is less sure than an answer: the reader has misread users
before ("turning checkpointing off fixes it" once read as *no* checkpointing). Where
advice would change without a reading, the session asks the user to confirm it first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import engine

_MISSING = object()


def explain_facts(kb, facts: Mapping[str, Any], exactly: bool = True) -> list[tuple[Any, Any]]:
    """(question, option) pairs that say in the rules' words what a description set.

    `exactly`: only options that set nothing the description did not (the answers that
    replay it, for the `--answers` file). Otherwise a question about one fact is matched on
    that fact, its option's other settings merely not contradicted: "reentrant
    checkpointing" is read without "checkpointing is used", which its option also says."""
    out = []
    remaining = dict(facts)
    # a question that settles one fact says it best; overview questions come last
    ordered = sorted(kb.questions, key=lambda q: q.fact is None)
    for question in ordered:
        for option in question.options:
            if option.sets and _says(question, option, remaining, facts, exactly):
                out.append((question, option))
                for key in option.sets:
                    remaining.pop(key, None)
                break
    return out


def _says(question, option, remaining: Mapping[str, Any], facts: Mapping[str, Any], exactly):
    if exactly or question.fact is None or question.for_each is not None:
        return all(remaining.get(k, _MISSING) == v for k, v in option.sets.items())
    if remaining.get(question.fact, _MISSING) != option.sets.get(question.fact, _MISSING):
        return False
    return all(facts.get(k, v) == v for k, v in option.sets.items())


def advice_rests_on(
    kb,
    triage,
    facts: Mapping[str, Any],
    answers: Mapping[str, str],
    read: Mapping[str, Any],
) -> list[tuple[Any, Any]]:
    """The readings of the user's text (`read`, as (question, option)) without which the
    advice would differ: the fixes given unconditionally would change, or there would be
    none. Readings the paste also says, or an answer has replaced, are left out."""
    advised = _advised(engine.advice(kb, triage, facts))
    if not advised:
        return []
    pasted = dict(triage.facts) if triage is not None else {}
    resting = []
    for question, option in explain_facts(kb, read, exactly=False):
        if question.for_each is not None or question.id in answers:
            continue
        said = {k: v for k, v in read.items() if k in option.sets}
        if any(facts.get(k, _MISSING) != v for k, v in said.items()):
            continue  # an answer has replaced it: nothing read is left to confirm
        if all(pasted.get(k, _MISSING) == v for k, v in said.items()):
            continue
        without = {k: v for k, v in facts.items() if k not in said}
        if _advised(engine.advice(kb, triage, without)) != advised:
            resting.append((question, option))
    return resting


def _advised(fixes) -> frozenset[str]:
    return frozenset(fix.id for fix in fixes)
