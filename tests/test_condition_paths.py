"""The engine reads plain rules conditions through a fast path (conditions.plain_tests,
inlined in engine._rank_causes). It must answer exactly as the general reader does, for
every condition in the rules and every fact set the interview can reach."""

from __future__ import annotations

import itertools
from types import MappingProxyType

from ddp_doctor.knowledge import kb as kb_module
from ddp_doctor.knowledge.conditions import condition_holds
from ddp_doctor.reasoning import engine
from hypothesis import given, settings
from hypothesis import strategies as st

KB = kb_module.load()


def _conditions(kb) -> list:
    found = [e.when for c in kb.causes for e in c.evidence]
    for fix in kb.fixes.values():
        found += [fix.avoid_when, fix.pointless_when, fix.already_on]
        found += [o.when for o in fix.outcomes]
    found += [q.ask_when for q in kb.questions] + [n.when for n in kb.notes]
    return [c for c in found if c]


def _fact_values(kb) -> dict[str, list]:
    """Every value the rules name for each fact, and one they never name."""
    values: dict[str, dict] = {}
    for condition in _conditions(kb):
        for key, expected in condition.items():
            if key == "any":
                continue
            options = expected if isinstance(expected, list) else [expected]
            for option in options:
                if not isinstance(option, dict):
                    values.setdefault(key, {})[repr(option)] = option
    for question in kb.questions:
        for option in question.options:
            for key, value in option.sets.items():
                values.setdefault(key, {})[repr(value)] = value
    return {key: [*found.values(), "never named"] for key, found in values.items()}


def _general(condition, facts) -> bool:
    # a plain dict is never remembered: it goes through the general reader
    return condition_holds(dict(condition), facts)


_VALUES = _fact_values(KB)
_FACTS = st.lists(st.sampled_from(sorted(_VALUES)), max_size=6, unique=True).flatmap(
    lambda keys: st.fixed_dictionaries({k: st.sampled_from(_VALUES[k]) for k in keys})
)


@settings(max_examples=300, deadline=None)
@given(_FACTS)
def test_every_rules_condition_reads_alike_both_ways(facts):
    for condition in _conditions(KB):
        assert isinstance(condition, MappingProxyType)
        assert condition_holds(condition, facts) == _general(condition, facts), (condition, facts)


def _reference_ranking(kb, facts):
    """Per cause, the evidence that holds as the general reader reads it."""
    return [tuple(e for e in cause.evidence if _general(e.when, facts)) for cause in kb.causes]


@settings(max_examples=200, deadline=None)
@given(_FACTS)
def test_rankings_count_the_same_evidence_as_the_general_reader(facts):
    ranked = {r.id: r for r in engine._rank_causes(KB, facts)}
    for cause, holding in zip(KB.causes, _reference_ranking(KB, facts)):
        assert ranked[cause.id].fired == holding
        assert abs(ranked[cause.id].score - (cause.prior + sum(e.weight for e in holding))) < 1e-9


def test_answer_combinations_rank_alike():
    """Every pair of answers to two questions, on each error family: the same causes fire."""
    families = [f.id for f in KB.families]
    pairs = itertools.combinations([q for q in KB.questions if q.options], 2)
    for family, (first, second) in itertools.product(families[:6], list(pairs)[:40]):
        for a, b in itertools.product(first.options, second.options):
            facts = {"family": family, **a.sets, **b.sets}
            ranked = {r.id: r.fired for r in engine._rank_causes(KB, facts)}
            for cause, holding in zip(KB.causes, _reference_ranking(KB, facts)):
                assert ranked[cause.id] == holding
