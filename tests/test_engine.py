"""The interview's decisions, without a terminal: honest answers reach the right cause.

Each case is what is true of one user's code (fact-level truths); the scripted user answers
every question the engine asks with the option that is true for them ("I don't know" when
no option is). The engine must put the right cause first within four questions.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ddp_doctor.knowledge.kb import load
from ddp_doctor.output.render import build_report, to_markdown
from ddp_doctor.reading.triage import triage_text
from ddp_doctor.reasoning import engine

KB = load()
FIXTURES = Path(__file__).parent / "fixtures"
# an interview stops: four questions at most once a fix is advice or the user cannot tell,
# eight while more answers may still lead to a fix (issue 20: no dead ends)
MAX_QUESTIONS = 8
MAX_QUESTIONS_UNSURE = 4

RULES_CAUSES = yaml.safe_load(
    (Path(__file__).parent.parent / "rules" / "causes.yaml").read_text("utf-8")
)
# what an ordinary training loop is like; each case changes what makes it break (causes.yaml)
ORDINARY = RULES_CAUSES["case_baseline"]


def truth(**changes):
    facts = {**ORDINARY, **changes}
    return {k: v for k, v in facts.items() if v is not None}


# the expected cases that sit beside each cause in causes.yaml:
# (cause, case number) -> (error family the user pasted; truths)
CASES = {
    (cause["id"], number): ((case["family"], case.get("example", 1)), truth(**case["truths"]))
    for cause in RULES_CAUSES["causes"]
    for number, case in enumerate(cause.get("cases", []), 1)
}


def start_facts(family: str | None, example: int = 1) -> dict:
    """The facts the paste gives: triage of the family's own example text (the `example`-th
    positive one, from 1)."""
    if family is None:
        return {"family": "unfinished_reduction"}
    positive = KB.family(family).positive[example - 1]
    text = positive.text or (FIXTURES.parent / positive.file).read_text(encoding="utf-8")
    result = triage_text(KB, text)
    assert result.facts["family"] == family
    return dict(result.facts)


def honest(asked: engine.AskedQuestion, facts_true: dict) -> str:
    """The first option whose facts are all true for this user, else "I don't know"."""
    for option in asked.options:
        if option.sets and all(
            k in facts_true and facts_true[k] == v for k, v in option.sets.items()
        ):
            return option.value
    return engine.UNSURE


def interview(facts: dict, answer, modules=()) -> tuple[dict, list[engine.AskedQuestion]]:
    asked_so_far: list[engine.AskedQuestion] = []
    unsure: list[str] = []
    while True:
        asked = engine.next_question(
            KB,
            facts,
            [a.key for a in asked_so_far],
            modules,
            len(asked_so_far),
            unsure=unsure,
        )
        if asked is None:
            return facts, asked_so_far
        value = answer(asked)
        if value == engine.UNSURE:
            unsure.append(asked.key)
        updated = engine.apply_answer(facts, asked, value)
        assert updated is not None, asked.key
        facts = updated
        asked_so_far.append(asked)
        assert len(asked_so_far) <= MAX_QUESTIONS


def test_every_cause_has_an_expected_case():
    # a loss built outside forward's outputs is told apart only by the paste (the error
    # text with the flag on): its case is a real paste, in REAL below
    from_paste_only = {cause for cause, _ in REAL.values()}
    assert {cause for cause, _ in CASES} | from_paste_only == {c.id for c in KB.causes}


@pytest.mark.parametrize("modules", [(), ("decoder.aux_head",)], ids=["no-names", "names"])
@pytest.mark.parametrize("case", sorted(CASES), ids=lambda c: f"{c[0]}-{c[1]}")
def test_honest_interview_reaches_the_cause(case, modules):
    """The generic test of the causes' `cases` (causes.yaml)."""
    cause = case[0]
    (family, example), facts_true = CASES[case]
    facts, asked = interview(start_facts(family, example), lambda a: honest(a, facts_true), modules)
    ranked = engine.rank_causes(KB, facts)
    assert ranked[0].id == cause, [(r.id, round(r.probability, 2)) for r in ranked[:3]]
    assert len(asked) <= MAX_QUESTIONS


