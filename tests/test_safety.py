"""The safety rule, asserted on what the user gets (issue 10).

Advice (`fixes`) is only what the measured outcomes prove for every cause still plausible;
the rest is a decision table (`conditional_fixes` + the question that splits it) or a
warning. The texts are real torch 2.13 outputs from tests/ddp (tests/fixtures/real/), and
the sentences are what users write.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from ddp_doctor.knowledge.kb import load
from ddp_doctor.reasoning import engine, safety
from helpers import ROOT, cli

KB = load()
REAL = Path(__file__).parent / "fixtures" / "real"
SCENARIOS = ROOT / "tests" / "ddp" / "scenarios.py"


def triage(name: str, *extra: str) -> dict:
    result = cli("triage", "--json", "--lang", "en", *extra, str(REAL / name))
    assert result.returncode == 0, result.err
    return json.loads(result.out)


def ids(entries) -> list[str]:
    return [e["id"] for e in entries]


def answers_report(tmp_path: Path, answers: dict, paste: str | None = None) -> dict:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(answers), encoding="utf-8")
    args = ["--answers", str(path), "--json", "--lang", "en"]
    if paste:
        args += ["--paste", str(REAL / paste)]
    result = cli(*args)
    assert result.returncode == 0, result.err
    return json.loads(result.out)


# ---------------------------------------------------------------------------- the examples


def test_bare_unfinished_reduction_gives_a_decision_table_not_static_graph():
    doc = triage("unused_module__nodebug__spawn.txt")
    assert doc["schema_version"] == 2
    # nothing is proven for every cause a bare message leaves open ...
    assert doc["fixes"] == []
    # ... static_graph breaks for an output the loss ignores (measured): a warning, with why
    warned = {w["id"]: w for w in doc["warnings"]}
    assert warned["static_graph"]["result"] == "error"
    assert "training graph has changed" in warned["static_graph"]["warning"]
    # the table: every row hangs on the one question shown with it
    question = doc["splitting_question"]
    assert question and question["options"]
    rows = doc["conditional_fixes"]
    answered_rows = [r for r in rows if not r["when"]["cause"]]
    assert answered_rows and {r["when"]["question"] for r in answered_rows} == {question["id"]}
    # a row for a cause the question leaves open names the cause, not an answer
    assert all(r["when"]["answers"] == [] for r in rows if r["when"]["cause"])
    # two backward() calls: summing the losses is the row's fix, whatever the layout
    by_answer = {}
    for row in answered_rows:
        by_answer.setdefault(row["when"]["answers"][0]["answer"], []).append(row["id"])
    assert by_answer.get("backward_many") == ["sum_losses_single_backward"]


def test_bare_message_keeps_every_cause_the_error_supports():
    """No probability floor drops a real cause before the user has said anything."""
    doc = triage("unused_module__nodebug__spawn.txt")
    plausible = set(doc["plausible_causes"])
    for cause in (
        "unused_module",
        "unused_forward_output",
        "multitask_missing_loss",
        "multiple_backward",
        "conditional_branch",
        "frozen_params",
    ):
        assert cause in plausible


def test_graph_changed_text_from_a_two_backward_job_never_readvises_static_graph():
    doc = triage("two_backward_retain_graph.static_graph__nodebug__spawn.txt")
    shown = ids(doc["fixes"]) + ids(doc["conditional_fixes"])
    assert "static_graph" not in shown  # it is on already: that is what the text says
    # find_unused_parameters and the zero term fail for a forgotten task loss: not advice
    assert "find_unused_parameters" not in ids(doc["fixes"])
    assert "zero_weight_aux_loss" not in ids(doc["fixes"])
    assert "multiple_backward" in doc["plausible_causes"]
    # saying "two backward() calls" leads to the one fix measured to work in both layouts
    rows = [
        r for r in doc["conditional_fixes"] if r["when"]["facts"].get("backward_calls") == "many"
    ]
    assert [r["id"] for r in rows] == ["sum_losses_single_backward"]


def test_flag_already_on_is_never_advised_again():
    doc = triage("loss_from_hooked_features.find_unused_parameters__info__spawn.txt")
    shown = ids(doc["fixes"]) + ids(doc["conditional_fixes"])
    assert "find_unused_parameters" not in shown
    assert doc["causes"][0]["id"] == "loss_outside_outputs"
    # static_graph runs without an error there, with the ranks drifting apart (measured)
    (warning,) = [w for w in doc["warnings"] if w["id"] == "static_graph"]
    assert warning["result"] == "wrong"
    assert warning["scenario"] in ("loss_from_hooked_features", "unused_output_in_object")


def test_speed_warning_does_not_advise_turning_the_flag_off_unconditionally():
    doc = triage("clean_with_find_unused__nodebug__spawn.txt")
    assert "disable_find_unused" not in ids(doc["fixes"])
    rows = [r for r in doc["conditional_fixes"] if r["id"] == "disable_find_unused"]
    assert rows, "it is advice once the user says nothing is skipped"
    assert all(r["when"]["facts"].get("forward_unused_outputs") is not True for r in rows)


@pytest.mark.parametrize(
    "answers",
    [
        {"forward_unused_outputs": "yes"},
        {"conditional_modules": "steps"},
    ],
    ids=["returns-unused-outputs", "branch-on-steps"],
)
def test_speed_warning_with_answers_that_need_the_flag_warns_against_turning_it_off(
    tmp_path, answers
):
    doc = answers_report(tmp_path, answers, "clean_with_find_unused__nodebug__spawn.txt")
    assert "disable_find_unused" not in ids(doc["fixes"])
    assert "disable_find_unused" not in ids(doc["conditional_fixes"])
    # what the answer needs is said as advice: keep the flag
    assert "keep_find_unused" in ids(doc["fixes"])
    (warning,) = [w for w in doc["warnings"] if w["id"] == "disable_find_unused"]
    assert warning["result"] == "error"
    assert "Expected to have finished reduction" in warning["warning"]


def test_honest_answers_for_one_forward_two_backward_advise_what_works_there(tmp_path):
    doc = answers_report(
        tmp_path,
        {"step_pattern": "backward_many", "backward_layout": "shared", "framework": "pytorch"},
        "two_backward_retain_graph__info__spawn.txt",
    )
    advised = ids(doc["fixes"])
    assert advised[0] == "sum_losses_single_backward"
    for unsafe in ("find_unused_parameters", "zero_weight_aux_loss", "static_graph"):
        assert unsafe not in advised  # each errors or trains wrongly with one shared forward
    warned = {w["id"]: w["result"] for w in doc["warnings"]}
    assert warned.get("zero_weight_aux_loss") == "wrong"  # no error, ranks drift apart


SEED_SENTENCE = (
    "在一个for loop中有两次loss.backward()，第一次backward的loss1是由模型的某个中间层的"
    "feature map计算出的，第二次backward的loss2是由模型的最终输出计算出的"
)


@pytest.mark.parametrize(
    "sentence",
    [
        SEED_SENTENCE,
        "I unfreeze the backbone after wrapping the model in DDP and now it fails",
        "I call backward twice per iteration",
    ],
    ids=["seed-article", "unfreeze-after-wrapping", "backward-twice"],
)
def test_ask_never_advises_a_fix_that_fails_for_what_the_sentence_leaves_open(sentence):
    result = cli("ask", "--json", "--lang", "en", sentence)
    doc = json.loads(result.out)
    if doc.get("kind") != "diagnosis":
        pytest.skip(f"the sentence was not read as a description ({doc.get('kind')})")
    advised = ids(doc["fixes"])
    # each of these fails for a case the sentence does not rule out (measured):
    # find_unused_parameters with one forward and two backward(); the zero term for a loss
    # through a layer the last backward() misses; static_graph for two backward() calls;
    # find_unused_parameters is not proved for unfreezing after wrapping
    for unsafe in ("find_unused_parameters", "zero_weight_aux_loss", "static_graph"):
        assert unsafe not in advised, (sentence, advised)


# ---------------------------------------------------------------------------- the rule itself


def test_a_conditional_fix_is_advice_once_its_answers_are_given(tmp_path):
    """The table's promise: answer as the row says, and the fix is advice."""
    doc = triage("unused_module__info__spawn.txt")
    assert doc["conditional_fixes"]
    for row in [r for r in doc["conditional_fixes"] if r["when"]["answers"]][:6]:
        answers = {a["question"]: a["answer"] for a in row["when"]["answers"]}
        followed = answers_report(tmp_path, answers, "unused_module__info__spawn.txt")
        assert row["id"] in ids(followed["fixes"]), (answers, ids(followed["fixes"]))


