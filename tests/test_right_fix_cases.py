"""The dead ends of issue 20, each as a truthful user meets it through the public CLI.

Each test answers as that user would (`--answers` with `--paste`, or `ask`) and checks what
the report leads to: the fix that is right for that cause comes first, and nothing advised
fails for it (tests/ddp/measured.json and the outcomes in rules/fixes.yaml say what works).
"""

from __future__ import annotations

import json
from pathlib import Path

from helpers import FIXTURES, cli

REAL = FIXTURES / "real"
README_EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "torchrun-unused-module.log"


def report(tmp_path: Path, answers: dict, paste: Path | None = None, lang: str = "en") -> dict:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(answers), encoding="utf-8")
    args = ["--answers", str(path), "--json", "--lang", lang]
    if paste is not None:
        args += ["--paste", str(paste)]
    result = cli(*args)
    assert result.returncode == 0, result.err
    return json.loads(result.out)


def truthful(tmp_path: Path, answers: dict, truth: dict, paste: Path) -> tuple[dict, list[str]]:
    """Answer each report's deciding question from `truth` ("I don't know" elsewhere) until
    the report advises a fix or asks nothing new; returns the last report and the questions."""
    answers = dict(answers)
    doc = report(tmp_path, answers, paste)
    asked: list[str] = []
    while not doc["fixes"] and doc["splitting_question"] and len(asked) < 5:
        question = doc["splitting_question"]["id"]
        if question in answers:
            break
        asked.append(question)
        answers[question] = truth.get(question, "unsure")
        doc = report(tmp_path, answers, paste)
    return doc, asked


def advised(doc: dict) -> list[str]:
    return [f["id"] for f in doc["fixes"]]


def test_a_branch_on_some_steps_gets_the_flag(tmp_path):
    """Case 1: "some modules run only on some steps" on the unfinished-reduction paste, no
    gradient checkpointing: the flag works for a branch however it moves, and the paste
    proves static_graph is off."""
    doc = report(
        tmp_path,
        {"step_pattern": "branches", "gradient_checkpointing": "none"},
        REAL / "branch_some_steps__nodebug__spawn.txt",
    )
    assert advised(doc)[0] == "find_unused_parameters"
    assert "static_graph" not in advised(doc)


def test_none_of_these_is_followed_by_questions_that_reach_a_fix(tmp_path):
    """Case 2: "none of these" (a module that is never called, the commonest real cause) is
    followed by the questions that rule the other causes out, and within two truthful
    answers the report advises a fix that works for an unused module."""
    paste = REAL / "unused_module__nodebug__spawn.txt"
    truth = {"module_never_called": "yes", "loss_uses_hidden_tensors": "no", "framework": "pytorch"}
    done, asked = truthful(tmp_path, {"step_pattern": "none"}, truth, paste)
    assert len(asked) <= 2, asked
    assert advised(done)[0] in ("remove_unused_module", "find_unused_parameters")
    assert "zero_weight_aux_loss" not in advised(done)


def test_checkpointing_of_an_unknown_kind_gets_non_reentrant(tmp_path):
    """Case 5: "gradient checkpointing is on" is followed by the one check that tells
    whether it is the cause (the error without it); "it goes away" ends in
    `use_reentrant=False` at once, whatever the kind."""
    paste = REAL / "unused_module__nodebug__spawn.txt"
    truth = {
        "gradient_checkpointing": "unknown_kind",
        "error_without_checkpointing": "yes",
        "module_never_called": "no",
        "framework": "pytorch",
    }
    doc, asked = truthful(tmp_path, {"step_pattern": "checkpointing"}, truth, paste)
    assert asked == ["error_without_checkpointing"], asked
    assert advised(doc)[:1] == ["checkpoint_non_reentrant"], (asked, doc["plausible_causes"])
    assert "find_unused_parameters" not in advised(doc)


def test_checkpointing_user_who_cannot_check_still_gets_non_reentrant(tmp_path):
    """The same user without a run to spare ("I don't know" to the check) is led there by
    ruling the other causes out, and never to the flag, which fails with reentrant
    checkpointing."""
    paste = REAL / "unused_module__nodebug__spawn.txt"
    truth = {
        "gradient_checkpointing": "unknown_kind",
        "module_never_called": "no",
        "framework": "pytorch",
    }
    doc, asked = truthful(tmp_path, {"step_pattern": "checkpointing"}, truth, paste)
    assert len(asked) <= 4, asked
    assert advised(doc)[:1] == ["checkpoint_non_reentrant"], (asked, doc["plausible_causes"])
    assert "find_unused_parameters" not in advised(doc)