# real outputs of the scenarios in tests/ddp (torch 2.13, gloo, 2 ranks), with what is true
# of the code that produced them
REAL = {
    "unused_module__info__spawn.txt": ("unused_module", truth(revealed_module_state="not_called")),
    "unused_forward_output__info__spawn.txt": (
        "unused_forward_output",
        truth(forward_unused_outputs=True, revealed_module_state="output_ignored"),
    ),
    "multitask_missing_loss__info__spawn.txt": (
        "multitask_missing_loss",
        truth(
            multitask=True,
            all_losses_summed=False,
            revealed_module_state="output_ignored",
            forward_unused_outputs=True,  # the head's output is returned, its loss left out
        ),
    ),
    "two_backward_intermediate__info__spawn.txt": (
        "multiple_backward",
        truth(backward_calls="many", backward_from_intermediate=True),
    ),
    "requires_grad_after_wrap__info__spawn.txt": (
        "frozen_params",
        truth(requires_grad_changed=True),
    ),
    "branch_some_steps__info__spawn.txt": (
        "conditional_branch",
        truth(conditional_modules="steps", revealed_module_state="sometimes", branch_seen=True),
    ),
    # the loss is built from a forward hook's features; the flag is on and the error stays
    "loss_from_hooked_features.find_unused_parameters__info__spawn.txt": (
        "loss_outside_outputs",
        truth(find_unused_enabled=True),
    ),
}


@pytest.mark.parametrize("name", sorted(REAL))
def test_honest_interview_from_a_real_paste(name):
    path = FIXTURES / "real" / name
    if not path.is_file():
        pytest.skip(f"{name} not captured")
    cause, facts_true = REAL[name]
    result = triage_text(KB, path.read_text(encoding="utf-8"))
    assert result.unused_modules, "the INFO outputs name the parameters"
    facts, asked = interview(
        dict(result.facts), lambda a: honest(a, facts_true), result.unused_modules
    )
    assert engine.rank_causes(KB, facts)[0].id == cause
    assert len(asked) <= MAX_QUESTIONS


def _sane(facts: dict) -> None:
    diagnosis = engine.diagnose(KB, None, facts)
    probabilities = [c.probability for c in diagnosis.causes]
    assert probabilities == sorted(probabilities, reverse=True)
    assert abs(sum(probabilities) - 1.0) < 1e-6
    assert diagnosis.fixes or diagnosis.diagnostics
    for lang in ("en", "zh"):
        markdown = to_markdown(KB, build_report(KB, diagnosis, lang))
        assert diagnosis.causes[0].cause.title.get(lang) in markdown


def test_all_unsure_still_gives_a_ranked_report():
    facts, asked = interview({"family": "unfinished_reduction"}, lambda a: engine.UNSURE)
    assert 1 <= len(asked) <= MAX_QUESTIONS_UNSURE  # who cannot tell is not kept long
    assert facts == {"family": "unfinished_reduction"}
    _sane(facts)
    # nothing learned: the most common cause of this error stays first
    assert engine.rank_causes(KB, facts)[0].id == "unused_module"


@pytest.mark.parametrize("pick", ["first", "last"])
def test_contradictory_answers_give_a_sane_report(pick):
    """Answers that fight each other (yes to everything, or the opposite) never crash."""

    def contradictory(asked):
        informative = [o for o in asked.options if o.sets]
        return (informative[0] if pick == "first" else informative[-1]).value

    facts, asked = interview({"family": "unfinished_reduction"}, contradictory, ("head",))
    assert len(asked) <= MAX_QUESTIONS
    _sane(facts)
    # contradicting an earlier answer through --answers keeps the later one
    resolved, problems = engine.resolve_answers(
        KB,
        {"family": "unfinished_reduction"},
        {"step_pattern": "backward_many", "backward_calls": "one"},
    )
    assert problems == []
    assert resolved["backward_calls"] == "one"
    _sane(resolved)