def test_advice_is_proven_for_every_plausible_cause():
    """Whatever the facts, every advised fix has a `works` outcome for every plausible cause."""
    fact_sets = [
        {"family": "unfinished_reduction"},
        {"family": "unfinished_reduction", "backward_calls": "many"},
        {"family": "unfinished_reduction", "forward_unused_outputs": True},
        {"family": "unfinished_reduction", "multitask": True, "all_losses_summed": False},
        {"family": "mark_ready_twice", "gradient_checkpointing": "reentrant"},
        {"family": "unused_params_warning", "find_unused_enabled": True},
        {"family": "static_graph_changed", "static_graph_enabled": True},
    ]
    for facts in fact_sets:
        diagnosis = engine.diagnose(KB, None, facts)
        for entry in diagnosis.fixes:
            for cause_id in diagnosis.plausible:
                verdict = safety.verdict(entry.fix, cause_id, diagnosis.facts)
                assert verdict.result == "works", (facts, entry.id, cause_id)


def test_worst_outcome_wins_and_unknown_facts_keep_it_open():
    fix = KB.fixes["zero_weight_aux_loss"]
    # two variants measured under the same answer, one failing: not advice
    separate = safety.verdict(fix, "multiple_backward", {"backward_layout": "separate"})
    assert separate.result == "error" and separate.outcome.scenario.endswith("_head")
    unknown = safety.verdict(fix, "multiple_backward", {})
    assert unknown.result is None and unknown.pending
    # no outcome at all: unproven, never advice
    assert safety.verdict(fix, "gradient_checkpointing", {}).result is None


