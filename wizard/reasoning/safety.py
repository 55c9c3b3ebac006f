"""The safety rule: a fix is advice only if it is proven to work for every plausible cause.

Proof is data: each fix's `outcomes` in rules/fixes.yaml say what it measurably did for a
cause on real DDP (tests/ddp). This module answers two questions, as plain functions:

- which causes are still plausible given the facts (`plausible_causes`), and
- what the measurements say about one fix for those causes (`judge`): advice, a proven
  failure (a warning with the outcome's note), already applied, or open (unproven, or
  depending on a fact not known yet; the engine then looks for the answer that settles it).

The rule and its two settings are documented in rules/README.md ("Outcomes and the
safety rule").
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ..common.memo import per_object
from ..common.record import record
from ..knowledge.conditions import about_more_than_the_family, condition_holds, condition_state

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..knowledge.kb import Fix, Outcome

# `ranked` / `plausible` below are tuples of the engine's RankedCause (cause, probability,
# fired evidence); engine.py imports this module, so the type is not imported here

WORKS = "works"
SEVERITY = {"works": 0, "error": 1, "wrong": 2}  # for one cause the worst applicable result wins

ADVICE = "advice"
FAILS = "fails"
OPEN = "open"
ALREADY_ON = "already_on"


@record
class Verdict:
    """What the outcomes say about one fix for one cause, given the facts."""

    result: str | None  # works | error | wrong; None: unproven, or not decided yet
    outcome: Outcome | None  # the deciding outcome (for a failure: its note is the reason)
    pending: bool  # the result depends on a fact that is not known yet


@record
class Judgement:
    """One fix against every plausible cause."""

    kind: str  # advice | fails | open | already_on
    failing: tuple[tuple[str, Outcome], ...] = ()  # (cause id, outcome), most likely cause first


def verdict(fix: Fix, cause_id: str, facts: Mapping[str, Any]) -> Verdict:
    """Every outcome for `cause_id` whose `when` holds applies, and the worst result wins; an
    outcome whose `when` needs an unknown fact keeps a not-yet-failing verdict open."""
    applies: list[Outcome] = []
    pending: list[Outcome] = []
    for outcome in _by_cause(fix).get(cause_id, ()):
        state = condition_state(outcome.when, facts)
        if state is True:
            applies.append(outcome)
        elif state is None:
            pending.append(outcome)
    worst = max(applies, key=lambda o: SEVERITY[o.result], default=None)
    if worst is not None and worst.result != WORKS:
        return Verdict(worst.result, worst, pending=False)  # nothing pending can make it better
    if pending and (worst is None or any(o.result != WORKS for o in pending)):
        return Verdict(None, None, pending=True)
    return Verdict(WORKS, worst, pending=False) if worst else Verdict(None, None, pending=False)


def _by_cause(fix: Fix) -> Mapping[str, tuple[Outcome, ...]]:
    """The fix's outcomes grouped by cause, once per fix (the planner asks ~10^4 verdicts)."""
    return per_object(_BY_CAUSE, fix, _group_outcomes, 256, fix)


def _group_outcomes(fix: Fix) -> dict[str, tuple[Outcome, ...]]:
    grouped: dict[str, list[Outcome]] = {}
    for outcome in fix.outcomes:
        grouped.setdefault(outcome.cause, []).append(outcome)
    return {cause: tuple(outcomes) for cause, outcomes in grouped.items()}


_BY_CAUSE: dict = {}


def proven(fix: Fix, plausible: tuple, facts: Mapping[str, Any]) -> bool:
    """`judge(...).kind == ADVICE`, stopping at the first cause it is not proven for."""
    if not plausible:
        return False
    measured = _by_cause(fix)
    if any(c.id not in measured for c in plausible):  # unproven for one of them: cheap to see
        return False
    if fix.already_on is not None and condition_holds(fix.already_on, facts):
        return False
    return all(verdict(fix, c.id, facts).result == WORKS for c in plausible)


def plausible_causes(ranked: tuple, facts: Mapping[str, Any], settings: Mapping[str, Any]) -> tuple:
    """The causes the engine cannot rule out, most likely first.

    A cause is plausible when some evidence for it holds, no evidence against it of weight
    `rule_out_weight` or more holds, and either nothing specific is known yet (a bare error
    message keeps every cause it supports: no probability floor can drop a real cause
    before the user has said anything), or its probability reaches `plausible_floor`, or
    strong evidence (`specific_weight`) about more than the error family points at it.

    It reads only the ranking and the settings: the engine's rankings are remembered (the
    same tuple for the same evidence), so the answer is remembered per ranking for the
    engine's read-only settings.
    """
    if type(settings) is not MappingProxyType:  # a caller's dict may change: not remembered
        return _plausible(ranked, settings)
    entry = _PLAUSIBLE.get(id(ranked))
    if entry is None or entry[0] is not ranked or entry[1] is not settings:
        if len(_PLAUSIBLE) >= 4096:
            _PLAUSIBLE.clear()
        entry = _PLAUSIBLE[id(ranked)] = (ranked, settings, _plausible(ranked, settings))
    return entry[2]


_PLAUSIBLE: dict = {}  # id(ranking) -> (ranking, settings, the plausible causes)


def _plausible(ranked: tuple, settings: Mapping[str, Any]) -> tuple:
    rule_out = settings["rule_out_weight"]
    strong = settings["specific_weight"]
    candidates: list[tuple] = []
    anything_specific = False
    for ranked_cause in ranked:
        supported = ruled_out = specific = False
        for e in ranked_cause.fired:  # one pass: the decision table calls this ~100 times a run
            weight = e.weight
            supported = supported or weight > 0
            ruled_out = ruled_out or weight <= -rule_out
            specific = specific or (weight >= strong and about_more_than_the_family(e.when))
        anything_specific = anything_specific or specific
        if not supported or ruled_out:
            continue
        candidates.append((ranked_cause, specific))
    if not anything_specific:
        return tuple(c for c, _ in candidates)
    floor = settings["plausible_floor"]
    return tuple(c for c, specific in candidates if specific or c.probability >= floor)


def judge(fix: Fix, plausible: tuple, facts: Mapping[str, Any]) -> Judgement:
    """Advice only if proven to work for every plausible cause; a proven failure for any of
    them makes it a warning; anything else stays open."""
    if fix.already_on is not None and condition_holds(fix.already_on, facts):
        return Judgement(ALREADY_ON)
    if not plausible:
        return Judgement(OPEN)
    verdicts = [(c.id, verdict(fix, c.id, facts)) for c in plausible]
    failing = tuple(
        (cause_id, v.outcome) for cause_id, v in verdicts if v.result in ("error", "wrong")
    )
    if failing:
        return Judgement(FAILS, failing)
    if all(v.result == WORKS for _, v in verdicts):
        return Judgement(ADVICE)
    return Judgement(OPEN)
