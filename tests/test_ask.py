"""`ddp-doctor ask` as a user runs it: answers, diagnoses, JSON that always parses, the language."""

from __future__ import annotations

import json

import pytest
from helpers import cli, has_chinese

C_LOCALE = {"LANG": "C", "LC_ALL": "", "LANGUAGE": ""}


def ask(*args: str, env: dict | None = None):
    return cli("ask", *args, env={**C_LOCALE, **(env or {})})


def ask_json(text: str) -> dict:
    """`ddp-doctor ask TEXT --json`, parsed."""
    return json.loads(ask(text, "--json").out)


@pytest.mark.parametrize(
    ("text", "kind", "code"),
    [
        ("static_graph 和 find_unused_parameters 有什么区别？", "answer", 0),
        ("what does find_unused_parameters cost?", "answer", 0),
        ("Lightning 里怎么设置 find_unused_parameters", "answer", 0),
        ("is the zero-loss trick safe?", "answer", 0),
        ("why does it still fail with find_unused_parameters=True?", "answer", 0),
        ("I call loss1.backward(retain_graph=True) and then loss2.backward()", "diagnosis", 0),
        ("在 __init__ 里定义了一个模块，但是 forward 里没有用到它", "diagnosis", 0),
        ("the weather is nice today", "not_understood", 1),
        ("我没有冻结任何层，也没有用梯度检查点", "diagnosis", 0),
        # an error that happened, the fix its message advises named in the report: diagnosed,
        # not answered with what the fix does
        ("多卡训练时出现 Please set find_unused_parameters=True 的错误", "diagnosis", 0),
        ("Adding find_unused_parameters=True made my training noticeably slower.", "answer", 0),
    ],
)
def test_json_always_parses_with_the_documented_exit_code(text, kind, code):
    done = ask(text, "--json")
    data = json.loads(done.out)  # exactly one JSON document, whatever was asked
    assert data["kind"] == kind
    assert done.returncode == code, done.err
    assert data["schema_version"] >= 1
    if kind == "not_understood":
        assert data["status"] == "not_understood" and data["hint"]


def test_an_answer_names_the_entries_it_came_from():
    data = json.loads(ask("static_graph 和 find_unused_parameters 有什么区别？", "--json").out)
    assert data["fixes"] == ["static_graph", "find_unused_parameters"]
    sources = [part["source"] for part in data["parts"]]
    assert any(s.startswith("fixes.yaml › static_graph") for s in sources)
    assert any(s.startswith("fixes.yaml › find_unused_parameters") for s in sources)
    assert all(has_chinese(part["text"]) for part in data["parts"] if part["text"])


def test_the_framework_spelling_is_answered_with_the_frameworks_snippet():
    data = json.loads(ask("how do I set find_unused_parameters in Lightning?", "--json").out)
    code = "\n".join(part["code"] or "" for part in data["parts"])
    assert "ddp_find_unused_parameters_true" in code
    assert data["lang"] == "en"


def test_still_failing_lists_the_causes_the_engine_ranks_first():
    data = json.loads(ask("why does it still fail with find_unused_parameters=True?", "--json").out)
    assert data["aspect"] == "still_fails"
    # measured on torch 2.13: with the flag on, what still fails is a loss built from
    # tensors forward does not return (an output the loss ignores is rescued by the flag)
    assert data["causes"] and data["causes"][0]["id"] == "loss_outside_outputs"


def test_a_description_shows_what_was_read_and_the_next_question():
    done = ask("两次loss.backward()", "--format", "markdown")
    assert done.returncode == 0
    assert done.out.startswith("我读到的：")  # a Chinese sentence on a C locale: Chinese
    assert "“两次loss.backward”" in done.out
    assert "接下来最关键的问题：" in done.out  # whether those backward calls share one forward


@pytest.mark.parametrize(
    ("text", "question", "answer", "lang"),
    [
        ("I use reentrant gradient checkpointing", "gradient_checkpointing", "reentrant", "en"),
        ("每个 step 调用了两次 backward", "backward_calls", "many", "zh"),
    ],
)
def test_a_reading_the_fix_rests_on_is_said_in_its_question_words(text, question, answer, lang):
    """A fix given on the strength of one reading says so, in the question's own words, so a
    misreading is seen before the code is copied; `rests_on` in JSON."""
    from ddp_doctor.knowledge.kb import load

    kb = load()
    data = ask_json(text)
    assert data["fixes"], data  # advice, on the reading alone
    assert [(r["id"], r["answer"]) for r in data["rests_on"]] == [(question, answer)]
    shown = ask(text, "--format", "markdown", "--lang", lang).out
    asked = kb.question(question)
    label = next(o.label.get(lang) for o in asked.options if o.value == answer)
    said = shown.split("# ddp-doctor")[0]
    assert f"{asked.text.get(lang)} → {label}" in said


