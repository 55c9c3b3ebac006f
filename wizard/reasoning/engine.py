"""Facts -> ranked causes -> fixes, and which question to ask next.

Pure functions over the knowledge base: no terminal, no I/O, so every decision the
interview makes can be tested by feeding facts in. Causes are scored in log-odds (prior
plus the weights of the evidence that holds) and turned into probabilities with a softmax;
the next question is the one whose answers would leave the least uncertainty (expected
entropy) about the cause.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Iterator, Mapping
from itertools import islice
from types import MappingProxyType

from ..common.memo import per_object
from ..common.record import field, record, replace
from ..knowledge.conditions import (  # condition_state is re-exported
    UNKNOWN,
    ConditionTable,
    about_more_than_the_family,
    condition_holds,
    condition_state,  # noqa: F401
)
from ..knowledge.kb import Cause, Evidence, Fix, KnowledgeBase, Option, Outcome, Question, Text
from ..reading.triage import Finding, TriageResult
from . import safety
from .tailoring import DEFAULT_FRAMEWORK, FRAMEWORK_FACT, printed_key

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Hashable
    from typing import Any

DEFAULT_SETTINGS = {
    "lead_probability": 0.6,  # one cause "clearly leads" above this ...
    "lead_margin": 0.3,  # ... and this far ahead of the next
    "max_questions": 4,
    "max_questions_toward_a_fix": 8,
    "shown_causes": 3,
    "shown_fixes": 4,
    "fix_cause_floor": 0.2,  # causes less likely than this (but the first) add no diagnostics
    "rule_out_weight": 2.0,  # evidence this heavy against a cause rules it out (safety.py)
    "plausible_floor": 0.1,  # once something specific is known (safety.py)
    "specific_weight": 1.5,  # evidence this heavy about more than the family is "specific"
    "conditional_per_answer": 2,  # fixes shown per answer in the decision table
    "conditional_rows": 10,
    "shown_findings": 3,  # errors the interview lists as found in the paste
}
UNSURE = "unsure"


# ---------------------------------------------------------------------------- results


@record
class RankedCause:
    cause: Cause
    probability: float
    score: float  # log-odds, before normalisation
    reasons: tuple[Text, ...]  # of the evidence that raised it, strongest first
    fired: tuple[Evidence, ...] = ()  # every evidence entry that holds

    @property
    def id(self) -> str:
        return self.cause.id


@record
class RankedFix:
    fix: Fix
    score: float
    for_causes: tuple[str, ...]
    avoided: bool = False  # recommended by a likely cause but wrong here: show the warning
    reason: Text | None = None  # why it is a warning: a failing outcome's note, or fix.warning
    failing_cause: str | None = None  # the plausible cause it is proven to fail for
    failing_outcome: Outcome | None = None

    @property
    def id(self) -> str:
        return self.fix.id


@record
class AskedQuestion:
    """A question as put to the user: a rules question, instantiated for one module."""

    question: Question
    key: str  # the id in --answers files: `id`, or `id:module` for per-module questions
    fields: Mapping[str, str] = field(default_factory=dict)  # placeholders in its texts
    # values of options that deny what is known already (the paste, an earlier answer): not
    # offered, so that no user is invited to describe someone else
    denied: frozenset = frozenset()

    @property
    def options(self) -> tuple[Option, ...]:
        if not self.denied:
            return self.question.options
        return tuple(o for o in self.question.options if o.value not in self.denied)


@record
class Answer:
    """One answer to one question: a step of a condition in the decision table."""

    asked: AskedQuestion
    option: Option


@record
class ConditionalFix:
    """A fix that becomes advice once these answers are given ("if ..., then ..."), or, with
    no answers, once the cause is known to be `cause` (a plausible cause the question does
    not settle: the row names the fix proven for that cause alone)."""

    fix: RankedFix
    answers: tuple[Answer, ...]  # the first is the question to ask now
    cause: str | None = None

    @property
    def facts(self) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for answer in self.answers:
            merged.update(answer.option.sets)
        return merged


@record
class Diagnosis:
    findings: tuple[Finding, ...]
    facts: Mapping[str, Any]
    causes: tuple[RankedCause, ...]
    fixes: tuple[RankedFix, ...]  # advice: proven to work for every plausible cause
    diagnostics: tuple[RankedFix, ...]
    avoided: tuple[RankedFix, ...]  # warnings: proven to fail for a plausible cause
    unused_modules: tuple[str, ...]
    answers: Mapping[str, str]
    framework: str
    confident: bool  # one cause clearly leads
    plausible: tuple[str, ...] = ()  # the causes the safety rule keeps in play
    conditional: tuple[ConditionalFix, ...] = ()  # the decision table
    splitting_question: AskedQuestion | None = None  # the one question that splits it

    @property
    def family(self) -> str | None:
        return self.facts.get("family")


# ---------------------------------------------------------------------------- ranking


def settings(kb: KnowledgeBase) -> Mapping[str, Any]:
    """The engine settings of these rules over the defaults (read-only, made once per rules)."""
    return per_object(_SETTINGS, kb.engine, _merged_settings, 64, kb.engine)


def _merged_settings(engine: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType({**DEFAULT_SETTINGS, **engine})


_SETTINGS: dict = {}


def _facts_key(facts: Mapping[str, Any]) -> Hashable | None:
    """A key equal for equal fact sets, None when a value cannot be hashed (a dict, a nested
    list): the caller then works without its memo."""
    try:
        return frozenset(facts.items())  # most fact sets: every value a scalar
    except TypeError:
        pass
    try:
        key = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in facts.items()))
        hash(key)
    except TypeError:
        return None
    return key


def rank_causes(kb: KnowledgeBase, facts: Mapping[str, Any]) -> tuple[RankedCause, ...]:
    """The causes, most likely first (remembered per fact set, see `_rank_causes`)."""
    key = _facts_key(facts)
    if key is None:
        return _rank_causes(kb, facts)
    return per_object(_RANKED, kb.causes, _rank_causes, _RANKINGS_KEPT, kb, facts, key=key)


_RANKED: dict = {}


def _rank_causes(kb: KnowledgeBase, facts: Mapping[str, Any]) -> tuple[RankedCause, ...]:
    """The causes, most likely first. A ranking depends only on which evidence holds: the
    decision table and the question planner rank ~100 fact sets for one paste, most of
    them alike in the evidence they fire, so each ranking is made once per set of holding
    evidence (the bits of `_EvidenceTable.conditions`)."""
    table = _evidence_table(kb.causes)
    holding = table.conditions.holding(facts)
    leans = facts.get(TEXT_LEANS) or ()
    key = (holding, leans) if leans else holding
    ranked = table.rankings.get(key)
    if ranked is None:
        if len(table.rankings) >= _RANKINGS_KEPT:
            table.forget()
        ranked = _ranking(table.causes, holding)
        if leans:
            reason = kb.messages.get("reason_text_lean")
            ruled_out = settings(kb)["rule_out_weight"]
            ranked = _leaned(ranked, dict(leans), reason, ruled_out)
        table.rankings[key] = ranked
    return ranked


# The fact the `ask` path and the session set from a description's nearest examples: ((cause,
# log-odds), ...), the examples' similarity to each cause's reports above a floor, scaled by a
# weight, both fitted on the corpus's `dev` half and on sentences that tell nothing
# (rules/examples.yaml `calibration: cause_lean, cause_floor`). Added to each cause's
# score, it moves the ranking as far as such similarity has told the right cause on `dev`.
TEXT_LEANS = "text_leans"


def _leaned(
    ranked: tuple[RankedCause, ...], leans: dict[str, float], reason, rule_out: float
) -> tuple:
    """`ranked` with each cause's lean added to its log-odds, bar the causes evidence rules
    out (`rule_out_weight` against them, as the safety rule reads it): a text that sounds like
    a cause's reports does not bring back a cause what it says excludes. The cause the
    description is nearest to says so among its reasons: after what the text says outright,
    before the generic reasons of the error family (the order of `_reason_order`)."""
    leans = {
        rc.id: leans[rc.id]
        for rc in ranked
        if rc.id in leans and all(e.weight > -rule_out for e in rc.fired)
    }
    if not leans:
        return ranked
    nearest = max(leans, key=leans.get) if reason is not None else None
    scored = [(rc, rc.score + leans.get(rc.id, 0.0)) for rc in ranked]
    top = max(score for _, score in scored)
    weights = [math.exp(score - top) for _, score in scored]
    total = sum(weights) or 1.0
    out = [
        replace(
            rc,
            probability=w / total,
            score=score,
            reasons=_with_reason(rc, reason) if rc.id == nearest else rc.reasons,
        )
        for (rc, score), w in zip(scored, weights)
    ]
    out.sort(key=_most_likely_first)  # stable: ties keep the order without the leans
    return tuple(out)


_RANKINGS_KEPT = 4096


def _ranking(causes: tuple, holding: int) -> tuple[RankedCause, ...]:
    scored = []
    top = -math.inf
    for cause, evidence, mask, made in causes:
        key = holding & mask  # the cause's own evidence that holds: its score and reasons
        entry = made.get(key)
        if entry is None:
            entry = made[key] = _scored(cause, evidence, holding)
        scored.append(entry)
        if entry[1] > top:  # max() without a call per cause
            top = entry[1]
    weights = [math.exp(s - top) for _, s, _, _ in scored]
    total = sum(weights) or 1.0
    ranked = [
        RankedCause(cause, w / total, s, reasons, fired)
        for (cause, s, reasons, fired), w in zip(scored, weights)
    ]
    ranked.sort(key=_most_likely_first)  # stable: ties keep the rules' order
    return tuple(ranked)


def _scored(cause: Cause, evidence: tuple, holding: int) -> tuple:
    """(cause, score, reasons shown, fired evidence) for the evidence that holds."""
    score = cause.prior
    fired = []
    raised = []
    for bit, e, order in evidence:
        if not holding & bit:
            continue
        fired.append(e)
        score += e.weight
        if order is not None:
            raised.append((order, e.reason))
    if len(raised) > 1:
        raised.sort(key=_first)
    return cause, score, tuple(reason for _, reason in raised), tuple(fired)


def _first(item: tuple) -> Any:
    return item[0]


def _most_likely_first(ranked: RankedCause) -> float:
    return -ranked.probability


class _EvidenceTable:
    """Every cause's evidence, read once per set of rules: `conditions` reads all their
    `when`s at once, `causes` holds (cause, ((bit, evidence, its place among the reasons
    shown or None), ...), its bits, its scores by holding bits), `rankings` the rankings
    made so far by holding bits. Only
    evidence with a reason and a positive weight is shown as a reason: a strong reason
    tied to what this user said or pasted comes before the generic one for the family; a
    weak hint (a nudge under 1 in log-odds) does not."""

    def __init__(self, causes: tuple[Cause, ...]):
        every = [e for cause in causes for e in cause.evidence]
        self.conditions = ConditionTable([e.when for e in every])
        bits = iter(range(len(every)))
        rows = [
            (cause, tuple((1 << next(bits), e, _reason_order(e)) for e in cause.evidence))
            for cause in causes
        ]
        # + the bits of the cause's evidence, and its scores made so far by those bits
        self.causes = tuple(
            (cause, evidence, sum(bit for bit, _, _ in evidence), {}) for cause, evidence in rows
        )
        self.rankings: dict[int, tuple[RankedCause, ...]] = {}

    def forget(self) -> None:
        """Start the remembered rankings and scores over (a store grown past its bound)."""
        self.rankings.clear()
        for _, _, _, made in self.causes:
            made.clear()


_TABLES: dict = {}


def _evidence_table(causes: tuple[Cause, ...]) -> _EvidenceTable:
    return per_object(_TABLES, causes, _EvidenceTable, 64, causes)


def _reason_order(e: Evidence) -> tuple[bool, float] | None:
    if e.reason is None or e.weight <= 0:
        return None
    return (not (about_more_than_the_family(e.when) and e.weight >= 1.0), -e.weight)


def leads_clearly(kb: KnowledgeBase, ranked: tuple[RankedCause, ...]) -> bool:
    if not ranked:
        return False
    conf = settings(kb)
    second = ranked[1].probability if len(ranked) > 1 else 0.0
    return (
        ranked[0].probability >= conf["lead_probability"]
        and ranked[0].probability - second >= conf["lead_margin"]
    )


def _diagnostic_causes(
    ranked: tuple[RankedCause, ...], plausible: tuple[RankedCause, ...], conf: Mapping[str, Any]
) -> list[RankedCause]:
    """The causes whose steps that find the culprit are shown: the first and the likely ones
    of those listed; every cause when the answers fit none (one of them may not quite match
    the code), rather than a report with nothing to do."""
    if not plausible:
        return list(ranked)
    return [
        rc
        for i, rc in enumerate(ranked[: conf["shown_causes"]])
        if i == 0 or rc.probability >= conf["fix_cause_floor"]
    ]


def plan_fixes(
    kb: KnowledgeBase, ranked: tuple[RankedCause, ...], facts: Mapping[str, Any]
) -> tuple[tuple[RankedFix, ...], tuple[RankedFix, ...], tuple[RankedFix, ...]]:
    """(fixes, diagnostics, avoided) for the plausible causes, best first.

    Fixes go through the safety rule (safety.py): advice only when proven to work for every
    plausible cause, a warning when proven to fail for one of them (or `avoid_when` holds);
    the rest are left for the decision table. A fix's score is the best over the causes
    that list it of the cause's probability, discounted by its position in that list.
    """
    conf = settings(kb)
    plausible = safety.plausible_causes(ranked, facts, conf)
    diagnostic_causes = _diagnostic_causes(ranked, plausible, conf)
    scores: dict[str, float] = {}
    owners: dict[str, list[str]] = {}
    for ranked_cause in _unique(list(plausible) + diagnostic_causes):
        for position, fix_id in enumerate(ranked_cause.cause.fixes):
            is_diagnostic = kb.fixes[fix_id].kind == "diagnostic"
            if (
                (ranked_cause in diagnostic_causes)
                if is_diagnostic
                else (ranked_cause in plausible)
            ):
                score = ranked_cause.probability * (0.8**position)
                scores[fix_id] = max(scores.get(fix_id, 0.0), score)
                owners.setdefault(fix_id, []).append(ranked_cause.id)
    fixes, diagnostics, avoided = [], [], []
    for fix_id, score in sorted(scores.items(), key=lambda item: -item[1]):
        fix = kb.fixes[fix_id]
        if fix.pointless_when is not None and condition_holds(fix.pointless_when, facts):
            continue  # e.g. "let PyTorch name the parameters" when the error names them
        entry = RankedFix(fix, score, tuple(owners[fix_id]))
        if fix.kind == "diagnostic":
            diagnostics.append(entry)
            continue
        judgement = safety.judge(fix, plausible, facts)
        avoid = fix.avoid_when is not None and condition_holds(fix.avoid_when, facts)
        if judgement.kind == safety.ALREADY_ON:
            continue  # the text shows it is applied: never advise it again
        if avoid and judgement.kind != safety.FAILS:  # a measured failure says more
            avoided.append(replace(entry, avoided=True, reason=fix.warning))
        elif judgement.kind == safety.ADVICE:
            fixes.append(entry)
        elif judgement.kind == safety.FAILS:
            cause_id, outcome = judgement.failing[0]
            avoided.append(
                replace(
                    entry,
                    avoided=True,
                    reason=outcome.note or fix.warning,
                    failing_cause=cause_id,
                    failing_outcome=outcome,
                )
            )
    return tuple(fixes), tuple(diagnostics), tuple(avoided)


def _unique(items: list) -> list:
    seen: set[int] = set()
    return [i for i in items if not (id(i) in seen or seen.add(id(i)))]


def _with_reason(ranked: RankedCause, reason) -> tuple:
    """The cause's reasons with `reason` after its specific ones (`_reason_order`)."""
    specific = sum(
        1
        for e in ranked.fired
        if e.reason is not None and e.weight >= 1.0 and about_more_than_the_family(e.when)
    )
    return ranked.reasons[:specific] + (reason,) + ranked.reasons[specific:]