def test_a_task_loss_left_out_is_not_mistaken_for_an_ignored_output(tmp_path):
    """Case 6: a multi-task user truthfully says forward returns an output the loss ignores;
    the fixes for an ignored output silently leave that task's head untrained, so neither is
    advised before the multi-task question, and the answer gets the task-loss fix."""
    paste = REAL / "multitask_missing_loss__nodebug__spawn.txt"
    early = report(tmp_path, {"forward_unused_outputs": "yes"}, paste)
    assert "find_unused_parameters" not in advised(early)
    assert "drop_unused_outputs" not in advised(early)
    done = report(
        tmp_path,
        {"forward_unused_outputs": "yes", "multitask": "yes", "all_losses_summed": "no"},
        paste,
    )
    assert advised(done) == ["include_all_task_losses"]


def test_frozen_before_and_unfrozen_later_said_in_chinese_gets_the_rebuild():
    """Case 9: frozen before wrapping, unfrozen later, no error but the weights differ: only
    rebuilding the wrapper is right (the unfrozen layer is never averaged otherwise)."""
    sentence = "包 DDP 之前冻结了 backbone，训练到后面再解冻，没有报错，但是两张卡上的权重不一样"
    result = cli("ask", sentence, "--json", "--lang", "zh")
    assert result.returncode == 0, result.err
    doc = json.loads(result.out)
    assert advised(doc) == ["freeze_before_wrapping"]
    assert doc["facts"]["requires_grad_direction"] == "unfreeze"
    assert "static_graph" not in advised(doc) and "zero_weight_aux_loss" not in advised(doc)


def test_the_readme_example_row_for_a_module_run_sometimes_is_only_the_flag():
    """Case 10: the row for "only on some steps or some GPUs" names only what works for a
    branch on some steps and on some ranks (not static_graph), in one answer: the flag, with
    "make any checkpointing non-reentrant" (with reentrant checkpointing the flag alone fails:
    branch_some_steps_ckpt_reentrant)."""
    result = cli("triage", str(README_EXAMPLE), "--json", "--lang", "en")
    doc = json.loads(result.out)
    rows = [
        [a["answer"] for a in r["when"]["answers"]]
        for r in doc["conditional_fixes"]
        if r["when"]["answers"] and r["when"]["answers"][0]["answer"] == "sometimes"
    ]
    assert rows == [["sometimes"]]
    ids = {
        r["id"]
        for r in doc["conditional_fixes"]
        if r["when"]["answers"] and r["when"]["answers"][0]["answer"] == "sometimes"
    }
    assert ids == {"find_unused_parameters_any_checkpointing"}


def test_answering_sometimes_for_the_named_module_ends_in_the_flag(tmp_path):
    """Case 11: after "aux_head runs only on some steps", the report advises, without a row
    that needs "every module runs every step"."""
    answers = {"revealed_module:aux_head": "sometimes", "gradient_checkpointing": "none"}
    doc = report(tmp_path, answers, README_EXAMPLE)
    assert advised(doc)[0] == "find_unused_parameters"
    assert not any(
        r["when"]["facts"].get("conditional_modules") == "none" for r in doc["conditional_fixes"]
    )


def test_freezing_that_runs_with_the_flag_gets_the_rebuild_not_the_hooked_features_fix():
    """Held-out sentence 57: freezing after wrapping "runs normally with
    find_unused_parameters=True". The flag is no longer read as on-and-still-failing (which
    pointed at a loss built outside forward's outputs); the user gets the fix that is right
    whichever way the layers change, freezing before wrapping or rebuilding the wrapper."""
    sentence = (
        "I got an error when setting requires_grad=False on a multi-GPU device, "
        "but it runs normally with find_unused_parameters=True in the config"
    )
    result = cli("ask", sentence, "--json", "--lang", "en")
    assert result.returncode == 0, result.err
    doc = json.loads(result.out)
    assert advised(doc)[0] == "freeze_before_wrapping"
    assert "loss_from_forward_outputs" not in advised(doc)
    assert doc["facts"]["flag_rescues"] is True