def test_a_reading_the_fix_does_not_rest_on_is_not_said_again():
    """The framework read from the text spells the fix, it does not choose it."""
    data = ask_json("I use PyTorch Lightning and call backward twice per step")
    assert [r["id"] for r in data["rests_on"]] == ["backward_calls"]


@pytest.mark.parametrize(
    "text",
    [
        "I set find_unused_parameters=False and still get the error",
        "I run with --ddp_find_unused_parameters False but this does not work",
        "设置了 find_unused_parameters=False 还是报错",
    ],
)
def test_a_fix_named_but_set_the_other_way_is_a_description_not_a_still_fails_question(text):
    """The flag written out as off: the job ran without the fix, so the answer is the
    diagnosis for a job with the flag off, not why the flag "still fails"."""
    data = ask_json(text)
    assert data["kind"] == "diagnosis"
    assert data["facts"]["find_unused_enabled"] is False


@pytest.mark.parametrize(
    ("text", "fix", "aspect"),
    [
        (
            "Is it safe to set find_unused_parameters=False now that the error is gone?",
            "disable_find_unused",
            "safe",
        ),
        (
            "Can I disable find_unused_parameters to make training faster?",
            "disable_find_unused",
            "cost",
        ),
        (
            "How do I turn off find_unused_parameters in Lightning?",
            "disable_find_unused",
            "framework",
        ),
        ("把 find_unused_parameters 改成 False 会变快吗？", "disable_find_unused", "cost"),
        ("关掉 find_unused_parameters 安全吗？", "disable_find_unused", "safe"),
        # the name between the verb and "off"
        (
            "Would switching find_unused_parameters off speed things up?",
            "disable_find_unused",
            "cost",
        ),
        # the flag turned on, or named with no value: the flag's own entry
        # ("就好了": the flag rescued the job, so it was off before; it is on now)
        (
            "加了 find_unused_parameters=True 就好了，但会不会影响精度",
            "find_unused_parameters",
            "safe",
        ),
        (
            "How do I set find_unused_parameters=True in Lightning?",
            "find_unused_parameters",
            "framework",
        ),
        ("Does find_unused_parameters slow training down?", "find_unused_parameters", "cost"),
    ],
)
def test_a_question_about_turning_the_flag_off_is_answered_from_turning_it_off(text, fix, aspect):
    """ "Can I set find_unused_parameters=False?" names the flag but asks about going without
    it: the answer is the entry for turning it back off (when that is safe, what it saves),
    not what turning it on does."""
    data = ask_json(text)
    assert data["kind"] == "answer", data
    assert data["fixes"][0] == fix
    assert data["aspect"] == aspect


@pytest.mark.parametrize(
    ("text", "fact", "value"),
    [
        ("I set static_graph=False and still get the error", "static_graph_enabled", False),
        (
            "I removed find_unused_parameters=True and the error came back",
            "find_unused_enabled",
            False,
        ),
        ("把find_unused_parameters改成False还是报错", "find_unused_enabled", False),
        (
            "strategy='ddp_find_unused_parameters_false' in my Lightning Trainer",
            "find_unused_enabled",
            False,
        ),
        ("TrainingArguments(gradient_checkpointing=False)", "gradient_checkpointing", "none"),
        (
            "TrainingArguments(gradient_checkpointing=True, "
            "gradient_checkpointing_kwargs={'use_reentrant': False})",
            "gradient_checkpointing",
            "non_reentrant",
        ),
    ],
)
def test_an_option_written_out_as_off_is_read_as_off(text, fact, value):
    """Read the other way, each of these would rank causes for a set-up the user does not have
    (the HF Trainer's own spelling of non-reentrant checkpointing was read as reentrant)."""
    data = ask_json(text)
    assert data["kind"] == "diagnosis"
    assert data["facts"][fact] == value


def test_the_error_pasted_or_quoted_is_the_one_diagnosed(tmp_path):
    """Not the usual unused-parameter error: `ask` used to diagnose that one whatever was
    pasted, so a ready-twice log got the causes of parameters without a gradient."""
    log = tmp_path / "rank1.log"
    log.write_text("RuntimeError: Expected to mark a variable ready only once.\n", "utf-8")
    pasted = json.loads(ask("I use gradient checkpointing", "--paste", str(log), "--json").out)
    quoted = json.loads(
        ask("two losses, then Expected to mark a variable ready only once", "--json").out
    )
    for data in (pasted, quoted):
        assert data["kind"] == "diagnosis"
        assert data["facts"]["family"] == "mark_ready_twice"
        assert data["findings"][0]["family"] == "mark_ready_twice"
        assert "unused_module" not in [c["id"] for c in data["causes"][:2]]