# ---------------------------------------------------------------------------- questions


def instantiate(kb: KnowledgeBase, modules: Iterable[str]) -> list[AskedQuestion]:
    """Every question as it could be asked, per-module ones once per revealed module (made
    once per rules and modules: the decision table asks for them ~30 times a report)."""
    modules = tuple(modules)
    made = per_object(_INSTANTIATED, kb.questions, _instantiated, 64, kb, modules, key=modules)
    return list(made)


def _instantiated(kb: KnowledgeBase, modules: tuple[str, ...]) -> tuple[AskedQuestion, ...]:
    asked: list[AskedQuestion] = []
    for question in kb.questions:
        if question.for_each == "unused_modules":
            for module in modules[: question.limit]:
                asked.append(AskedQuestion(question, f"{question.id}:{module}", {"module": module}))
        else:
            asked.append(AskedQuestion(question, question.id))
    return tuple(asked)


_INSTANTIATED: dict = {}


def is_open(asked: AskedQuestion, facts: Mapping[str, Any], answered: Iterable[str]) -> bool:
    """Still worth asking: not answered, its fact unknown, its condition true."""
    question = asked.question
    if asked.key in answered:
        return False
    if question.fact and question.for_each is None and question.fact in facts:
        return False
    return condition_holds(question.ask_when, facts)