def test_the_flag_silencing_the_error_rules_out_a_loss_built_outside_the_outputs(tmp_path):
    """The interview's "yes, and with it the error is gone": the hooked-features cause (the
    flag measurably does not rescue it) stops leading, even with a loss from hidden tensors
    said possible; a user who answered "yes" (still fails) is pointed at it."""
    paste = REAL / "loss_from_hooked_features__nodebug__spawn.txt"
    works = report(tmp_path, {"find_unused_enabled": "works"}, paste)
    fails = report(tmp_path, {"find_unused_enabled": "yes"}, paste)

    def first(doc: dict) -> str:
        return doc["causes"][0]["id"]

    assert first(fails) == "loss_outside_outputs"
    assert first(works) != "loss_outside_outputs"
    assert "loss_from_forward_outputs" not in advised(works)


def test_two_forwards_with_checkpointing_that_is_the_trigger_gets_non_reentrant(tmp_path):
    """Two forwards before one backward also point at DDP's buffer broadcast (an in-place
    error), but once the user says the error goes away with checkpointing off, a cause that
    does not depend on checkpointing is out: the report advises `use_reentrant=False`
    instead of "it depends" between it and `broadcast_buffers=False`."""
    said = "our forward runs twice before one backward(), with gradient checkpointing on"
    truth = {
        "gradient_checkpointing": "reentrant",
        "error_without_checkpointing": "yes",
        "module_never_called": "no",
        "step_pattern": "checkpointing",
        "framework": "pytorch",
    }
    doc, asked = truthful(
        tmp_path, {"said": said}, truth, REAL / "unused_module__nodebug__spawn.txt"
    )
    assert len(asked) <= 3, asked
    assert advised(doc)[:1] == ["checkpoint_non_reentrant"], (asked, doc["plausible_causes"])
    assert "broadcast_buffers_false" not in advised(doc)


FORWARD_TWICE = "we run forward twice before one backward()"
WARNING = (
    "[W reducer.cpp:1360] Warning: find_unused_parameters=True was specified in DDP "
    "constructor, but did not find any unused parameters in the forward pass. This flag "
    "results in an extra traversal of the autograd graph every iteration,  which can "
    "adversely affect performance. If your model indeed never has any unused parameters in "
    "the forward pass, consider turning this flag off. (function operator())\n"
)


def test_two_forwards_and_no_paste_ask_which_error_first(tmp_path):
    """With nothing pasted, "forward twice before one backward" fits DDP's buffer broadcast,
    which raises autograd's in-place error, not the usual one: the first question is which
    error the job stops with, and the in-place one leads straight to
    `broadcast_buffers=False`."""
    truth = {"error_kind": "inplace", "framework": "pytorch"}
    doc, asked = truthful(tmp_path, {"said": FORWARD_TWICE}, truth, None)
    assert asked == ["error_kind"], asked
    assert advised(doc)[:1] == ["broadcast_buffers_false"], doc["plausible_causes"]
    assert doc["family"] == "inplace_modification"


def test_two_forwards_with_the_usual_error_never_get_the_buffer_fix(tmp_path):
    """The same sentence from a user whose job stops with the usual error (and whose model
    has a submodule `forward` never calls): the buffer broadcast is ruled out and the
    report reaches a fix for the unused module."""
    truth = {"error_kind": "reduction", "module_never_called": "yes", "framework": "pytorch"}
    doc, asked = truthful(tmp_path, {"said": FORWARD_TWICE}, truth, None)
    assert asked[0] == "error_kind" and len(asked) <= 3, asked
    assert "buffer_inplace" not in doc["plausible_causes"]
    assert advised(doc)[:1] in (["remove_unused_module"], ["find_unused_parameters"])
    assert "broadcast_buffers_false" not in advised(doc)


def test_a_pasted_reduction_error_rules_out_the_buffer_broadcast(tmp_path):
    """Pasted, the usual error is known: two forwards no longer bring in a cause that can
    only raise the in-place error, and the question about the error is not asked."""
    said = {"said": FORWARD_TWICE}
    doc = report(tmp_path, said, REAL / "unused_module__nodebug__spawn.txt")
    assert "buffer_inplace" not in doc["plausible_causes"]
    assert (doc["splitting_question"] or {}).get("id") != "error_kind"