def test_lang_flag_beats_the_language_of_the_text():
    done = ask("两次loss.backward()", "--format", "markdown", "--lang", "en")
    assert done.out.startswith("I read:")
    assert not has_chinese(done.out.split("\n", 1)[0])


def test_an_english_sentence_follows_the_locale():
    done = cli("ask", "I call backward twice", "--format", "markdown", env={"LANG": "zh_CN.UTF-8"})
    assert done.out.startswith("我读到的：")


def test_a_wrong_reading_is_visible_with_its_words():
    data = json.loads(ask("I don't call backward twice", "--json").out)
    reading = next(u for u in data["understood"] if u["reading"] == "backward_many")
    assert reading["negated"] and reading["facts"] == {"backward_calls": "one"}
    assert reading["quote"] == "backward twice"


def test_a_negated_reading_is_shown_as_negated():
    """ "没有冻结" must not be echoed back as "冻结了某些层": the wrong reading would look right."""
    out = ask("我在一个循环里调用了两次 backward，没有冻结").stdout.decode("utf-8")
    assert "不是这样：冻结了某些层" in out
    assert "- 冻结了某些层" not in out
    out = ask("I don't use checkpointing").stdout.decode("utf-8")
    assert "not the case: gradient checkpointing is on" in out


def test_still_fails_cites_the_measured_failures():
    """'Why does it still fail with X?' shows what tests/ddp measured X failing on, per scenario."""
    out = ask("why does it still fail with find_unused_parameters=True?").stdout.decode("utf-8")
    assert "measured on real DDP" in out and "(scenario `" in out
    assert "ran the fix `find_unused_parameters` on real 2-process DDP" in out
    assert "fixes.yaml" not in out  # the rules file's internal path stays in --json
    assert "works, the parameters equal" not in out  # only the failures here


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("aspect", ["cost", "safe", "framework", "still_fails", "why", None])
def test_no_answer_shows_an_unfilled_placeholder(lang, aspect):
    """Every fix, every aspect: a text written for a report ("{said} the module is used: ...")
    reads as a condition in an answer, never with its braces."""
    import re

    from ddp_doctor.knowledge.kb import load
    from ddp_doctor.reading.understand import Intent, Understanding
    from ddp_doctor.talk import ask as ask_module

    kb = load()
    for fix_id in kb.fixes:
        intent = Intent(topics=(fix_id,), fixes=(fix_id,), aspect=aspect, on_facts={})
        understood = Understanding(
            text="?", lang=lang, readings=(), facts={}, guesses=(), is_question=True, intent=intent
        )
        answer = ask_module.build_answer(kb, understood, lang)
        for part in answer.parts:
            # (code is compiled by test_markdown_terminal: an f-string's braces are code)
            for shown in (part.heading, part.text):
                assert not re.search(r"(?<!\{)\{[a-z_]+\}(?!\})", shown), (fix_id, shown)


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("When I train on two GPUs the warning appears. What's wrong with this?", "en"),
        ("多卡训练时提示如下，请问这个正常吗", "zh"),
    ],
)
def test_a_question_about_a_message_it_does_not_hold_asks_for_the_message(text, lang, tmp_path):
    done = ask("--json", "--lang", lang, text)
    data = json.loads(done.stdout)
    assert done.returncode == 1 and data["status"] == "not_understood"
    assert "ddp-doctor triage -" in data["hint"] and "--paste" in data["hint"]
    # the way it shows works: the same question with the message gets a diagnosis
    log = tmp_path / "log.txt"
    log.write_text(
        "RuntimeError: Expected to have finished reduction in the prior iteration before "
        "starting a new one. This error indicates that your module has parameters that were "
        "not used in producing loss.\n",
        encoding="utf-8",
    )
    with_message = ask("--json", "--lang", lang, "--paste", str(log), text)
    assert with_message.returncode == 0
    assert json.loads(with_message.stdout)["kind"] == "diagnosis"


def test_a_sentence_about_nothing_still_asks_what_the_step_does():
    data = json.loads(ask("--json", "the weather is nice today").stdout)
    assert "triage -" not in data["hint"] and "backward()" in data["hint"]