def test_a_decisive_answer_rules_a_cause_out_and_a_specific_one_keeps_it_in():
    facts = {"family": "unfinished_reduction", "multitask": False}
    ranked = engine.rank_causes(KB, facts)
    plausible = safety.plausible_causes(ranked, facts, engine.settings(KB))
    assert "multitask_missing_loss" not in {c.id for c in plausible}
    # the user points at one cause: an unlikely cause the answer points at stays in play
    facts = {"family": "unused_params_warning", "tied_weights": True}
    ranked = engine.rank_causes(KB, facts)
    low = next(c for c in ranked if c.id == "shared_params")
    assert low.probability < engine.settings(KB)["plausible_floor"]
    plausible = safety.plausible_causes(ranked, facts, engine.settings(KB))
    assert "shared_params" in {c.id for c in plausible}


def test_every_outcome_cites_a_scenario_that_exists():
    names = set(re.findall(r'Scenario\(\s*"(\w+)"', SCENARIOS.read_text(encoding="utf-8")))
    assert names
    for fix in KB.fixes.values():
        for outcome in fix.outcomes:
            scenario = outcome.scenario.split(".")[0]
            assert scenario in names, (fix.id, outcome.cause, outcome.scenario)


def test_decision_table_in_markdown_and_chinese():
    for lang, heading, marker in (
        ("en", "It depends on your code", "If you answer"),
        ("zh", "取决于你的代码", "如果选"),
    ):
        result = cli(
            "triage",
            "--format",
            "markdown",
            "--lang",
            lang,
            str(REAL / "unused_module__nodebug__spawn.txt"),
        )
        assert heading in result.out and marker in result.out


def test_below_an_advised_fix_the_table_names_its_question_and_where_it_leads(tmp_path):
    """After a clear fix the table is about other fixes, for a question the user was not
    asked: the short report says so, names that question (its rows name only answers), and
    says which fix the one more question can lead to (it used to read "It depends on your
    code", then "If you answer “Yes, reentrant”, one more question decides: ...")."""
    answers = tmp_path / "answers.json"
    answers.write_text(
        json.dumps(
            {
                "revealed_module:head_b": "output_ignored",
                "multitask": "yes",
                "all_losses_summed": "no",
            }
        ),
        encoding="utf-8",
    )
    paste = REAL / "multitask_missing_loss__info__spawn.txt"
    for lang, heading, question, lead, old in (
        (
            "en",
            "Other fixes, depending on your code",
            "Do you use gradient (activation) checkpointing?",
            "can lead to: Use non-reentrant gradient checkpointing",
            "It depends on your code",
        ),
        (
            "zh",
            "其他修复方案，取决于你的代码",
            "是否使用了梯度检查点",
            "可能就要：改用非可重入的梯度检查点",
            "取决于你的代码",
        ),
    ):
        args = [
            "--answers",
            str(answers),
            "--paste",
            str(paste),
            "--format",
            "rich",
            "--lang",
            lang,
        ]
        result = cli(*args, env={"COLUMNS": "400"})
        assert result.returncode == 0, result.err
        assert "Put every task" in result.out or "把每个任务的 loss" in result.out
        assert heading in result.out and question in result.out and lead in result.out
        assert old not in [line.strip() for line in result.out.splitlines()]


def test_a_deciding_question_answered_i_dont_know_comes_with_where_to_look(tmp_path):
    """The table's question may be one the user answered "I don't know" (its rows then say
    what each answer would lead to): the report says so and prints the question's hint on
    where to look (its `help` in rules/questions.yaml), instead of only asking it again."""
    said = "if I disable layer drop everything works; with find_unused_parameters it fails"
    unsure = dict.fromkeys(
        ("gradient_checkpointing", "forward_unused_outputs", "backward_calls", "multitask"),
        "unsure",
    )
    questions = yaml.safe_load((ROOT / "rules" / "questions.yaml").read_text(encoding="utf-8"))
    helps = {q["id"]: q.get("help") for q in questions["questions"]}
    answers = tmp_path / "answers.json"
    for lang, told in (
        ("en", "a question you could not answer yet"),
        ("zh", "一个你刚才还答不上来的问题"),
    ):
        answers.write_text(json.dumps({"said": said, **unsure}), encoding="utf-8")
        args = ["--answers", str(answers), "--lang", lang]
        doc = json.loads(cli(*args, "--json").out)
        deciding = doc["splitting_question"]["id"]
        assert doc["fixes"] == [] and deciding in unsure and helps[deciding]
        text = " ".join(cli(*args, "--format", "markdown").out.split())
        hint = " ".join(helps[deciding][lang].split())
        assert told in text and hint in text
        # a user who has not been asked it yet is asked it, with no such hint
        answers.write_text(json.dumps({"said": said}), encoding="utf-8")
        text = " ".join(cli(*args, "--format", "markdown").out.split())
        assert told not in text