def test_the_warning_with_two_backward_calls_does_not_say_turn_the_flag_off(tmp_path):
    """ "The flag found nothing unused" printed by a job that calls `backward()` twice a
    step: turning the flag off brings the error back, so the report must not advise it."""
    paste = tmp_path / "warning.txt"
    paste.write_text(WARNING, encoding="utf-8")
    truth = {"backward_layout": "shared", "framework": "pytorch"}
    doc, asked = truthful(tmp_path, {"step_pattern": "backward_many"}, truth, paste)
    assert advised(doc), (asked, doc["plausible_causes"])
    assert "disable_find_unused" not in advised(doc)
    assert "needless_find_unused" not in doc["plausible_causes"]


def test_the_warning_in_a_framework_that_changed_says_turn_the_flag_off_there(tmp_path):
    """A Lightning user sees "the flag found nothing unused" after a change: the warning
    itself says the flag is on, so the framework's setting is not what is missing, and the
    report advises turning it off in Lightning's own spelling instead of "it depends"."""
    paste = tmp_path / "warning.txt"
    paste.write_text(WARNING, encoding="utf-8")
    doc = report(tmp_path, {"step_pattern": "worked_before", "framework": "lightning"}, paste)
    assert advised(doc)[:1] == ["disable_find_unused"], doc["plausible_causes"]
    assert 'strategy="ddp"' in " ".join(str(v) for v in doc["fixes"][0].values())


def test_the_warning_with_reentrant_checkpointing_is_not_blamed_on_checkpointing(tmp_path):
    """Reentrant checkpointing with the flag on stops with "marked as ready twice" or
    leaves parameters unused (measured: none of its scenarios prints the warning), so a
    user who only sees the warning and says they checkpoint (reentrant) is not left with
    "it depends" on checkpointing."""
    paste = tmp_path / "warning.txt"
    paste.write_text(WARNING, encoding="utf-8")
    answers = {"step_pattern": "checkpointing", "gradient_checkpointing": "reentrant"}
    doc = report(tmp_path, {**answers, "framework": "pytorch"}, paste)
    assert "gradient_checkpointing" not in doc["plausible_causes"]
    assert advised(doc)[:1] == ["disable_find_unused"], doc["plausible_causes"]


def test_the_warning_with_several_summed_losses_asks_what_tells_them_apart(tmp_path):
    """Several losses summed into one `backward()` and the warning: an ignored output, a
    second `backward()` or a branch would each need the flag, and the interview now asks
    about them in this family too, so the truthful user who has none of them is told to
    turn the flag off instead of "if the cause is ...": in one answer, the rest of the
    training-step list (none of it), where a question per cause took three."""
    paste = tmp_path / "warning.txt"
    paste.write_text(WARNING, encoding="utf-8")
    truth = {
        "step_pattern_more": "none",
        "backward_calls": "one",
        "forward_unused_outputs": "no",
        "conditional_modules": "none",
        "framework": "pytorch",
    }
    answers = {"step_pattern": "several_losses", "all_losses_summed": "yes"}
    doc, asked = truthful(tmp_path, answers, truth, paste)
    # the framework changes nothing on the way (every answer of it led to the same rows)
    assert asked == ["step_pattern_more"], asked
    assert advised(doc)[:1] == ["disable_find_unused"], (asked, doc["plausible_causes"])


def _ask(said: str) -> dict:
    result = cli("ask", "--json", "--lang", "en", said)
    assert result.returncode == 0, result.err
    return json.loads(result.out)


def test_no_framework_question_when_every_framework_gets_the_same_code(tmp_path):
    """A task loss left out of the total: the fix is plain Python in the training step, the
    same for Lightning as for plain PyTorch, so the interview ends without asking the framework
    (it used to, for nothing) and the code printed is what a Lightning user would have got."""
    said = "two task heads, but I forgot to add the second task's loss to the total loss"
    doc = _ask(said)
    assert advised(doc) == ["include_all_task_losses"]
    assert doc["next_question"] is None
    told = report(tmp_path, {"said": said, "framework": "lightning"})
    assert [f["snippet"] for f in told["fixes"]] == [f["snippet"] for f in doc["fixes"]]


def test_the_framework_is_still_asked_when_it_changes_the_code(tmp_path):
    """Two losses from one forward, a backward() on each: the fix has a Lightning spelling
    (manual optimisation), so the framework is the next question, and a Lightning answer
    changes the code printed."""
    said = "two losses from one forward pass, and I call backward on each"
    doc = _ask(said)
    assert advised(doc)[0] == "sum_losses_single_backward"
    assert doc["next_question"]["id"] == "framework"
    lightning = report(tmp_path, {"said": said, "framework": "lightning"})
    assert advised(lightning)[0] == "sum_losses_single_backward"
    assert lightning["fixes"][0]["snippet"] != doc["fixes"][0]["snippet"]