@pytest.mark.parametrize(
    ("text", "fix"),
    [
        (
            "Set find_unused_parameters=True for torch's DistributedDataParallel",
            "find_unused_parameters",
        ),
        ("Pass static_graph=True to DistributedDataParallel", "static_graph"),
        ("Try setting find_unused_parameters=True in the Trainer", "find_unused_parameters"),
        # the framework named is where the fix goes, not a set-up told besides
        ("Set find_unused_parameters=True in the Lightning Trainer", "find_unused_parameters"),
        ("试试加上 find_unused_parameters=True", "find_unused_parameters"),
    ],
)
def test_an_instruction_naming_a_fix_is_answered_with_how_to_apply_it(text, fix):
    """Someone's advice pasted as it was given ("Set X for DDP") asks how to apply it: the answer
    is where the fix goes, and the fix is not read as already in the user's set-up."""
    data = ask_json(text)
    assert data["kind"] == "answer"
    assert fix in data["fixes"] and data["aspect"] == "framework"
    assert any(part["code"] for part in data["parts"])


@pytest.mark.parametrize(
    "text",
    [
        # what was done, told without "I": the error says it is a set-up that still fails
        "Set find_unused_parameters=True and still get the same error",
        # later in a story, an instruction-like sentence tells what was done
        "Training ran fine on one GPU. Set find_unused_parameters=True and it hangs on two.",
        # a model told in the words of a fix's topic: the set-up, diagnosed
        "use gradient checkpointing with LoRA on 2 GPUs",
        "set requires_grad=False for the backbone after wrapping",
        # what was tried, not a suggestion
        "试过 find_unused_parameters=True，没用",
    ],
)
def test_a_set_up_told_without_i_is_not_taken_for_an_instruction(text):
    data = ask_json(text)
    assert not (data["kind"] == "answer" and data.get("aspect") == "framework"), data


def test_the_same_words_told_as_the_description_are_the_set_up(tmp_path):
    """At the session's "describe it" prompt (and in a saved session's `said:`), the text is
    known to describe the set-up: "set X=True in the Trainer" is what was done, not advice."""
    said = "set find_unused_parameters=True in the Lightning Trainer"
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"said": said}), encoding="utf-8")
    done = cli("--answers", str(answers), "--json", "--lang", "en")
    facts = json.loads(done.out)["facts"]
    assert facts["find_unused_enabled"] is True and facts["framework"] == "lightning"
    # asked on its own, the same words ask how to apply the flag
    assert json.loads(ask(said, "--json").out)["aspect"] == "framework"


@pytest.mark.parametrize(
    ("text", "fix", "aspect"),
    [
        # the option's own words read as non-reentrant / reentrant checkpointing: no set-up
        (
            "Measuring the memory cost of use_reentrant=False against use_reentrant=True.",
            "checkpoint_non_reentrant",
            "cost",
        ),
        ("use_reentrant=False made every step slower", "checkpoint_non_reentrant", "cost"),
        # what the fix is for (its topic's `context`) tells no set-up either
        (
            "Comparing the memory cost of use_reentrant=False and use_reentrant=True with "
            "gradient checkpointing on.",
            "checkpoint_non_reentrant",
            "cost",
        ),
    ],
)
def test_a_statement_naming_only_the_fix_and_what_is_asked_is_answered(text, fix, aspect):
    """A statement that names a fix and an aspect's strong cue, and tells nothing else (the
    readings of the fix's own words are no set-up), asks about that aspect of the fix."""
    data = ask_json(text)
    assert data["kind"] == "answer", data
    assert fix in data["fixes"] and data["aspect"] == aspect


@pytest.mark.parametrize(
    ("text", "fix"),
    [
        ("Our fork now passes broadcast_buffers through to DDP.", "broadcast_buffers_false"),
        ("有人说 broadcast_buffers 这个参数很重要。", "broadcast_buffers_false"),
        ("The no_sync context manager skips the gradient all-reduce.", "no_sync_first_backward"),
        # prose about a fix in general, saying what the fix is for ("for gradient checkpointing")
        (
            "PyTorch's docs recommend use_reentrant=False for gradient checkpointing under DDP.",
            "checkpoint_non_reentrant",
        ),
        (
            "Wrapping the micro-batches in no_sync skips the all-reduce during gradient accumulation.",
            "no_sync_first_backward",
        ),
        (
            "The static_graph option lets DDP reuse the graph it recorded in the first iteration.",
            "static_graph",
        ),
        # Chinese prose is prose: a character counts as half a word, as in proximity
        (
            "PyTorch 文档推荐在 DDP 下做梯度检查点时用 use_reentrant=False。",
            "checkpoint_non_reentrant",
        ),
        ("no_sync 上下文管理器会在梯度累积时跳过 all-reduce，省掉通信。", "no_sync_first_backward"),
    ],
)
def test_a_statement_about_a_fix_alone_or_in_general_is_answered_about_it(text, fix):
    """A statement that names a fix and nothing else the lexicon reads, with no error told, and
    prose about a fix with no first person and no problem told (pull-request text, a line of
    the docs), even where it says what the fix is for, tell no set-up of the writer's to
    diagnose: they get the answer about that fix."""
    data = ask_json(text)
    assert data["kind"] == "answer", data
    assert data["fixes"][0] == fix


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        # the first person: the writer's own set-up
        (
            "We pass use_reentrant=False for gradient checkpointing in our trainer.",
            "gradient_checkpointing",
        ),
        # a problem told in general
        (
            "Gradient checkpointing with use_reentrant=True is incompatible with DDP in this repo.",
            "gradient_checkpointing",
        ),
        ("我们训练时开了梯度检查点，传的是 use_reentrant=False。", "gradient_checkpointing"),
        # Chinese drops the subject: "打开了…" / "… 说 …" tell what the writer did and saw
        (
            "打开了 static_graph=True 之后，DDP 说训练图和第一次迭代的不一样。",
            "static_graph_enabled",
        ),
        ("这个仓库里 use_reentrant=True 的梯度检查点和 DDP 不兼容。", "gradient_checkpointing"),
    ],
)
def test_a_statement_of_ones_own_set_up_or_a_problem_is_diagnosed(text, fact):
    data = ask_json(text)
    assert data["kind"] == "diagnosis", data
    assert fact in data["facts"]