NAMED = (
    "RuntimeError: Expected to have finished reduction in the prior iteration before starting "
    "a new one. This error indicates that your module has parameters that were not used in "
    "producing loss.\n"
    "Parameters which did not receive grad for rank 0: decoder.aux_head.weight, "
    "decoder.aux_head.bias\n"
)


def test_names_in_the_paste_become_a_question_about_that_module():
    result = triage_text(KB, NAMED)
    assert result.unused_modules == ("decoder.aux_head",)
    asked = engine.next_question(KB, dict(result.facts), [], result.unused_modules, 0)
    assert asked.key == "revealed_module:decoder.aux_head"
    text = asked.question.text.get("en").format(**asked.fields)
    assert "`decoder.aux_head`" in text
    assert "decoder.aux_head" in asked.question.text.get("zh").format(**asked.fields)


@pytest.mark.parametrize(
    ("fixture", "settled"),
    [
        ("versions/torch_1_10_flag_on.txt", "find_unused_enabled"),
        ("versions/lightning_2.txt", "framework"),
    ],
)
def test_questions_the_paste_answered_are_skipped(fixture, settled):
    result = triage_text(KB, (FIXTURES / fixture).read_text(encoding="utf-8"))
    assert settled in result.facts
    _, asked = interview(dict(result.facts), lambda a: engine.UNSURE, result.unused_modules)
    assert settled not in {a.question.id for a in asked}
    assert settled not in {a.question.fact for a in asked}


def test_a_description_skips_the_questions_it_answered():
    facts = {"family": "unfinished_reduction"}
    facts.update(engine.facts_from_text(KB, "我在一个循环里调用了两次 backward"))
    assert facts["backward_calls"] == "many"
    facts, asked = interview(facts, lambda a: engine.UNSURE)
    assert "backward_calls" not in {a.question.id for a in asked}
    assert "step_pattern" not in {a.question.id for a in asked}
    assert engine.rank_causes(KB, facts)[0].id == "multiple_backward"


def test_the_framework_is_asked_last_and_shapes_the_snippets():
    facts = {"family": "unfinished_reduction", "backward_calls": "many"}
    asked = engine.next_question(KB, facts, [], (), 0)
    # the cause already leads: only tailoring is left, the backward layout first (it decides
    # which fixes are safe), then the framework
    assert asked.question.id == "backward_layout"
    facts = engine.apply_answer(facts, asked, "shared")
    asked_framework = engine.next_question(KB, facts, [asked.key], (), 1)
    assert asked_framework.question.id == "framework"
    facts = engine.apply_answer(facts, asked_framework, "lightning")
    assert engine.next_question(KB, facts, [asked.key, asked_framework.key], (), 2) is None
    assert engine.diagnose(KB, None, facts).framework == "lightning"


def test_the_reason_shown_is_tied_to_the_users_answer():
    facts = {"family": "unfinished_reduction", "revealed_module_state": "not_called"}
    top = engine.rank_causes(KB, facts)[0]
    assert top.id == "unused_module"
    # "{said}": the renderer says "You said" for an answer (tests/test_report.py)
    assert "never called" in top.reasons[0].en and top.reasons[0].en.startswith("{said}")


def test_a_per_module_answer_applies_without_a_paste():
    facts, problems = engine.resolve_answers(
        KB, {"family": "unfinished_reduction"}, {"revealed_module": "not_called"}
    )
    assert problems == []
    assert facts["revealed_module_state"] == "not_called"