def test_an_unused_module_nobody_named_gets_a_fix_after_one_truthful_answer(tmp_path):
    """No names in the error: "None of these" now also says the loss uses only what `forward`
    returns, so the fix comes after one answer, not two; a loss built from a hook's features
    has its own option and gets its own fix."""
    paste = REAL / "unused_module__nodebug__spawn.txt"
    doc, asked = truthful(tmp_path, {}, {"step_pattern": "none"}, paste)
    assert asked == ["step_pattern"]
    assert advised(doc)[0] == "find_unused_parameters"
    hooked = REAL / "loss_from_hooked_features__nodebug__spawn.txt"
    doc, asked = truthful(tmp_path, {}, {"step_pattern": "hidden_tensors"}, hooked)
    assert asked == ["step_pattern"]
    assert advised(doc) == ["loss_from_forward_outputs"]


def test_a_module_the_error_names_is_asked_about_first_and_leads_to_removing_it(tmp_path):
    """Named in the error, the module is asked about before the training-step list (its
    `head_start`): "never called" leads to removing it, with no per-step cost."""
    paste = REAL / "unused_module__info__spawn.txt"
    doc, asked = truthful(tmp_path, {}, {"revealed_module:unused": "not_called"}, paste)
    assert asked == ["revealed_module:unused"]
    assert advised(doc)[0] == "remove_unused_module"


def test_the_hidden_tensors_answer_is_offered_only_where_it_can_be_the_cause():
    """After the unused-parameter warning alone the job runs and DDP reached every
    parameter, so "the loss uses tensors forward does not return" is not offered."""
    from ddp_doctor.knowledge.kb import load

    kb = load()
    warning = next(f for f in kb.families if f.id == "unused_params_warning").positive[0].text
    for text, offered in (
        (warning, False),
        ((REAL / "unused_module__nodebug__spawn.txt").read_text(encoding="utf-8"), True),
    ):
        result = cli("triage", "--json", "-", input=text)
        question = json.loads(result.out)["splitting_question"]
        assert question["id"] == "step_pattern"
        values = [o["value"] for o in question["options"]]
        assert ("hidden_tensors" in values) is offered, values


def test_answers_that_fit_no_known_cause_still_get_the_steps_that_find_the_culprit(tmp_path):
    """The flag is on and the error stays, yet "None of these", no module never called, no tied
    weights: no cause ddp-doctor knows is left. The report says so and gives the steps that
    find the parameters without a gradient, instead of two implausible causes and nothing."""
    answers = {
        "said": "I already set find_unused_parameters=True",
        "step_pattern": "none",
        "module_never_called": "no",
        "tied_weights": "no",
    }
    for lang, words in (("en", "fit none of the causes"), ("zh", "已知的原因都对不上")):
        doc = report(tmp_path, answers, lang=lang)
        assert doc["plausible_causes"] == [] and doc["fixes"] == []
        assert "print_params_without_grad" in [d["id"] for d in doc["diagnostics"]]
        assert any(words in note for note in doc["notes"])


def test_marked_ready_twice_asks_the_training_step_with_only_its_own_causes(tmp_path):
    """ "Marked ready twice" (here with `find_unused_parameters=True` on) has four causes; the
    training-step list is asked with only their options, and each truthful answer reaches
    its fix: reentrant checkpointing in one answer, a custom output object in two (tied
    weights are the other cause it leaves open), never the flags that fail for it."""
    paste = REAL / "unused_output_in_object.find_unused_parameters__nodebug__spawn.txt"
    first = report(tmp_path, {}, paste)
    question = first["splitting_question"]
    assert question["id"] == "step_pattern"
    values = [o["value"] for o in question["options"]]
    assert values == ["backward_many", "checkpointing", "hidden_tensors", "none", "unsure"]
    truth = {"step_pattern": "hidden_tensors", "tied_weights": "no"}
    doc, asked = truthful(tmp_path, {}, truth, paste)
    assert asked == ["step_pattern", "tied_weights"]
    assert advised(doc) == ["loss_from_forward_outputs"]
    checkpointed = REAL / "corpus" / "accelerate-2017.txt"  # a thread: its traceback hides it
    doc, asked = truthful(tmp_path, {}, {"step_pattern": "checkpointing"}, checkpointed)
    assert asked == ["step_pattern"]
    assert advised(doc)[0] == "checkpoint_non_reentrant"
    assert {"find_unused_parameters", "static_graph"}.isdisjoint(advised(doc))