@pytest.mark.parametrize(
    ("text", "fix", "heading"),
    [
        (
            "We pass use_reentrant=False for gradient checkpointing in our trainer.",
            "checkpoint_non_reentrant",
            "Or, if you meant to ask about the fix itself",
        ),
        (
            "Our trainer turns on gradient checkpointing and passes find_unused_parameters=True "
            "to DDP.",
            "checkpoint_non_reentrant",
            "Or, if you meant to ask about the fix itself",
        ),
        (
            "我们在训练里用了 find_unused_parameters=True 和梯度检查点",
            "find_unused_parameters",
            "如果你其实是想问这个修复方案本身",
        ),
        # the flag told as off: what may have been asked is turning it off
        (
            "Our config sets find_unused_parameters=False and gradient checkpointing on.",
            "disable_find_unused",
            "Or, if you meant to ask about the fix itself",
        ),
    ],
)
def test_a_set_up_told_in_a_fixs_words_also_offers_that_fix(text, fix, heading):
    """A statement that names a fix and tells a set-up, with no error, is diagnosed; it may also
    have been about the fix (pull-request text, a remark), so that fix's readings come after
    the diagnosis, marked as an alternative, in the text and as `candidates` in JSON."""
    data = ask_json(text)
    assert data["kind"] == "diagnosis", data
    assert data["candidates"] and data["candidates"][0]["fix"] == fix
    assert len({c["aspect"] for c in data["candidates"]}) > 1  # what it does, costs, ...
    shown = ask(text).out
    assert heading in shown
    assert shown.index("## Likely causes" if heading.startswith("Or") else "## 可能的原因") < (
        shown.index(heading)
    )


@pytest.mark.parametrize(
    "text",
    [
        "I freeze the backbone after wrapping and get the error",
        "I use gradient checkpointing with LoRA on 2 GPUs and get the error",
        "My model has two heads and I call backward twice per step",
    ],
)
def test_a_description_of_an_error_or_naming_no_fix_offers_no_fix(text):
    data = ask_json(text)
    assert data["kind"] == "diagnosis", data
    assert data["candidates"] == []


@pytest.mark.parametrize(
    ("text", "aspect"),
    [
        ("Is it safe to skip the gradient all-reduce on accumulation steps?", "safe"),
        ("梯度累积的时候跳过梯度同步会影响精度吗？", "safe"),
        ("How much faster is it to sync only on the last micro-batch?", "cost"),
        ("梯度累积时避免每一步都同步梯度，会变快多少？", "cost"),
        ("Without no_sync, is the all_reduce on every accumulation step just wasted time?", "cost"),
        ("不用 no_sync 的话，每个累积步都做 all_reduce 是不是在浪费？", "cost"),
    ],
)
def test_what_no_sync_does_said_without_its_name_is_about_no_sync(text, aspect):
    data = ask_json(text)
    assert data["kind"] == "answer", data
    assert data["fixes"][0] == "no_sync_first_backward" and data["aspect"] == aspect


@pytest.mark.parametrize(
    ("text", "aspect"),
    [
        ("broadcast_buffers 设成 False 会影响 BN 吗？", "safe"),
        ("broadcast_buffers 设成 False 会影响速度吗？", "cost"),
    ],
)
def test_what_a_change_would_affect_says_what_is_asked(text, aspect):
    """ "会影响 BN 吗" asks whether training stays right; "会影响速度吗" what it costs."""
    data = ask_json(text)
    assert data["kind"] == "answer", data
    assert data["fixes"][0] == "broadcast_buffers_false" and data["aspect"] == aspect