def contradicts(option: Option, facts: Mapping[str, Any]) -> bool:
    """The option says the opposite of a fact already known (an earlier answer, the paste):
    a row or a branch built on it would describe another user. The error family is known
    only when its error was pasted (`seen_<family>`); with nothing pasted the usual one is
    assumed (`engine: default_family`), and an answer naming another error replaces it.
    An option whose `offer_when` does not hold is treated alike: it is not offered."""
    if option.offer_when is not None and not condition_holds(option.offer_when, facts):
        return True
    for key, value in option.sets.items():
        if facts.get(key, value) != value and (key != "family" or _family_seen(facts)):
            return True
    return False


def _family_seen(facts: Mapping[str, Any]) -> bool:
    return bool(facts.get(f"seen_{facts.get('family')}"))


def apply_answer(
    facts: Mapping[str, Any], asked: AskedQuestion, value: str
) -> dict[str, Any] | None:
    """The facts after answering; None if `value` is not one of the question's options."""
    question = asked.question
    if question.kind == "text":
        return dict(facts)
    option = next((o for o in question.options if o.value == value), None)
    if option is None:
        return None
    return {**facts, **option.sets}


def answers_win(
    kb: KnowledgeBase,
    facts: Mapping[str, Any],
    read: Mapping[str, Any],
    answers: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """`facts` without what was only read from the user's text (`read`) where an answer since
    says otherwise. An answer replaces a fact of its own key; this also drops a read fact
    whose own question ties it to the opposite of an answer: the checkpointing question's
    "none" also says no checkpointing is used, so "Gradient checkpointing is on" picked from
    the training-step list undoes a sentence read as no checkpointing ("can't set
    gradient_checkpointing=True …"). The user's answer is surer than the reader. An answer
    that leaves its question's fact unknown ("I don't know", given where a reading was asked
    back and rejected) also takes the reading away (`answers`: question id -> value)."""
    kept = dict(facts)
    unknown_now = _left_unknown(kb, answers or {})
    for key, value in read.items():
        if kept.get(key, UNKNOWN) != value:
            continue  # not read, or an answer has replaced it already
        implied = _implied(kb, key, value)
        if key in unknown_now or any(a in kept and kept[a] != b for a, b in implied.items()):
            del kept[key]
    return kept


def _left_unknown(kb: KnowledgeBase, answers: Mapping[str, str]) -> set[str]:
    """The facts whose own question was answered with an option that does not set them."""
    unknown = set()
    for question in kb.questions:
        value = answers.get(question.id)
        if value is None or not question.fact or question.for_each is not None:
            continue
        option = next((o for o in question.options if o.value == value), None)
        if option is not None and question.fact not in option.sets:
            unknown.add(question.fact)
    return unknown


def _implied(kb: KnowledgeBase, key: str, value: Any) -> dict[str, Any]:
    """What the question asking `key` sets besides, for the answer that sets `value`."""
    for question in kb.questions:
        if question.fact == key and question.for_each is None:
            for option in question.options:
                if option.sets.get(key, UNKNOWN) == value:
                    return {k: v for k, v in option.sets.items() if k != key}
    return {}


def _entropy(ranked: tuple[RankedCause, ...]) -> float:
    return -sum(r.probability * math.log(r.probability) for r in ranked if r.probability > 0)


def expected_entropy(
    kb: KnowledgeBase,
    facts: Mapping[str, Any],
    asked: AskedQuestion,
    follow_ups: Iterable[AskedQuestion] = (),
) -> float:
    """Entropy about the cause left after the answer, averaged over the likely answers.

    The evidence weights are log-likelihood ratios, so a cause that an answer would raise
    by `w` makes that answer `e**w` times more likely than an answer that leaves it alone:
    P(answer) = sum over causes of P(cause) * softmax over answers of the cause's score change.
    Weighting by it makes the interview ask first about the causes that are likely, instead
    of chasing an improbable one.

    `follow_ups` are questions not open yet: an answer that opens one (multi-task "yes"
    opens "are all the losses summed?") is worth what that follow-up would then leave, so
    a question whose value lies in its follow-up is not passed over.
    """
    follow_ups = list(follow_ups)
    outcomes = [o for o in asked.options if o.sets]
    if not outcomes:
        return math.inf
    answered = [{**facts, **o.sets} for o in outcomes]
    after = [rank_causes(kb, f) for f in answered]
    weights = _per_cause_weights(kb, facts, answered)
    p_outcome = [
        sum(cause.probability * weights[cause.id][i] for cause in rank_causes(kb, facts))
        for i in range(len(outcomes))
    ]
    left = []
    for option, ranked in zip(outcomes, after):
        entropy = _entropy(ranked)
        opened = {**facts, **option.sets}
        for follow_up in follow_ups:
            if condition_holds(follow_up.question.ask_when, opened) and not _settled(
                follow_up, opened
            ):
                entropy = min(entropy, expected_entropy(kb, opened, follow_up))
        left.append(entropy)
    return sum(p * h for p, h in zip(p_outcome, left))


def _settled(asked: AskedQuestion, facts: Mapping[str, Any]) -> bool:
    question = asked.question
    return bool(question.fact) and question.for_each is None and question.fact in facts


def next_question(
    kb: KnowledgeBase,
    facts: Mapping[str, Any],
    answered: Iterable[str],
    modules: Iterable[str] = (),
    asked_count: int = 0,
    lookahead: int = 2,
    unsure: Collection[str] = (),
    for_interview: bool = True,
) -> AskedQuestion | None:
    """The question to ask now, or None when the interview is over. `lookahead`: how many
    answers the search for a fix looks ahead (1 is cheaper, for the decision table's
    second level). `unsure`: the questions answered "I don't know" so far; each takes one
    question from the extra budget toward a fix, so a user who cannot tell is not kept
    long. Options that deny a known fact are not offered. `for_interview`: the question
    the interview asks; the decision table, which only orders its candidates by it, skips
    what the interview adds (a tailoring question only if some answer changes what is
    printed, `_tailors`; with no advice, the table's own deciding question before the end)."""
    asked = _next_question(
        kb, facts, answered, modules, asked_count, lookahead, unsure, for_interview
    )
    return None if asked is None else offered(asked, facts)


def offered(asked: AskedQuestion, facts: Mapping[str, Any]) -> AskedQuestion:
    """The question with the options these facts deny left out (`contradicts`): what the
    session offers, and what the report's deciding question lists."""
    denied = frozenset(o.value for o in asked.question.options if o.sets and contradicts(o, facts))
    return replace(asked, denied=denied) if denied else asked


def _next_question(
    kb: KnowledgeBase,
    facts: Mapping[str, Any],
    answered: Iterable[str],
    modules: Iterable[str],
    asked_count: int,
    lookahead: int,
    unsure: Collection[str],
    for_interview: bool,
) -> AskedQuestion | None:
    answered = set(answered)
    conf = settings(kb)
    advises = _advises(kb, facts)
    # the usual budget once a fix is advice; while none is, a few more questions may lead to one
    budget = conf["max_questions"]
    if not advises:
        budget = max(budget, conf["max_questions_toward_a_fix"] - len(unsure))
    if asked_count >= budget:
        return None
    candidates = [a for a in instantiate(kb, modules) if is_open(a, facts, answered)]
    if not advises:
        # no fix is proven for every cause still in play: ask what leads to one soonest
        toward = question_toward_a_fix(kb, facts, candidates, lookahead)
        if toward is not None:
            return toward
    tailoring = [a for a in candidates if a.question.purpose == "tailor"]
    diagnostic = [a for a in candidates if a.question.purpose == "diagnose"]
    # keep the last slots for tailoring (framework, backward layout) while they are open
    diagnose_budget = conf["max_questions"] - len(tailoring)
    ranked = rank_causes(kb, facts)
    if diagnostic and asked_count < diagnose_budget and not leads_clearly(kb, ranked):
        current = _entropy(ranked)
        closed = [
            a
            for a in instantiate(kb, modules)
            if a.question.purpose == "diagnose"
            and a.key not in answered
            and not condition_holds(a.question.ask_when, facts)
        ]
        scored = [(expected_entropy(kb, facts, a, closed), i, a) for i, a in enumerate(diagnostic)]
        best_entropy, _, best = min(scored, key=lambda item: (item[0], item[1]))
        if best_entropy < current - 1e-6:
            return best
    if not advises and for_interview:
        # no fix yet and no question that narrows the causes (one may lead clearly with no
        # fix proven for the others): the question the report would say decides is asked
        # rather than ending on "it depends" (a session used to stop there)
        deciding = _deciding_question(kb, facts, answered, unsure, modules)
        if deciding is not None:
            return deciding
    if asked_count >= conf["max_questions"]:
        return None  # the questions beyond the usual budget are for a fix, not for tailoring
    return next((a for a in tailoring if not for_interview or _tailors(kb, facts, a)), None)


def _deciding_question(
    kb: KnowledgeBase,
    facts: Mapping[str, Any],
    answered: set[str],
    unsure: Collection[str],
    modules: Iterable[str],
) -> AskedQuestion | None:
    """The question the report would name as deciding (`diagnose`), if it is still to be
    asked: when no answer decides with every answer counted, the report looks again with the
    "I don't know" ones left open, and the interview must not stop on a question it names."""
    _, deciding = _table_unsure_open(kb, facts, answered, unsure, modules, set())
    return None if deciding is None or deciding.key in answered else deciding


def _table_unsure_open(
    kb: KnowledgeBase,
    facts: Mapping[str, Any],
    answered: Iterable[str],
    unsure: Collection[str],
    modules: Iterable[str],
    advised: set[str],
) -> tuple[tuple[ConditionalFix, ...], AskedQuestion | None]:
    """`decision_table`, and where it has no rows, again with the questions answered "I don't
    know" left open: such a question can still decide, and its rows say what to check. The
    report (`diagnose`) and the interview (`_deciding_question`) look the same way."""
    rows, deciding = decision_table(kb, facts, answered, modules, advised)
    if not rows and unsure:
        settled = [key for key in answered if key not in unsure]
        rows, deciding = decision_table(kb, facts, settled, modules, advised)
    return rows, deciding


def _tailors(kb: KnowledgeBase, facts: Mapping[str, Any], asked: AskedQuestion) -> bool:
    """Some answer changes what the report prints (tailoring.py): a framework question is
    not worth a keypress when every fix the report can show (advice, the table's rows, the
    other fixes of the causes in play) is spelled the same for every framework. With no
    advice yet it is asked: the answers still to come may lead to any fix."""
    if not _advises(kb, facts):
        return True
    now = _printed(kb, facts)
    return any(
        _printed(kb, {**facts, **option.sets}) != now
        for option in asked.options
        if option.sets and not contradicts(option, facts)
    )


def _printed(kb: KnowledgeBase, facts: Mapping[str, Any]) -> tuple:
    """The advice in its order, and how every fix in play would be spelled."""
    advice = tuple(entry.fix.id for entry in _advice(kb, facts))
    return advice, printed_key(kb, _fixes_in_play(kb, facts), facts)


def _fixes_in_play(kb: KnowledgeBase, facts: Mapping[str, Any]) -> list[Fix]:
    """Every fix a plausible cause lists, in the causes' order: what a report can show."""
    plausible = safety.plausible_causes(rank_causes(kb, facts), facts, settings(kb))
    ids = dict.fromkeys(fix_id for ranked in plausible for fix_id in ranked.cause.fixes)
    return [kb.fixes[fix_id] for fix_id in ids]


# ---------------------------------------------------------------------------- toward a fix

# What an answer that leaves no fix is assumed to cost beyond the lookahead: at least one more
# question, and often more (a question that only narrows the causes).
_BEYOND_LOOKAHEAD = 2.0
# Expected costs closer than this are a tie, won by the question tried first (the one whose
# single answer most often ends in advice): the likelihoods behind them are rough, and the
# more direct question is the easier one to answer
_NEAR_TIE = 0.05


def question_toward_a_fix(
    kb: KnowledgeBase,
    facts: Mapping[str, Any],
    candidates: list[AskedQuestion],
    lookahead: int = 2,
) -> AskedQuestion | None:
    """The open question after which a truthful user is expected to need the fewest further
    answers before the report can advise a fix (proven for every cause still in play).

    Two answers are looked ahead: each answer of a question is weighed by how likely it is
    (`_answer_likelihoods`); an answer that leaves no fix costs one more question, the best
    next one, whose own answers without a fix cost `_BEYOND_LOOKAHEAD` (so does "I don't
    know"). Questions are tried in order of their one-answer reach, and the search stops as
    soon as no further question can beat the best so far (each answer without a fix costs at
    least two), so the second level is computed for a few questions only. None when no
    answer of any question (within two) leads to a fix: the interview then narrows the
    causes instead (expected entropy).
    """
    scored = []
    for asked in candidates:
        found = _branches(kb, facts, asked) if asked.question.kind == "select" else None
        if found is not None:
            reach = sum(p for p, _, advised in found if advised)
            scored.append((reach, asked, found))
    scored.sort(key=lambda item: -item[0])
    if lookahead < 2:
        return scored[0][1] if scored and scored[0][0] > 0 else None
    worst = 1.0 + 1.0 + _BEYOND_LOOKAHEAD  # every answer without a fix, at its worst
    best_cost, best = worst, None
    # a question's `head_start` (rules) is taken off its cost, so the bound below allows for
    # the largest one still to come
    most = max((asked.question.head_start for _, asked, _ in scored), default=0.0)
    for reach, asked, branches in scored:
        if 1.0 + 2.0 * (1.0 - reach) - most >= best_cost - 1e-9:
            break
        cost = 1.0 - asked.question.head_start
        for p, answered_facts, advised in branches:
            if advised:
                continue
            if answered_facts is None:  # "I don't know": the question was wasted
                cost += p * (1.0 + _BEYOND_LOOKAHEAD)
            else:
                cost += p * (1.0 + _best_next_cost(kb, facts, answered_facts, candidates, asked))
            if cost >= best_cost - 1e-9:
                break
        if cost < best_cost - _NEAR_TIE:
            best_cost, best = cost, asked
    return best


def _branches(
    kb: KnowledgeBase, facts: Mapping[str, Any], asked: AskedQuestion
) -> list[tuple[float, dict[str, Any] | None, bool]] | None:
    """[(P(answer), facts after it, whether it leads to advice)] over the answers a user can
    give, "I don't know" last (facts None: it changes nothing); None for a question without
    an answer that sets something."""
    options = [o for o in asked.options if o.sets and not contradicts(o, facts)]
    if not options:
        return None
    answered = [{**facts, **o.sets} for o in options]
    probabilities = _answer_likelihoods(kb, facts, options, answered)
    branches: list[tuple[float, dict[str, Any] | None, bool]] = [
        (p, f, p > 0 and _advises(kb, f)) for p, f in zip(probabilities, answered)
    ]
    unsure = 1.0 - sum(probabilities)
    if unsure > 1e-9:
        branches.append((unsure, None, False))
    return branches


def _answer_likelihoods(
    kb: KnowledgeBase,
    facts: Mapping[str, Any],
    options: list[Option],
    answered: list[dict[str, Any]],
) -> list[float]:
    """P(answer) = sum over causes of P(cause) * P(answer | cause); the rest is "I don't know".

    A cause with `cases` answers as its typical users would (causes.yaml: case_baseline and
    the cases' truths): the first option whose facts are all true for them, "I don't know"
    where none is. A cause without cases answers by the evidence weights (`_per_cause_weights`).
    """
    by_weight = None
    total = [0.0] * len(options)
    for ranked in rank_causes(kb, facts):
        typical = ranked.cause.typical
        if typical:
            for truths in typical:
                i = _honest_option(options, truths)
                if i is not None:
                    total[i] += ranked.probability / len(typical)
            continue
        if by_weight is None:
            by_weight = _per_cause_weights(kb, facts, answered)
        for i, p in enumerate(by_weight[ranked.id]):
            total[i] += ranked.probability * p
    return total


def _honest_option(options: list[Option], truths: Mapping[str, Any]) -> int | None:
    for i, option in enumerate(options):
        if all(k in truths and truths[k] == v for k, v in option.sets.items()):
            return i
    return None


def _per_cause_weights(
    kb: KnowledgeBase, facts: Mapping[str, Any], answered: list[dict[str, Any]]
) -> dict[str, list[float]]:
    """For each cause, a softmax over the answers of the change each makes to its score."""
    before = {r.id: r.score for r in rank_causes(kb, facts)}
    after = [{r.id: r.score for r in rank_causes(kb, f)} for f in answered]
    out = {}
    for cause_id, score in before.items():
        deltas = [scores[cause_id] - score for scores in after]
        top = max(deltas)
        weights = [math.exp(d - top) for d in deltas]
        total = sum(weights)
        out[cause_id] = [w / total for w in weights]
    return out


def _best_next_cost(
    kb: KnowledgeBase,
    before: Mapping[str, Any],
    facts: Mapping[str, Any],
    candidates: list[AskedQuestion],
    just_asked: AskedQuestion,
) -> float:
    """After one answer without a fix (`before` -> `facts`): the expected further cost of the
    best next question, looking one answer ahead (an answer without a fix then costs
    `_BEYOND_LOOKAHEAD`)."""
    best = _BEYOND_LOOKAHEAD
    for asked in _still_open(kb, before, facts, candidates, just_asked):
        branches = _branches(kb, facts, asked)
        if branches is None:
            continue
        missed = sum(p for p, _, advised in branches if not advised)
        best = min(best, 1.0 + missed * _BEYOND_LOOKAHEAD)
        if best <= 1.0 + 1e-9:
            break
    return best


def _still_open(
    kb: KnowledgeBase,
    before: Mapping[str, Any],
    facts: Mapping[str, Any],
    candidates: list[AskedQuestion],
    just_asked: AskedQuestion,
) -> list[AskedQuestion]:
    """The questions open after an answer: the other candidates still open, and those the
    answer opened (a follow-up such as "are all the losses summed?"). A question open before
    the answer that is no candidate was answered already: the answer does not reopen it."""
    keys = {a.key for a in candidates}
    opened = [
        a
        for a in _general_questions(kb)
        if a.key not in keys and is_open(a, facts, ()) and not is_open(a, before, ())
    ]
    return [
        a
        for a in candidates + opened
        if a.key != just_asked.key and a.question.kind == "select" and is_open(a, facts, ())
    ]


def _general_questions(kb: KnowledgeBase) -> tuple[AskedQuestion, ...]:
    """Every question that is not asked per module, once per set of rules."""
    return per_object(_GENERAL, kb.questions, lambda: tuple(instantiate(kb, ())), 64)


_GENERAL: dict = {}


def _advises(kb: KnowledgeBase, facts: Mapping[str, Any]) -> bool:
    """Whether these facts lead to advice (some fix proven for every plausible cause)."""
    return bool(_advice(kb, facts))


# ---------------------------------------------------------------------------- decision table


def decision_table(
    kb: KnowledgeBase,
    facts: Mapping[str, Any],
    answered: Iterable[str],
    modules: Iterable[str],
    advised: set[str],
    depth: int = 2,
) -> tuple[tuple[ConditionalFix, ...], AskedQuestion | None]:
    """The fixes that become advice for some answer of the question that splits the
    plausible causes, and that question; ((), None) when no answer changes the advice.

    Each answer is diagnosed as if it had been given; where one answer is not enough, the
    question that would follow it is tried too (`depth` answers at most).
    """
    modules = tuple(modules)
    candidates = _splitting_candidates(kb, facts, answered, modules, min(depth, 2))
    # one level down only the question that would come next is tried: the table stays short
    # and the search cheap
    passed_over: tuple[tuple[ConditionalFix, ...], AskedQuestion] | None = None
    for asked in candidates if depth > 1 else islice(candidates, 1):
        rows, splits = _rows(kb, facts, asked, answered, modules, advised, depth)
        if rows and splits:
            return rows, asked
        if rows and passed_over is None:
            # every answer leads to the same rows through the next question, so this one
            # splits nothing (the framework before "does forward return outputs the loss
            # ignores?"): those rows stand without it, unless a question that splits comes
            passed_over = rows, rows[0].answers[0].asked
    return passed_over or ((), None)


def _splitting_candidates(
    kb: KnowledgeBase,
    facts: Mapping[str, Any],
    answered: Iterable[str],
    modules: tuple[str, ...],
    lookahead: int = 2,
) -> Iterator[AskedQuestion]:
    """Open questions that could split the causes: the interview's next question first (the
    one toward a fix, whatever its purpose), then the diagnostic ones, then the tailoring
    ones, each in rules order. Made as they are tried: the table mostly stops at the first
    or second, and one level down it tries one only, so the others are never tested open."""
    answered = set(answered)
    first = next_question(kb, facts, answered, modules, 0, lookahead, for_interview=False)
    first_key = None if first is None else first.key
    selects = [a for a in instantiate(kb, modules) if a.question.kind == "select"]
    for is_first, diagnoses in _CANDIDATE_PLACES:
        for a in selects:
            if (
                (a.key == first_key) is is_first
                and (a.question.purpose == "diagnose") is diagnoses
                and is_open(a, facts, answered)
            ):
                yield a


# (the interview's next question?, a diagnostic one?): the order candidates are tried in
_CANDIDATE_PLACES = ((True, True), (True, False), (False, True), (False, False))


def _rows(
    kb: KnowledgeBase,
    facts: Mapping[str, Any],
    asked: AskedQuestion,
    answered: Iterable[str],
    modules: tuple[str, ...],
    advised: set[str],
    depth: int,
) -> tuple[tuple[ConditionalFix, ...], bool]:
    """The table's rows for this question, and whether its answers lead to different rows."""
    conf = settings(kb)
    options = [o for o in asked.options if o.sets and not contradicts(o, facts)]
    answered_facts = [{**facts, **o.sets} for o in options]
    per_option: list[list[ConditionalFix]] = []
    after_this: set[tuple] = set()  # each answer's rows through the next question
    decides = False  # some answer makes a fix advice by itself
    for option, hypothetical in zip(options, answered_facts):
        fixes = _advice(kb, hypothetical) if _advises(kb, hypothetical) else ()
        new = [f for f in fixes if f.id not in advised][: conf["conditional_per_answer"]]
        step = Answer(asked, option)
        rows: list[ConditionalFix] = []
        if new:
            rows = [ConditionalFix(f, (step,)) for f in new]
            decides = True
        elif depth > 1:
            deeper = [*answered, asked.key]
            nested, _ = decision_table(kb, hypothetical, deeper, modules, advised, depth - 1)
            rows = [ConditionalFix(r.fix, (step, *r.answers)) for r in nested]
            after_this.add(tuple((r.fix.id, _steps(r.answers)) for r in nested))
        per_option.append(rows)
    if len(after_this) == 1 and not decides:  # the rows stand without this question
        rows = next((rows for rows in per_option if rows), [])
        return tuple(replace(row, answers=row.answers[1:]) for row in rows), False
    limit = conf["conditional_rows"]
    return _within_limit(kb, facts, options, answered_facts, per_option, limit), True


def _steps(answers: tuple[Answer, ...]) -> tuple[tuple[str, str], ...]:
    return tuple((a.asked.key, a.option.value) for a in answers)


def _within_limit(
    kb: KnowledgeBase,
    facts: Mapping[str, Any],
    options: list[Option],
    answered_facts: list[dict[str, Any]],
    per_option: list[list[ConditionalFix]],
    limit: int,
) -> tuple[ConditionalFix, ...]:
    """The rows of a table, at most `limit`, in the question's order. When they do not all
    fit, those of the answers a user is likeliest to give are kept: a row cut for length
    is then one that few readers would have needed. `answered_facts`: the facts after each
    option, as the rows were planned."""
    if sum(len(rows) for rows in per_option) <= limit:
        return tuple(row for rows in per_option for row in rows)
    likely = _answer_likelihoods(kb, facts, options, answered_facts)
    kept, room = set(), limit
    for i in sorted(range(len(options)), key=lambda i: (-likely[i], i)):
        if 0 < len(per_option[i]) <= room:
            kept.add(i)
            room -= len(per_option[i])
    return tuple(row for i, rows in enumerate(per_option) if i in kept for row in rows)


def advice(
    kb: KnowledgeBase, triage: TriageResult | None, facts: Mapping[str, Any]
) -> tuple[RankedFix, ...]:
    """The unconditional fixes `diagnose` gives for these facts, without its decision table
    (what it costs): to ask whether the advice would change without some fact."""
    all_facts = dict(triage.facts) if triage else {}
    all_facts.update(facts)
    return _advice(kb, all_facts)


def _advice(kb: KnowledgeBase, facts: Mapping[str, Any]) -> tuple[RankedFix, ...]:
    """The advice for these facts: `plan_fixes(...)[0]`. Remembered per fact set, since the
    table revisits the same answers; whether there is any (`_advises`) is read from it too,
    so each fact set is planned once."""
    key = _facts_key(facts)
    if key is None:
        return _plan_advice(kb, facts)
    return per_object(_ADVICE, kb, _plan_advice, _RANKINGS_KEPT, kb, facts, key=key)


def _plan_advice(kb: KnowledgeBase, facts: Mapping[str, Any]) -> tuple[RankedFix, ...]:
    """`plan_fixes(...)[0]` without the diagnostics and warnings nobody reads here (the
    decision table plans ~50 fact sets a run). A fix is advice when a plausible cause lists
    it, it is not pointless, applied or to be avoided here, and it is proven for every
    plausible cause (`plan_fixes` through `safety.judge`); its score and owners are
    `plan_fixes`'s, and so is the order: by score, ties in the order first listed."""
    plausible = safety.plausible_causes(rank_causes(kb, facts), facts, settings(kb))
    scores: dict[str, float] = {}
    owners: dict[str, list[str]] = {}
    for ranked_cause in plausible:
        for position, fix_id in enumerate(ranked_cause.cause.fixes):
            if kb.fixes[fix_id].kind != "diagnostic":
                score = ranked_cause.probability * (0.8**position)
                scores[fix_id] = max(scores.get(fix_id, 0.0), score)
                owners.setdefault(fix_id, []).append(ranked_cause.id)
    advice = []
    for fix_id, score in sorted(scores.items(), key=lambda item: -item[1]):
        fix = kb.fixes[fix_id]
        if not _not_for_these_facts(fix, facts) and safety.proven(fix, plausible, facts):
            advice.append(RankedFix(fix, score, tuple(owners[fix_id])))
    return tuple(advice)


_ADVICE: dict = {}


def cause_rows(
    kb: KnowledgeBase,
    plausible: tuple[RankedCause, ...],
    facts: Mapping[str, Any],
    rows: tuple[ConditionalFix, ...],
) -> tuple[ConditionalFix, ...]:
    """A row for each plausible cause the question's rows leave out: "if the cause is X,
    then <the first fix X lists that is proven for X alone>". Proven for the one cause its
    condition leaves, as advice is for all of them; a cause with no such fix gets no row."""
    covered = {cause for row in rows for cause in row.fix.for_causes}
    extra = []
    for ranked in plausible:
        if ranked.id in covered:
            continue
        for fix_id in ranked.cause.fixes:
            fix = kb.fixes[fix_id]
            if fix.kind == "diagnostic" or _not_for_these_facts(fix, facts):
                continue
            if safety.proven(fix, (ranked,), facts):
                entry = RankedFix(fix, ranked.probability, (ranked.id,))
                extra.append(ConditionalFix(entry, (), ranked.id))
                break
    return tuple(extra)


def _narrows(
    kb: KnowledgeBase,
    facts: Mapping[str, Any],
    asked: AskedQuestion,
    plausible: tuple[RankedCause, ...],
) -> bool:
    """Some answer of the question changes which causes stay in play (a question that only
    tailors the code, such as the framework, leaves a user without a fix where they were)."""
    now = {r.id for r in plausible}
    conf = settings(kb)
    for option in asked.options:
        if option.sets and not contradicts(option, facts):
            after = {**facts, **option.sets}
            if {r.id for r in safety.plausible_causes(rank_causes(kb, after), after, conf)} != now:
                return True
    return False


def _not_for_these_facts(fix: Fix, facts: Mapping[str, Any]) -> bool:
    """Applied already, pointless, or to be avoided here (a loop, not any(...) over a
    generator: the decision table asks this ~250 times a report)."""
    for condition in (fix.pointless_when, fix.avoid_when, fix.already_on):
        if condition is not None and condition_holds(condition, facts):
            return True
    return False


# ---------------------------------------------------------------------------- free text


def facts_from_text(kb: KnowledgeBase, description: str) -> dict[str, Any]:
    """Facts implied by a free-text description ("我在一个循环里调用了两次 backward").

    The reading itself (lexicon, proximity, negation, confidence) is wizard/reading/understand.py.
    """
    from ..reading.understand import facts_from_text as read

    return read(kb, description)


# ---------------------------------------------------------------------------- diagnosis


def resolve_answers(
    kb: KnowledgeBase,
    facts: Mapping[str, Any],
    answers: Mapping[str, str],
    modules: Iterable[str] = (),
) -> tuple[dict[str, Any], list[str]]:
    """Apply --answers in the rules' order; returns the facts and the unknown keys/values."""
    facts = dict(facts)
    problems: list[str] = []
    modules = tuple(modules)
    questions = instantiate(kb, modules)
    if not modules:  # no names pasted: a per-module answer speaks of "the module" in general
        questions += [AskedQuestion(q, q.id, {"module": ""}) for q in kb.questions if q.for_each]
    known_keys = {a.key for a in questions} | {a.question.id for a in questions}
    problems += [key for key in answers if key not in known_keys]
    for asked in questions:
        value = answers.get(asked.key, answers.get(asked.question.id))
        if value is None:
            continue
        updated = apply_answer(facts, asked, str(value))
        if updated is None:
            problems.append(f"{asked.key}={value}")
        else:
            facts = updated
    return facts, problems


def diagnose(
    kb: KnowledgeBase,
    triage: TriageResult | None = None,
    facts: Mapping[str, Any] | None = None,
    answers: Mapping[str, str] | None = None,
) -> Diagnosis:
    """The report: ranked causes and fixes for what the text and the answers tell."""
    all_facts = dict(triage.facts) if triage else {}
    all_facts.update(facts or {})
    ranked = rank_causes(kb, all_facts)
    fixes, diagnostics, avoided = plan_fixes(kb, ranked, all_facts)
    modules = triage.unused_modules if triage else ()
    answered = tuple((answers or {}).keys())
    # a fix the advice already does (`covers`: the flag inside "the flag, and non-reentrant
    # checkpointing if any") is no further fix for any answer
    advised = {f.id for f in fixes} | {c for f in fixes for c in f.fix.covers}
    # with advice, a question answered "I don't know" is not looked at again
    unsure = () if fixes else [k for k, v in (answers or {}).items() if v == UNSURE]
    rows, splitting = _table_unsure_open(kb, all_facts, answered, unsure, modules, advised)
    plausible = safety.plausible_causes(ranked, all_facts, settings(kb))
    if not fixes:
        rows += cause_rows(kb, plausible, all_facts, rows)
        if splitting is None:
            # no answer within reach decides a fix, yet the interview goes on: the report
            # names the question it would ask next, so no truthful user meets a dead end
            upcoming = next_question(kb, all_facts, answered, modules, 0)
            if upcoming is not None and _narrows(kb, all_facts, upcoming, plausible):
                splitting = upcoming
    if splitting is not None:
        splitting = offered(splitting, all_facts)
    return Diagnosis(
        findings=triage.findings if triage else (),
        facts=all_facts,
        causes=ranked,
        fixes=fixes,
        diagnostics=diagnostics,
        avoided=avoided,
        unused_modules=triage.unused_modules if triage else (),
        answers=dict(answers or {}),
        framework=str(all_facts.get(FRAMEWORK_FACT, DEFAULT_FRAMEWORK)),
        confident=leads_clearly(kb, ranked),
        plausible=tuple(c.id for c in plausible),
        conditional=rows,
        splitting_question=splitting,
    )