def test_a_named_head_whose_task_loss_is_left_out_gets_its_fix_in_one_answer(tmp_path):
    """The error names `head_b`; "it runs, but its task's loss is not added into the total"
    says all the follow-ups would (several tasks, one left out), in English and Chinese."""
    paste = REAL / "multitask_missing_loss__info__spawn.txt"
    first = report(tmp_path, {}, paste)
    assert first["splitting_question"]["id"] == "revealed_module:head_b"
    for lang in ("en", "zh"):
        doc = report(tmp_path, {"revealed_module:head_b": "task_loss_left_out"}, paste, lang)
        assert advised(doc) == ["include_all_task_losses"]
    ignored = report(tmp_path, {"revealed_module:head_b": "output_ignored"}, paste)
    assert "include_all_task_losses" not in advised(ignored)


def test_summing_several_losses_is_not_an_answer_that_hides_the_cause(tmp_path):
    """Detection and multi-task models sum several losses whatever their cause: the first
    answer of the training-step list is a loss that may be missing from the total, so a user
    who sums several losses and has an unused module answers "None of these" and gets the
    fix at once (before: "several losses", then each other answer as its own question); a
    user who suspects a missing loss is asked to check the total next."""
    paste = REAL / "unused_module__nodebug__spawn.txt"
    first = report(tmp_path, {}, paste)
    assert first["splitting_question"]["id"] == "step_pattern"
    assert "missing" in first["splitting_question"]["options"][0]["label"]
    truth = {"step_pattern": "none", "multitask": "yes", "all_losses_summed": "yes"}
    doc, asked = truthful(tmp_path, {}, truth, paste)
    assert asked == ["step_pattern"]
    assert advised(doc)[0] == "find_unused_parameters"
    suspect = report(tmp_path, {"step_pattern": "several_losses"}, paste)
    assert suspect["splitting_question"]["id"] == "all_losses_summed"
    zh = report(tmp_path, {}, paste, "zh")
    assert "没加进去" in zh["splitting_question"]["options"][0]["label"]


def test_a_multitask_model_whose_tasks_take_turns_gets_the_flag_in_one_more_answer(tmp_path):
    """A known "several tasks" (an answer, or a sentence that said it) no longer skips the
    training-step list: tasks that sit out some steps are a branch, one answer away from its
    fix, where the per-cause questions took four (losses summed, a module never called,
    ignored outputs, then the branch)."""
    paste = REAL / "unused_module__nodebug__spawn.txt"
    truth = {
        "step_pattern": "branches",
        "all_losses_summed": "yes",
        "module_never_called": "no",
        "forward_unused_outputs": "no",
        "conditional_modules": "steps",
        "gradient_checkpointing": "none",
    }
    doc, asked = truthful(tmp_path, {"multitask": "yes"}, truth, paste)
    assert asked == ["step_pattern"]
    assert advised(doc)[0] in {"find_unused_parameters", "find_unused_parameters_any_checkpointing"}