@pytest.mark.parametrize(
    ("text", "fix", "aspect"),
    [
        (
            "After adding find_unused_parameters=True I got a different error instead.",
            "find_unused_parameters",
            "still_fails",
        ),
        ("设置了 static_graph=True 之后又报了别的错", "static_graph", "still_fails"),
        (
            "With static_graph=True the weights are not synchronized across ranks?",
            "static_graph",
            "safe",
        ),
    ],
)
def test_another_error_after_a_fix_or_weights_out_of_sync_say_what_is_asked(text, fix, aspect):
    """A fix that led to another error did not work ("still fails"); weights no longer
    synchronised across ranks is whether the fix trains right ("safe")."""
    data = ask_json(text)
    assert data["kind"] == "answer", data
    assert data["fixes"][0] == fix and data["aspect"] == aspect


@pytest.mark.parametrize(
    ("text", "fix"),
    [
        ("Does find_unused_paramters=True slow training down?", "find_unused_parameters"),
        ("is it safe to set find_unused_paramter=False?", "disable_find_unused"),
        ("find_unsued_parameters 会影响精度吗？", "find_unused_parameters"),
    ],
)
def test_the_flag_mistyped_is_still_the_flag(text, fix):
    data = ask_json(text)
    assert data["kind"] == "answer", data
    assert data["fixes"][0] == fix


@pytest.mark.parametrize(
    ("text", "fact", "value"),
    [
        # the words around the option tell more than its name: the set-up, with its facts
        (
            "the error goes away with find_unused_parameters=True, but training is slower",
            "flag_rescues",
            True,
        ),
        # a plain word of the fix's topic tells the set-up (only a spelled-out option names it)
        (
            "my backbone turns on the checkpointing technique to save gpu memory",
            "gradient_checkpointing",
            "unknown_kind",
        ),
        # 作用在 is "applied to", not 作用 "what it does" (a question about why)
        (
            "用 use_reentrant=True 的 checkpoint 直接作用在输入上",
            "gradient_checkpointing",
            "reentrant",
        ),
        # an error told with the option: the set-up that failed, diagnosed
        (
            "with use_reentrant=False and a frozen backbone the job fails with this error",
            "gradient_checkpointing",
            "non_reentrant",
        ),
    ],
)
def test_a_statement_telling_more_than_the_fix_keeps_its_set_up(text, fact, value):
    data = ask_json(text)
    assert data["kind"] != "answer", data
    assert data["facts"].get(fact) == value, data["facts"]


WARNING_TEXT = (
    "find_unused_parameters=True was specified in DDP constructor, but did not find any unused "
    "parameters in the forward pass."
)


@pytest.mark.parametrize(
    "text",
    [
        f"Why do I get this warning: {WARNING_TEXT}",
        f"[W reducer.cpp:1360] Warning: {WARNING_TEXT} Is it safe to ignore it?",
        f"为什么会出现这个警告：{WARNING_TEXT}",
    ],
)
def test_a_question_quoting_the_warning_is_about_turning_the_flag_off(text):
    """The warning says the flag found nothing to skip: a question quoting it is about turning
    the flag back off, not about the option its words name (which would say to turn it on)."""
    data = ask_json(text)
    assert data["kind"] == "answer", data
    assert data["fixes"] == ["disable_find_unused"], data["fixes"]


@pytest.mark.parametrize(
    ("text", "family"),
    [
        (
            'My job died with "RuntimeError: Expected to have finished reduction in the prior '
            'iteration before starting a new one." How do I fix it?',
            "unfinished_reduction",
        ),
        (
            "> Parameter indices which did not receive grad for rank 1: 3 4 5",
            "unfinished_reduction",
        ),
        (
            "训练到一半报错 RuntimeError: Expected to mark a variable ready only once. 怎么解决？",
            "mark_ready_twice",
        ),
    ],
)
def test_an_error_written_into_the_prose_is_diagnosed(text, family):
    """No log line to split off (the error sits inside a sentence, or in a Markdown quote),
    yet it is the error: diagnosed, not "could not tell the cause", and the fix its own
    message names (find_unused_parameters=True) is not answered as a question."""
    result = ask(text, "--json")
    data = json.loads(result.out)
    assert result.returncode == 0, result.err
    assert data["kind"] == "diagnosis", data
    assert data["family"] == family
    assert data["findings"], data


def test_a_question_naming_the_flag_without_the_warning_is_about_the_flag():
    data = json.loads(ask("Why do I need find_unused_parameters=True?", "--json").out)
    assert data["fixes"] == ["find_unused_parameters"]


WHOLE_WARNING = (
    "[W reducer.cpp:1360] Warning: find_unused_parameters=True was specified in DDP constructor, "
    "but did not find any unused parameters in the forward pass. This flag results in an extra "
    "traversal of the autograd graph every iteration,  which can adversely affect performance."
)