def test_a_descriptions_nearest_examples_move_the_ranking_and_say_so():
    """`text_leans` (how near a description is to each cause's examples, in log-odds) is
    added to the causes' scores: a cause the error alone ranks low rises, and the report
    tells why in the user's language; without it the ranking is the error's alone."""
    from ddp_doctor.common.i18n import tr

    facts = {"family": "unfinished_reduction"}
    alone = engine.rank_causes(KB, facts)
    low = alone[-1]
    leaned = engine.rank_causes(KB, {**facts, engine.TEXT_LEANS: ((low.id, 30.0),)})
    assert leaned[0].id == low.id
    report = build_report(
        KB, engine.diagnose(KB, None, {**facts, engine.TEXT_LEANS: ((low.id, 30.0),)}), "zh"
    )
    assert report.causes[0].id == low.id
    assert report.causes[0].reason == tr(KB, "reason_text_lean", "zh")
    assert [r.id for r in engine.rank_causes(KB, facts)] == [r.id for r in alone]


def test_a_descriptions_nearest_examples_never_lift_a_cause_its_facts_rule_out():
    """The flag on rules out a module never called (it rescues one, measured): however much a
    description sounds like such reports, that cause stays where the facts put it."""
    facts = {"family": "unfinished_reduction", "find_unused_enabled": True}
    rule_out = engine.settings(KB)["rule_out_weight"]
    alone = engine.rank_causes(KB, facts)
    excluded = [r for r in alone if any(e.weight <= -rule_out for e in r.fired)]
    assert "unused_module" in [r.id for r in excluded]
    leaned = engine.rank_causes(KB, {**facts, engine.TEXT_LEANS: (("unused_module", 30.0),)})
    assert [r.id for r in leaned] == [r.id for r in alone]
    assert [r.probability for r in leaned] == [r.probability for r in alone]


def test_the_interview_asks_the_question_its_report_names_after_an_i_dont_know():
    """Two losses with two `backward()` calls, LoRA, checkpointing answered "I don't know":
    with that answer left open the report names the question that decides (is one loss
    computed from an intermediate layer?). The interview used to stop one question short and
    print "the question that matters next: …" to a user who was still in it; it asks it."""
    facts = {"family": "unfinished_reduction", "lora": True}
    given = {
        "multitask": "no",
        "step_pattern": "backward_many",
        "gradient_checkpointing": engine.UNSURE,
        "backward_layout": "shared",
        "find_unused_enabled": "works",
    }

    def answer(asked):
        return given.get(asked.key, engine.UNSURE)

    final, asked = interview(facts, answer)
    report = engine.diagnose(KB, None, final, {a.key: answer(a) for a in asked})
    keys = [a.key for a in asked]
    assert "backward_from_intermediate" in keys, keys
    named = report.splitting_question
    assert named is None or named.key in keys, (named.key, keys)


@pytest.mark.parametrize(
    "family", ["unfinished_reduction", "mark_ready_twice", "unused_params_warning"]
)
def test_the_cheap_advice_is_the_reports_advice(family):
    """`engine.advice` (what a reading the fix rests on is judged by, without the decision
    table) gives the fixes the report gives, for every answer to every question."""
    for question in KB.questions:
        for option in question.options:
            facts = {"family": family, **option.sets}
            cheap = [fix.id for fix in engine.advice(KB, None, facts)]
            assert cheap == [fix.id for fix in engine.diagnose(KB, None, facts).fixes], facts


def test_frozen_layers_in_front_of_a_checkpoint_that_warns_point_at_the_checkpoint():
    """A frozen embedding feeding reentrant checkpointing: the checkpoint's warning ("None of
    the inputs have requires_grad=True") says where the gradients are lost, not the freezing."""
    text = (
        "The embeddings are frozen and every block after them is wrapped in checkpoint; "
        "the log says None of the inputs have requires_grad=True"
    )
    facts = {"family": "unfinished_reduction"}
    facts.update(engine.facts_from_text(KB, text))
    assert facts["checkpoint_inputs_no_grad"] is True
    ranked = engine.rank_causes(KB, facts)
    assert ranked[0].id == "gradient_checkpointing"
    # both make the checkpointing non-reentrant, the one change that trains these layers
    first = engine.diagnose(KB, None, facts).fixes[0].id
    assert first in {"checkpoint_non_reentrant", "find_unused_parameters_any_checkpointing"}