def test_before_the_checkpointing_answer_the_flag_comes_with_use_reentrant_false(tmp_path):
    """Measured on torch 2.13: with a block under reentrant checkpointing, find_unused_parameters
    stops at the first backward with "marked as ready twice", for a branch
    (branch_some_steps_ckpt_reentrant), an ignored output (unused_forward_output_ckpt_reentrant,
    also when the output is dropped with the flag) and a module never called; with
    use_reentrant=False too it trains like one process, and without checkpointing that switch
    changes nothing. So before the user says anything about checkpointing the advice is the
    flag with "make any checkpointing non-reentrant" (no extra answer needed); once they say
    none, the flag alone; once they say reentrant, both changes, and the flag alone is a
    warning."""
    ignored = {"step_pattern": "extra_outputs", "loss_uses_hidden_tensors": "no"}
    for paste, answers in (
        (REAL / "branch_some_steps__nodebug__spawn.txt", {"step_pattern": "branches"}),
        (REAL / "unused_module__nodebug__spawn.txt", {"module_never_called": "yes"}),
        (REAL / "unused_forward_output__nodebug__spawn.txt", ignored),
    ):
        first = report(tmp_path, answers, paste)
        assert "find_unused_parameters" not in advised(first)
        assert "find_unused_parameters_any_checkpointing" in advised(first)
        fix = next(
            f for f in first["fixes"] if f["id"] == "find_unused_parameters_any_checkpointing"
        )
        assert "find_unused_parameters=True" in fix["snippet"]
        assert "use_reentrant=False" in fix["snippet"]
        # what an answer about checkpointing would give is this advice spelled out: the
        # report does not offer it again as "another fix, depending on your code"
        offered = {row["id"] for row in first["conditional_fixes"]}
        assert offered.isdisjoint({"find_unused_parameters", "checkpoint_non_reentrant_with_flag"})
        plain = report(tmp_path, {**answers, "gradient_checkpointing": "none"}, paste)
        assert "find_unused_parameters" in advised(plain)
        assert "find_unused_parameters_any_checkpointing" not in advised(plain)
        checkpointed = {
            **answers,
            "gradient_checkpointing": "reentrant",
            "error_without_checkpointing": "no",
        }
        doc = report(tmp_path, checkpointed, paste)
        assert "checkpoint_non_reentrant_with_flag" in advised(doc)
        assert {"find_unused_parameters", "drop_unused_outputs"}.isdisjoint(advised(doc))
        assert "find_unused_parameters_any_checkpointing" not in advised(doc)
        assert "find_unused_parameters" in [w["id"] for w in doc["warnings"]]


def test_a_user_who_cannot_say_whether_checkpointing_is_on_still_gets_a_fix(tmp_path):
    """ "I don't know" to the checkpointing question used to leave a branch with no advice:
    the flag's result depends on it. The flag with non-reentrant checkpointing works either
    way (measured), so that user gets it, spelled for their framework."""
    answers = {"step_pattern": "branches", "gradient_checkpointing": "unsure"}
    paste = REAL / "branch_some_steps__nodebug__spawn.txt"
    for framework, spelling in (
        ("hf_trainer", '"use_reentrant": False'),
        ("lightning", "find_unused_parameters=True"),
        ("accelerate", "DistributedDataParallelKwargs(find_unused_parameters=True"),
    ):
        doc = report(tmp_path, {**answers, "framework": framework}, paste, lang="zh")
        assert advised(doc)[0] == "find_unused_parameters_any_checkpointing"
        assert doc["fixes"][0]["framework"] == framework
        assert spelling in doc["fixes"][0]["snippet"]
        assert "梯度检查点" in doc["fixes"][0]["title"]


def test_a_named_module_frozen_during_training_gets_its_fix_in_one_answer(tmp_path):
    """The error names `body`, frozen after wrapping (requires_grad_after_wrap): "it is used,
    but frozen or unfrozen during training" is one of the module's answers, so the rebuild
    (or freeze before wrapping) comes after that one answer, not after the training-step
    list as well."""
    paste = REAL / "requires_grad_after_wrap__info__spawn.txt"
    first = report(tmp_path, {}, paste)
    question = first["splitting_question"]
    assert question["id"] == "revealed_module:body"
    assert "frozen" in [o["value"] for o in question["options"]]
    for lang in ("en", "zh"):
        doc = report(tmp_path, {"revealed_module:body": "frozen"}, paste, lang=lang)
        assert advised(doc)[0] == "freeze_before_wrapping"
        assert "static_graph" not in advised(doc)


def test_a_named_output_the_loss_ignores_is_not_asked_about_several_tasks(tmp_path):
    """The module's answers come in order, a task's loss left out before "the loss ignores
    its output", and the question says to pick the first that fits: the second answer
    says no task's loss is missing, so the fix follows it at once."""
    paste = REAL / "unused_forward_output__info__spawn.txt"
    doc = report(tmp_path, {"revealed_module:aux_head": "output_ignored"}, paste)
    assert advised(doc), doc["splitting_question"]
    assert "include_all_task_losses" not in advised(doc)
    assert "multitask_missing_loss" not in doc["plausible_causes"]