@pytest.mark.parametrize(
    ("asked", "aspect"),
    [("What does it mean?", "why"), ("Is it safe to ignore it?", "safe")],
)
def test_the_words_of_a_quoted_warning_do_not_say_what_is_asked(asked, aspect):
    """ "adversely affect performance" is the warning talking: the user's own words ask."""
    data = json.loads(ask(f"I get this warning: {WHOLE_WARNING} {asked}", "--json").out)
    assert data["kind"] == "answer" and data["aspect"] == aspect, data


@pytest.mark.parametrize(
    ("text", "aspect"),
    [
        (
            "PyTorch warns that find_unused_parameters=True did not find any unused parameters. "
            "What does the flag do for me then?",
            "why",
        ),
        (
            "日志一直有 warning，说开了 find_unused_parameters=True 但没找到未使用的参数。"
            "关了能快多少？",
            "cost",
        ),
    ],
)
def test_the_warning_told_in_words_asks_about_what_it_advises(text, aspect):
    """Told, not quoted: the fix asked about is the one the warning's diagnosis gives first
    (turning the flag back off), not the flag its words name."""
    data = ask_json(text)
    assert data["kind"] == "answer", data
    assert (data["fixes"], data["aspect"]) == (["disable_find_unused"], aspect), data


@pytest.mark.parametrize(
    ("text", "fixes"),
    [
        (
            "有人建议我只用 forward 的返回值算 loss。这跟直接开 find_unused_parameters 比有啥区别？",
            {"loss_from_forward_outputs", "find_unused_parameters"},
        ),
        (
            "The tool says to run its probe on one process. Is this different from setting "
            "TORCH_DISTRIBUTED_DEBUG=INFO?",
            {"run_probe", "enable_debug_names"},
        ),
    ],
)
def test_a_comparison_pointing_back_compares_with_the_fix_named_before(text, fixes):
    """ "这跟 X 比": one side is the fix the sentence before names."""
    data = ask_json(text)
    assert data["kind"] == "answer" and data["aspect"] == "difference", data
    assert set(data["fixes"]) == fixes, data


def test_a_comparison_not_pointing_back_keeps_to_its_own_sentence():
    text = "I turned on find_unused_parameters=True. What is the difference between static_graph=True and _set_static_graph()?"
    data = ask_json(text)
    assert "find_unused_parameters" not in data.get("fixes", []), data


def test_a_question_on_keeping_the_flag_beside_the_warning_is_answered_as_asked():
    text = (
        "The warning says find_unused_parameters found no unused parameters, but I have to keep "
        "find_unused_parameters=True because the mask head only runs on some batches. Is it safe?"
    )
    data = ask_json(text)
    assert "keep_find_unused" in data.get("fixes", []), data


@pytest.mark.parametrize(
    "text",
    [
        "Which file do I set find_unused_parameters in?",
        "find_unused_parameters 在哪个文件里改？",
        "提示要传 find_unused_parameters=True，但我没找到代码中相关位置，怎么办",
    ],
)
def test_asking_where_in_the_code_the_flag_goes_is_the_framework_aspect(text):
    data = ask_json(text)
    assert data["kind"] == "answer" and data["aspect"] == "framework", data


@pytest.mark.parametrize(
    ("text", "aspect"),
    [
        ("Lightning: where do I pass find_unused_parameters?", "framework"),
        ("where would we specify static_graph=True with accelerate?", "framework"),
        ("How should one toggle find_unused_parameters for the Trainer?", "framework"),
        ("find_unused_parameters=True 要在哪里传？", "framework"),
        ("static_graph 在哪儿配置", "framework"),
        ("even with find_unused_parameters=True I get the same RuntimeError, why?", "still_fails"),
        ("static_graph=True gives me the same DDP error again", "still_fails"),
    ],
)
def test_any_asking_word_and_setting_verb_or_the_same_error_say_what_is_asked(text, aspect):
    """Written the many ways users ask it: "where do I pass", "how would we specify", 在哪里传;
    "the same RuntimeError" as "still fails"."""
    data = ask_json(text)
    assert data["kind"] == "answer" and data["aspect"] == aspect, data


def test_a_fact_read_twice_is_said_once():
    """Two phrases telling the same fact give one "I read" line, quoting the first."""
    text = (
        "训练时报错 RuntimeError: Expected to have finished reduction in the prior iteration "
        "before starting a new one. 我已经加了 find_unused_parameters=True 还是报同样的错，怎么办？"
    )
    result = ask(text)
    assert result.returncode == 0, result.err
    said = [line for line in result.out.splitlines() if line.startswith("- 已经设置了")]
    assert len(said) == 1, result.out
    assert "加了 find_unused_parameters" in said[0]


OOM_LOG = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 88, in <module>\n'
    "    loss.backward()\n"
    "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
)


@pytest.mark.parametrize(
    "text",
    [
        OOM_LOG,
        f"I train with the HF Trainer on 4 GPUs, two heads.\n\n```\n{OOM_LOG}```\n",
        f"我用 HF Trainer 在 4 张卡上训练，模型有两个头。\n\n```\n{OOM_LOG}```\n",
    ],
    ids=["log alone", "story and log", "zh story and log"],
)
def test_a_post_quoting_another_error_is_not_diagnosed_as_a_ddp_one(text):
    """The framework its prose or stack frames name is no DDP error: `ask` says the quoted
    error is none it knows, as `triage` does, instead of the usual error's diagnosis."""
    result = ask(text, "--json")
    data = json.loads(result.out)
    assert result.returncode == 1, result.out
    assert data["status"] == "no_known_error" and not data["causes"] and not data["fixes"]
    assert "torch.OutOfMemoryError: CUDA out of memory" in data["raised"]
    shown = ask(text)
    assert "diagnosis" not in shown.out and "诊断报告" not in shown.out, shown.out


def test_the_quoted_error_is_named_when_it_is_another_one():
    text = f"My job crashes, see below.\n\n```\n{OOM_LOG}```\n"
    result = ask(text)
    assert result.returncode == 1
    assert "torch.OutOfMemoryError: CUDA out of memory" in result.out.splitlines()[0]
    chinese = ask(text, "--lang", "zh")
    assert has_chinese(chinese.out.splitlines()[0]) and "torch.OutOfMemoryError" in chinese.out


@pytest.mark.parametrize(
    "text, named",
    [
        (
            "When I run train.py, the terminal reports `RuntimeError: Default process group has "
            "not been initialized, please make sure to call init_process_group.` How can I solve "
            "this problem?",
            "RuntimeError: Default process group has not been initialized, please make sure to "
            "call init_process_group.",
        ),
        (
            "训练到一半报错 torch.OutOfMemoryError: CUDA out of memory，请问怎么解决？",
            "torch.OutOfMemoryError: CUDA out of memory",
        ),
        # another error's own message, without the exception's name (an issue's title)
        (
            "Default process group has not been initialized, please make sure to call "
            "init_process_group.\n\n请问大家训练时有遇到这样的问题吗",
            "Default process group has not been initialized, please make sure to call "
            "init_process_group.",
        ),
        (
            "My run stops with: DDP expects same model across all ranks, but Rank 0 has 128 "
            "params, while rank 1 has inconsistent 0 params",
            "My run stops with: DDP expects same model across all ranks, but Rank 0 has 128 "
            "params, while rank 1 has inconsistent 0 params",
        ),
        (
            "node1:534:1763 [3] NCCL WARN Mismatched collective detected, please check your "
            "collective calls at and around rank 3",
            "node1:534:1763 [3] NCCL WARN Mismatched collective detected, please check your "
            "collective calls at and around rank 3",
        ),
    ],
    ids=["en backticks", "zh inline", "title without a name", "message without a name", "nccl"],
)
def test_an_error_a_sentence_quotes_is_named_when_it_is_another_one(text, named):
    """No log line to split off: the exception is written into the question itself. It is
    said to be none ddp-doctor knows, naming it, not answered with readings of a fix the text
    never asks about."""
    result = ask(text)
    assert result.returncode == 1, result.out
    assert named in result.out.splitlines()[0], result.out
    data = ask_json(text)
    assert data["status"] == "no_known_error" and not data.get("candidates"), data
    assert data["raised"] == named  # for scripts, as the text names it


def test_a_question_beside_another_error_is_still_answered():
    text = f"```\n{OOM_LOG}```\n\nDoes find_unused_parameters=True use more memory?"
    data = ask_json(text)
    assert data["kind"] == "answer" and data["fixes"] == ["find_unused_parameters"], data


@pytest.mark.parametrize(
    "text",
    [
        "rank 3 died of an OOM first, then ranks 0-2 print Expected to have finished reduction",
        "rank 2 先因为显存不够退出了，其他卡才报 Expected to have finished reduction",
    ],
)
def test_another_rank_that_stopped_first_told_in_words_points_at_its_own_error(text):
    """A user who says another rank died first is pointed at that rank's own error: the cause
    is among the first two, and finding that rank's error is in the report."""
    data = ask_json(text)
    assert data["kind"] == "diagnosis"
    assert "peer_exited_first" in [c["id"] for c in data["causes"]][:2]
    shown = [f["id"] for f in data["fixes"]] + [d["id"] for d in data["diagnostics"]]
    assert "read_first_rank_error" in shown