def test_a_module_never_called_in_a_model_that_checkpoints_gets_a_fix_in_two_answers(tmp_path):
    """A fine-tune with gradient checkpointing on (kind unknown) and a module never called:
    "checkpointing is on" comes before "none of these" in the training-step list, and the
    error stays without checkpointing. The flag with use_reentrant=False works whatever the
    checkpoint's kind (measured: framework_flag_off_ckpt_reentrant and _non_reentrant), so it
    is advised then, without asking the kind; the flag alone, which fails with reentrant
    checkpointing, is not."""
    paste = REAL / "unused_module__nodebug__spawn.txt"
    answers = {"step_pattern": "checkpointing", "error_without_checkpointing": "no"}
    doc = report(tmp_path, answers, paste)
    assert advised(doc)[0] == "checkpoint_non_reentrant_with_flag"
    assert "find_unused_parameters" not in advised(doc)
    assert doc["plausible_causes"][0] == "unused_module"


def test_layers_frozen_after_wrapping_get_the_flag_only_without_reentrant_checkpointing(tmp_path):
    """Measured (requires_grad_after_wrap_ckpt_reentrant): layers frozen after wrapping in a
    model with a block under reentrant checkpointing stop at the first backward with "marked
    as ready twice" once the flag is on, while freezing before wrapping trains like one
    process. So the flag waits for the checkpointing answer here too, and with reentrant
    checkpointing it is a warning; the rebuild is advised either way."""
    paste = REAL / "requires_grad_after_wrap__nodebug__spawn.txt"
    frozen = {"step_pattern": "freezing", "requires_grad_direction": "freeze"}
    unknown = report(tmp_path, frozen, paste)
    assert advised(unknown)[0] == "freeze_before_wrapping"
    assert "find_unused_parameters" not in advised(unknown)
    plain = report(tmp_path, {**frozen, "gradient_checkpointing": "none"}, paste)
    assert "find_unused_parameters" in advised(plain)
    checkpointed = {**frozen, "gradient_checkpointing": "reentrant"}
    # checkpointing is then a cause too: the error stays without it, as it does here
    asked = report(tmp_path, checkpointed, paste)["splitting_question"]["id"]
    assert asked == "error_without_checkpointing"
    reentrant = report(tmp_path, {**checkpointed, asked: "no"}, paste)
    assert advised(reentrant)[0] == "freeze_before_wrapping"
    assert "find_unused_parameters" in [w["id"] for w in reentrant["warnings"]]


def test_static_graph_user_unsure_of_the_step_list_is_asked_about_ignored_outputs(tmp_path):
    """An output the loss ignores, under static_graph=True (the graph-changed error): a user
    who cannot pick from the training-step list used to answer six more questions and get no
    fix, because the question about ignored outputs was not asked for this error; now it is,
    and the flag (with non-reentrant checkpointing, if any) follows."""
    paste = REAL / "unused_forward_output.static_graph__nodebug__spawn.txt"
    truth = {
        "conditional_modules": "none",
        "backward_calls": "one",
        "requires_grad_changed": "no",
        "module_never_called": "no",
        "gradient_checkpointing": "none",
        "forward_unused_outputs": "yes",
        "multitask": "no",
    }
    doc, asked = truthful(tmp_path, {"step_pattern": "unsure"}, truth, paste)
    assert "forward_unused_outputs" in asked
    assert advised(doc)[:1] == ["find_unused_parameters_any_checkpointing"]


def test_several_summed_losses_and_layers_unfrozen_after_wrapping_get_the_rebuild(tmp_path):
    """A detector with several losses, all in the total, that unfreezes its backbone after
    wrapping: "several losses" is the first line of the training-step list that fits, so the
    user picks it, says every loss is in the total, and is shown the rest of the list, where
    "layers are frozen or unfrozen" leads to the fix (a question per remaining cause took
    seven answers and was still asking)."""
    paste = REAL / "requires_grad_after_wrap__nodebug__spawn.txt"
    truth = {
        "step_pattern_more": "freezing",
        "requires_grad_changed": "yes",
        "requires_grad_direction": "unfreeze",
        "backward_calls": "one",
        "forward_unused_outputs": "no",
        "conditional_modules": "none",
        "module_never_called": "no",
        "framework": "pytorch",
    }
    answers = {"step_pattern": "several_losses", "all_losses_summed": "yes"}
    doc, asked = truthful(tmp_path, answers, truth, paste)
    assert asked[:1] == ["step_pattern_more"] and len(asked) <= 3, asked
    # unfrozen after wrapping: only rebuilding the wrapper works (find_unused_parameters
    # errors, measured on torch 2.13)
    assert advised(doc)[:1] == ["freeze_before_wrapping"], (asked, doc["plausible_causes"])
    assert "find_unused_parameters" not in advised(doc)
