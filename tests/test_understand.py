"""Free text -> facts (wizard/reading/understand.py over rules/lexicon.yaml).

Every reading in the lexicon carries its own example sentences; one generic test runs them
all. The rest checks what the reader promises: negation, several facts in one sentence,
code in prose, mixed languages, text that mentions nothing relevant, questions.
"""

from __future__ import annotations

import pytest
import yaml
from ddp_doctor.knowledge.kb import load
from ddp_doctor.reading.understand import USE_THRESHOLD, find_phrase, text_lang, understand
from helpers import ROOT

KB = load()
LEXICON = yaml.safe_load((ROOT / "rules" / "lexicon.yaml").read_text(encoding="utf-8"))


def _examples(kind: str):
    for reading in LEXICON["readings"]:
        for sentence in reading["examples"].get(kind) or []:
            yield pytest.param(reading, sentence, id=f"{reading['id']}:{sentence[:40]}")


def _holds(facts, expected) -> bool:
    return all(facts.get(key) == value for key, value in expected.items())


@pytest.mark.parametrize(("reading", "sentence"), list(_examples("positive")))
def test_positive_example_yields_the_reading(reading, sentence):
    found = understand(KB, sentence)
    assert _holds(found.facts, reading["sets"]), (sentence, dict(found.facts))


@pytest.mark.parametrize(("reading", "sentence"), list(_examples("negated")))
def test_negated_example_yields_the_negated_facts(reading, sentence):
    found = understand(KB, sentence)
    assert _holds(found.facts, reading["negated"]), (sentence, dict(found.facts))


@pytest.mark.parametrize(("reading", "sentence"), list(_examples("negative")))
def test_negative_example_does_not_yield_the_reading(reading, sentence):
    found = understand(KB, sentence)
    assert not any(r.id == reading["id"] and not r.negated for r in found.readings), (
        sentence,
        [(r.id, r.quote) for r in found.readings],
    )


def test_every_reading_has_examples_of_what_it_promises():
    for reading in LEXICON["readings"]:
        assert reading["examples"]["positive"] and reading["examples"]["negative"]
        if reading.get("negated"):
            assert reading["examples"].get("negated") is not None, reading["id"]


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("I don't call backward twice", {"backward_calls": "one"}),
        ("没有冻结任何层", {"requires_grad_changed": False}),
        ("not using checkpointing", {"gradient_checkpointing": "none"}),
        ("it is not a multi-task model", {"multitask": False}),
        ("我们没有用梯度检查点", {"gradient_checkpointing": "none"}),
        # a negation in another clause does not reach the reading
        (
            "it doesn't converge, and I freeze the backbone after 2 epochs",
            {"requires_grad_changed": True},
        ),
        ("不知道为什么，我冻结了 backbone", {"requires_grad_changed": True}),
    ],
)
def test_negation(sentence, expected):
    assert _holds(understand(KB, sentence).facts, expected), dict(understand(KB, sentence).facts)


def test_several_facts_in_one_sentence_with_code_and_where_each_was_read():
    text = (
        "With Lightning I call loss1.backward(retain_graph=True) and then loss2.backward(), "
        "and I unfreeze the encoder after 3 epochs"
    )
    found = understand(KB, text)
    assert _holds(
        found.facts,
        {
            "framework": "lightning",
            "backward_calls": "many",
            "backward_layout": "shared",
            "requires_grad_changed": True,
        },
    )
    for reading in found.used:
        assert text[reading.span[0] : reading.span[1]] == reading.quote
        assert 0 < reading.confidence <= 1


def test_mixed_language_sentence():
    found = understand(KB, "我用的是 Lightning，forward 返回了 aux_logits 但 loss 没用到")
    assert _holds(found.facts, {"framework": "lightning", "forward_unused_outputs": True})
    assert found.lang == "zh"


@pytest.mark.parametrize(
    "text",
    [
        "the weather is nice today",
        "今天天气不错",
        "",
        "   ",
        "!!!???",
        "x" * 50_000,
        "backward " * 3000,
    ],
)
def test_text_that_mentions_nothing_relevant_yields_no_facts(text):
    found = understand(KB, text)
    if "backward" in text:  # a word, repeated, is not a claim about how often it is called
        assert found.facts.get("backward_calls") in (None, "many")
        return
    assert not found.facts and not found.used


def test_a_hedge_lowers_the_confidence_below_use():
    sure = understand(KB, "I freeze the backbone")
    unsure = understand(KB, "maybe I freeze the backbone, not sure")
    assert sure.facts.get("requires_grad_changed") is True
    assert "requires_grad_changed" not in unsure.facts
    assert unsure.guesses and unsure.guesses[0].confidence < USE_THRESHOLD


@pytest.mark.parametrize(
    ("text", "fixes", "aspect"),
    [
        (
            "static_graph 和 find_unused_parameters 有什么区别？",
            ("static_graph", "find_unused_parameters"),
            "difference",
        ),
        ("what does find_unused_parameters cost?", ("find_unused_parameters",), "cost"),
        ("Lightning 里怎么设置 find_unused_parameters", ("find_unused_parameters",), "framework"),
        ("is the zero-loss trick safe?", ("zero_weight_aux_loss",), "safe"),
        (
            "why does it still fail with find_unused_parameters=True?",
            ("find_unused_parameters",),
            "still_fails",
        ),
        # questions that name what a fix does, not the fix
        ("Why would I multiply the aux loss by zero?", ("zero_weight_aux_loss",), "why"),
        ("How can I find which parameters get no gradient?", ("enable_debug_names",), "framework"),
        ("怎么知道是哪些参数没有参与 loss 计算？", ("enable_debug_names",), "framework"),
        ("删除没用的模块会有影响吗？", ("remove_unused_module",), "safe"),
        # the 把 construction puts the module between the verb's object marker and the verb;
        # 没用到 is "unused", not "did not help"; 会影响…吗 asks whether it is safe
        ("把没参与计算的分支去掉，会影响模型加载权重吗？", ("remove_unused_module",), "safe"),
        ("把用不上的 head 删了以后还会报错吗", ("remove_unused_module",), "still_fails"),
        # session 43: "removing"/"deleting" inflect; "that module" refers back to the unused one
        ("Is removing that layer safer than keeping it?", ("remove_unused_module",), "safe"),
        ("Does dropping the leftover head cost anything?", ("remove_unused_module",), "cost"),
        # "stopped computing the <two words> output"; the 把 construction with 输出
        (
            "I stopped computing the depth head output and it still fails",
            ("drop_unused_outputs",),
            "still_fails",
        ),
        ("把没人用的那个输出从 forward 里删掉，有什么代价？", ("drop_unused_outputs",), "cost"),
        # "how is A better than B" compares two fixes
        (
            "How is deleting the dead layers better than setting static_graph=True?",
            ("remove_unused_module", "static_graph"),
            "difference",
        ),
        # a dot inside code does not end the sentence: "p.grad is None", "named_parameters()"
        (
            "如果一直打印 p.grad is None 的参数，会拖慢训练吗？",
            ("print_params_without_grad",),
            "cost",
        ),
        (
            "I printed params with grad None after backward() but DDP still complains",
            ("print_params_without_grad",),
            "still_fails",
        ),
        # the two fixes said by what they do, which had no words of their own
        (
            "Why should I return the embeddings from forward instead of calling the head myself?",
            ("loss_from_forward_outputs",),
            "why",
        ),
        ("把 decoder 的调用挪进 forward 里，会变慢吗？", ("loss_from_forward_outputs",), "cost"),
        (
            "How can I tell which worker crashed first when eight logs are mixed together?",
            ("read_first_rank_error",),
            "framework",
        ),
        ("多机训练怎么看哪个 rank 最先挂的？", ("read_first_rank_error",), "framework"),
        # tracing the loss back by hand, said in words; the probe by its nickname
        (
            "Why would tracing the loss back through the model help me here?",
            ("trace_loss_graph",),
            "why",
        ),
        ("从 loss 往回查计算图，这样排查有什么用？", ("trace_loss_graph",), "why"),
        ("Is the single-process probe slow on a big model?", ("run_probe",), "cost"),
        # the framework a "still fails" statement names says where the fix went: no set-up
        (
            "flag on in `DDP(model, find_unused_parameters=True)`, still crashes at step 3",
            ("find_unused_parameters",),
            "still_fails",
        ),
        (
            "`DistributedDataParallel(net, find_unused_parameters=True)` 写上了，照样报错",
            ("find_unused_parameters",),
            "still_fails",
        ),
        # "tie A and B weights" names weight tying; the fix tied before wrapping
        (
            "Why should we tie the encoder and decoder embeddings before DDP?",
            ("tie_before_wrapping",),
            "why",
        ),
        # a comparison that names its other side asks the difference even with one fix named
        (
            "What is the difference between no_sync and just letting every backward sync?",
            ("no_sync_first_backward",),
            "difference",
        ),
        ("use_reentrant=True 跟 False 到底有啥区别？", ("checkpoint_non_reentrant",), "difference"),
        ("Which one is better for my model, static_graph?", ("static_graph",), None),
        # a fix named by what it does or by what the error says of it
        (
            "Is the option the error message suggested safe to leave on?",
            ("find_unused_parameters",),
            "safe",
        ),
        (
            "DDP looks for unused parameters every step, what does that cost?",
            ("find_unused_parameters",),
            "cost",
        ),
        (
            "How much faster is it if I set find_unused_parameters back to False?",
            ("disable_find_unused",),
            "cost",
        ),
        ("把 find_unused_parameters 改回 False 会变快吗", ("disable_find_unused",), "cost"),
        (
            "Does summing up all the task losses before backward use more memory?",
            ("sum_losses_single_backward",),
            "cost",
        ),
        ("两个 loss 合成一次反向会不会影响精度？", ("sum_losses_single_backward",), "safe"),
        ("Why is TORCH_DISTRIBUTED_DEBUG=DETAIL so slow?", ("debug_level_info",), "cost"),
        ("I can't make it work even with _set_static_graph()", ("static_graph",), "still_fails"),
        # a comparison whose other side is the same fix spelled another way
        (
            "Is calling _set_static_graph() the same thing as passing static_graph=True?",
            ("static_graph",),
            "difference",
        ),
        (
            "How do I get static_graph=True when I train with Lightning?",
            ("static_graph",),
            "framework",
        ),
        (
            "TORCH_DISTRIBUTED_DEBUG=INFO and DETAIL: what's the difference?",
            ("debug_level_info",),
            "difference",
        ),
        # two fixes named together and not compared are the fix that does both; the part named
        # first tells which of two such fixes
        (
            "We need find_unused_parameters=True plus non-reentrant checkpointing; how slow is that?",
            ("find_unused_parameters_any_checkpointing",),
            "cost",
        ),
        (
            "先把检查点换成 use_reentrant=False，再打开 find_unused_parameters，Lightning 里怎么写？",
            ("checkpoint_non_reentrant_with_flag",),
            "framework",
        ),
        (
            "If I sum the losses into one backward and keep find_unused_parameters=True, is that safe?",
            ("sum_losses_with_flag",),
            "safe",
        ),
        (
            "use_reentrant=False 和 find_unused_parameters=True 有什么区别？",
            ("checkpoint_non_reentrant", "find_unused_parameters"),
            "difference",
        ),
        # fixes named by what they do or by the tool they use
        (
            "The ddp-doctor probe found nothing unused, yet training still hits the same error. Why?",
            ("run_probe",),
            "still_fails",
        ),
        ("打印 grad 为 None 的参数这个办法靠谱吗？", ("print_params_without_grad",), "safe"),
        (
            "If I stop computing the unused aux output, does training get faster?",
            ("drop_unused_outputs",),
            "cost",
        ),
        ("顺着 loss 的 grad_fn 往回找模型参数，具体怎么做？", ("trace_loss_graph",), "framework"),
        (
            "把 TORCH_DISTRIBUTED_DEBUG 从 DETAIL 改成 INFO 会少看到什么信息？",
            ("debug_level_info",),
            "why",
        ),
        (
            "Does (loss_a + loss_b).backward() give the same gradients as before?",
            ("sum_losses_single_backward",),
            "safe",
        ),
        (
            "Can I delete the unused `proj_old` layer, and will old checkpoints still load?",
            ("remove_unused_module",),
            "safe",
        ),
        # "it" turned off is the one fix the text names, turned off; "it" alone is the fix
        (
            "I added find_unused_parameters=True last week. Can I turn it off now?",
            ("disable_find_unused",),
            "safe",
        ),
        (
            "开了 find_unused_parameters=True 之后能跑了，现在可以把它关掉吗？",
            ("disable_find_unused",),
            "safe",
        ),
        (
            "I set find_unused_parameters=True. Does it slow training down?",
            ("find_unused_parameters",),
            "cost",
        ),
        (
            "Without find_unused_parameters=True it crashes; without it, is DDP faster at all?",
            ("find_unused_parameters",),
            "cost",
        ),
        (
            "Will the gradients be exactly the same if I switch to use_reentrant=False mid-run?",
            ("checkpoint_non_reentrant",),
            "safe",
        ),
        (
            "How should I restructure my training_step so the losses get one backward?",
            ("sum_losses_single_backward",),
            "framework",
        ),
        # fixes named by what they do, not by their API spelling
        ("What does the unused-params flag actually do?", ("find_unused_parameters",), "why"),
        ("查找未使用参数的开关会拖慢训练吗？", ("find_unused_parameters",), "cost"),
        ("能把查找未使用参数的那个开关关掉吗？会不会有风险？", ("disable_find_unused",), "safe"),
        # weights tied or shared: the fix that ties them before wrapping
        (
            "Why do tied weights have to be tied before wrapping the model in DDP?",
            ("tie_before_wrapping",),
            "why",
        ),
        ("共享权重一定要在包 DDP 之前绑定吗？为什么？", ("tie_before_wrapping",), "why"),
        # the other side of a comparison before a comma, and "the two approaches"
        (
            "开 static_graph=True 跟什么都不加，区别在哪？",
            ("static_graph",),
            "difference",
        ),
        (
            "Summing the losses or keeping two backward calls under no_sync: how do the two approaches differ?",
            ("sum_losses_single_backward", "no_sync_first_backward"),
            "difference",
        ),
        (
            "Does declaring the graph static cost anything?",
            ("static_graph",),
            "cost",
        ),
        (
            "If I delete the dead `head_v1` layer, is that safe for old checkpoints?",
            ("remove_unused_module",),
            "safe",
        ),
        (
            "Where exactly should TORCH_DISTRIBUTED_DEBUG=INFO be set for a torchrun job?",
            ("enable_debug_names",),
            "framework",
        ),
        (
            "要把 TORCH_DISTRIBUTED_DEBUG 从 DETAIL 换成 INFO，应该改哪里？",
            ("debug_level_info",),
            "framework",
        ),
        (
            "Will static_graph=True change what the model learns?",
            ("static_graph",),
            "safe",
        ),
        # "this option" is the fix the text names, not the setting the error points at
        ("听说 static_graph=True 能解决这个报错，这个选项到底做了什么？", ("static_graph",), "why"),
        (
            "I read that static_graph=True helps; what does this option tell DDP?",
            ("static_graph",),
            "why",
        ),
        ("这个选项在 Lightning 里怎么设置？", ("find_unused_parameters",), "framework"),
        # putting a left-out task's loss into the total, and keeping the flag the model needs
        (
            "Will adding the forgotten depth loss into the total change my other tasks' accuracy?",
            ("include_all_task_losses",),
            "safe",
        ),
        (
            "漏加的那个任务 loss 加进总 loss 以后，训练会变慢吗？",
            ("include_all_task_losses",),
            "cost",
        ),
        (
            "把漏掉的 loss 加回去，会不会改变其他任务的训练效果？",
            ("include_all_task_losses",),
            "safe",
        ),
        (
            "We have to keep find_unused_parameters=True for the MoE layers; how slow is that?",
            ("keep_find_unused", "find_unused_parameters"),
            "cost",
        ),
        (
            "分支不是每个 step 都走，为什么还是要保留 find_unused_parameters？",
            ("keep_find_unused", "find_unused_parameters"),
            "why",
        ),
        # session 44: the unused module before its verb, `delete self.x`, "keep it on" and
        # 继续开着, "part of the total", 辅助分类器, "stopping … from being computed", grad 是
        # None 的 … 打印, 改成 forward 直接返回, 它的 probe, FUP, use_reentrant 也改成 False, 有
        # 对应的开关, and a question mark mid-text ("wrong place? we launch with torchrun")
        ("没用到的模块直接删掉，会不会影响加载旧的权重？", ("remove_unused_module",), "safe"),
        ("Is it safe to delete self.old_head from __init__?", ("remove_unused_module",), "safe"),
        (
            "我们得继续开着 find_unused_parameters，这样会慢多少？",
            ("keep_find_unused", "find_unused_parameters"),
            "cost",
        ),
        (
            "If we keep the flag on for the MoE layers, how slow is that?",
            ("keep_find_unused",),
            "cost",
        ),
        (
            "Why does DDP care whether the depth loss is part of the total?",
            ("include_all_task_losses",),
            "why",
        ),
        (
            "想让 inception 训练时不算辅助分类器，有对应的开关吗？",
            ("drop_unused_outputs",),
            "framework",
        ),
        (
            "Does stopping the aux head from being computed change accuracy?",
            ("drop_unused_outputs",),
            "safe",
        ),
        (
            "把 grad 是 None 的参数都打印出来了，还是报错，为什么？",
            ("print_params_without_grad",),
            "still_fails",
        ),
        (
            "改成 forward 直接返回特征以后还是报错，为什么？",
            ("loss_from_forward_outputs",),
            "still_fails",
        ),
        (
            "它的 probe 和 TORCH_DISTRIBUTED_DEBUG=INFO 有什么区别？",
            ("run_probe", "enable_debug_names"),
            "difference",
        ),
        ("Does FUP slow training down?", ("find_unused_parameters",), "cost"),
        (
            "开了 find_unused_parameters，又把 use_reentrant 也改成 False，会影响精度吗？",
            ("find_unused_parameters_any_checkpointing",),
            "safe",
        ),
        (
            "I set TORCH_DISTRIBUTED_DEBUG=INFO at the top of train.py but the error still lists `Parameter indices which did not receive grad for rank 0: 3 4` only. wrong place? we launch with torchrun",
            ("enable_debug_names",),
            "still_fails",
        ),
        # session 44, second round: "stop running the extra head", 不算这个输出, "deleting the
        # unused `self.x`", 没进总 loss, "are the gradients really identical", "turn it off"
        (
            "If I stop running the extra head nobody uses, is training faster?",
            ("drop_unused_outputs",),
            "cost",
        ),
        ("有人说不算这个输出就好了，为什么？", ("drop_unused_outputs",), "why"),
        (
            "Is deleting the unused `self.decoder_old` safe for loading old checkpoints?",
            ("remove_unused_module",),
            "safe",
        ),
        ("深度 loss 没进总 loss，要怎么写才能加进去？", ("include_all_task_losses",), "framework"),
        (
            "After switching to one backward, are the gradients really identical?",
            ("sum_losses_single_backward",),
            "safe",
        ),
        (
            "find_unused_parameters: how do I turn it off in fairseq?",
            ("disable_find_unused",),
            "framework",
        ),
        # "how do I turn <the option> off", 在哪删
        (
            "HF Trainer question: how do I turn find_unused_parameters off?",
            ("disable_find_unused",),
            "framework",
        ),
        ("How can we switch static_graph=True back off?", ("static_graph",), "framework"),
        ("没用到的模块应该在哪删？", ("remove_unused_module",), "framework"),
    ],
)
def test_questions_about_the_knowledge_base(text, fixes, aspect):
    found = understand(KB, text)
    assert found.intent is not None
    assert found.is_question or aspect == "still_fails"
    assert found.intent.fixes == fixes
    assert found.intent.aspect == aspect


def test_asking_how_to_set_the_flag_does_not_mean_it_is_on():
    assert "find_unused_enabled" not in understand(KB, "how do I set find_unused_parameters?").facts
    assert understand(KB, "why does it still fail with find_unused_parameters=True?").facts[
        "find_unused_enabled"
    ]


@pytest.mark.parametrize(
    ("text", "enabled"),
    [
        ("May I delete it? Otherwise I have to use find_unused_parameters=True with DDP.", None),
        ("Otherwise I would have to set find_unused_parameters=True.", None),
        ("不然就只能开 find_unused_parameters=True 了", None),
        ("I have to use find_unused_parameters=True, otherwise it crashes.", True),
        ("我开了 find_unused_parameters=True，不然会报错", True),
    ],
)
def test_what_the_user_would_do_otherwise_is_not_their_set_up(text, enabled):
    """`cues.counterfactual`: the rest of the clause after "otherwise" / "不然" says what the
    user would do if things were otherwise; said before it, the flag is set."""
    assert understand(KB, text).facts.get("find_unused_enabled") is enabled


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("我调用了两次 backward", "zh"),
        ("two backward calls", "en"),
        ("loss 没用到", "zh"),
        ("中", "en"),
    ],
)
def test_text_language(text, lang):
    assert text_lang(text) == lang


def test_phrases_match_whole_latin_words_and_ignore_spaces():
    assert find_phrase("Two losses", "two") == [(0, 3)]
    assert not find_phrase("network", "two") and not find_phrase("a no-op", "not")
    assert find_phrase("两次backward", "两次 backward") and find_phrase(
        "两次 backward", "两次 backward"
    )
    assert find_phrase("several branches", "branch") == [(8, 16)]  # plural


def test_a_lexicon_regex_passes_the_backtracking_check():
    """'re:' entries are regexes like any other in the rules: a nested repeat is refused."""
    import yaml
    from ddp_doctor.knowledge.kb import builtin_rules_dir
    from ddp_doctor.knowledge.rules_check import check_rules

    data = yaml.safe_load((builtin_rules_dir() / "lexicon.yaml").read_text(encoding="utf-8"))
    assert check_rules("lexicon", data) is None
    data["terms"][0]["match"].append("re:(a+)+b")
    problem = check_rules("lexicon", data)
    assert problem is not None and "catastrophic backtracking" in problem[1]


@pytest.mark.parametrize(
    ("text", "fact", "value"),
    [
        # a character that negates alone, inside a word that negates nothing
        ("我非常确定调用了两次 backward", "backward_calls", "many"),  # 非常: very
        ("别的模块都冻结了", "requires_grad_changed", True),  # 别的: other
        ("特别是冻结了 backbone", "requires_grad_changed", True),  # 特别: especially
        ("无论如何都冻结了 backbone", "requires_grad_changed", True),  # 无论: no matter
        ("无奈只能用多个 loss，每个任务一个", "multitask", True),  # 无奈: reluctantly
        ("不仅冻结了 backbone，还冻结了 head", "requires_grad_changed", True),  # not only
        ("I not only freeze the backbone but also the head", "requires_grad_changed", True),
        # ... and the same characters where they do negate
        ("别冻结 backbone", "requires_grad_changed", False),
        ("并非冻结了 backbone", "requires_grad_changed", False),
        ("未冻结 backbone", "requires_grad_changed", False),
        ("无需调用两次 backward", "backward_calls", "one"),
        # one affirmative wording is enough, whatever a negated mention beside it says
        ("I call backward twice without retain_graph", "backward_calls", "many"),
        ("I don't call backward twice", "backward_calls", "one"),
    ],
)
def test_negation_words_inside_other_words_negate_nothing(text, fact, value):
    assert understand(KB, text).facts.get(fact) == value


@pytest.mark.parametrize(
    ("text", "aspect"),
    [
        # "still" alone is a weak cue: a strong cue of another aspect says what is asked
        ("Does find_unused_parameters=True still slow down training?", "cost"),
        ("Is static_graph=True still safe with gradient checkpointing?", "safe"),
        ("Why do I still get the error with find_unused_parameters=True?", "still_fails"),
        ("设置了 find_unused_parameters=True 为什么还是报错？", "still_fails"),
        # "affect training" names no aspect when "speed" does
        ("How will find_unused_parameters affect the training speed?", "cost"),
        ("Will find_unused_parameters=True affect training?", "safe"),
    ],
)
def test_a_strong_aspect_cue_outweighs_a_weak_one(text, aspect):
    found = understand(KB, text)
    assert found.intent is not None
    assert found.intent.aspect == aspect


def test_a_statement_that_a_fix_still_fails_is_answered_as_a_question():
    said = understand(KB, "I set find_unused_parameters=True but I still get the same error.")
    assert not said.is_question
    assert said.intent is not None and said.intent.fixes == ("find_unused_parameters",)
    assert said.intent.aspect == "still_fails"
    # naming fixes in a description is not asking about them ("没有用" is "did not use" here)
    described = understand(KB, "我没有冻结任何层，也没有用梯度检查点")
    assert described.intent is None
    # ... nor is a description that tells the set-up besides: it gets the diagnosis
    told = understand(KB, "I call backward twice with model.no_sync() and still get the error")
    assert told.intent is None and told.facts.get("backward_calls") == "many"


@pytest.mark.parametrize(
    ("text", "fix", "aspect"),
    [
        # a remark about a fix with nothing else told asks about it, whatever the aspect
        (
            "Adding find_unused_parameters=True made my training noticeably slower.",
            "find_unused_parameters",
            "cost",
        ),
        (
            "Turning on static_graph=True might hide a bug in my model, I worry.",
            "static_graph",
            "safe",
        ),
        (
            "config 里已经写了 find_unused_parameters=True，多卡训练照样停在这个错误上",
            "find_unused_parameters",
            "still_fails",
        ),
    ],
)
def test_a_statement_about_a_fix_with_an_aspect_cue_is_answered(text, fix, aspect):
    said = understand(KB, text)
    assert not said.is_question
    assert said.intent is not None and said.intent.fixes == (fix,)
    assert said.intent.aspect == aspect


def test_a_model_name_and_a_proposal_are_not_read_as_cost_or_set_up():
    # "Faster R-CNN" names a detector, not a speed
    described = understand(
        KB, "Training Faster R-CNN with find_unused_parameters=True gives this error"
    )
    assert described.intent is None
    # "we should use X" proposes X: it is not the user's set-up
    proposed = understand(KB, "We should use model.no_sync() on the accumulation steps.")
    assert "no_sync_enabled" not in proposed.facts
    used = understand(KB, "We use model.no_sync() on the accumulation steps.")
    assert used.facts.get("no_sync_enabled") is True


def test_a_statement_that_an_error_happened_with_a_fix_named_is_no_question():
    # the error's own advice quoted in a report of what happened: a description to diagnose
    said = understand(KB, "多卡训练时出现 Please set find_unused_parameters=True 的错误")
    assert said.reports_error and said.intent is None
    # nothing named: no report of that kind (`ask` says it could not tell the cause)
    assert not understand(KB, "I get an error").reports_error
    # asked, it is a question
    asked = understand(KB, "Why do I get an error with find_unused_parameters=True?")
    assert not asked.reports_error and asked.intent is not None


@pytest.mark.parametrize(
    ("sentence", "reading"),
    [
        ("某个模块没有被用到", "module_not_called"),
        ("这个 head 的参数没有被使用", "module_not_called"),
        ("编码器没有用到", "module_not_called"),
        ("backbone is never called in forward", "module_not_called"),
        ("解码器里有一个分类器没被调用", "module_not_called"),
        ("加了 find_unused_parameters 之后跑通了", "fup_works"),
        ("with find_unused_parameters=True it works now", "fup_works"),
        ("个别 rank 跳过了 decoder", "branch_ranks"),
        ("one of the ranks skips the decoder", "branch_ranks"),
        ("某块卡上这个分支没走", "branch_ranks"),
        ("梯度回传两次", "backward_many"),
        ("每个 step 做了两次 bp", "backward_many"),
        ("启用 find_unused_parameters 之后报错", "fup_set"),
        ("配置了 find_unused_parameters，还是报错", "fup_set"),
        ("移除了 find_unused_parameters=True 之后又报错", "fup_turned_off"),
        ("when an image has no boxes the mask head is skipped", "branch_steps"),
        ("有的 batch 是空 batch", "branch_steps"),
        ("某张卡上的图片没有框，这个分支就不走了", "branch_ranks"),
        ("降级到 1.13 就好了", "worked_before"),
        ("downgrading lightning fixed it", "worked_before"),
        ("原来可以正常训练", "worked_before"),
        ("训练到一半冻结了 encoder", "frozen_later"),
        ("包 DDP 以前冻结了 backbone", "frozen_before"),
        ("在 DDP 包装前冻结了 backbone", "frozen_before"),
        ("有两个 head，一个分类一个回归", "multitask"),
        ("两个损失相加后 backward", "multitask"),
        ("开了 checkpoint 省显存", "checkpointing"),
        ("仅当 loss 大于 0 时才 backward", "branch_steps"),
        ("这个分支没有进入计算图", "branch_steps"),
        ("forward 里有控制流，每个 step 不一样", "branch_steps"),
        ("正向传播两次", "forwards_many"),
    ],
)
def test_what_one_language_says_the_other_says_too(sentence, reading):
    """English and Chinese name the same things (a parity audit of the lexicon, 2026-12-07):
    the 被-passive and 从未 for a module never called, 跑通了 / "works now" for the flag rescuing
    the job, one rank (个别 rank, 某块卡) for a branch on ranks, 梯度回传 and bp for backward,
    a freeze before or during training, an empty batch skipping a head."""
    found = understand(KB, sentence)
    assert reading in [r.id for r in found.readings if not r.negated], (
        sentence,
        [(r.id, r.negated) for r in found.readings],
    )


@pytest.mark.parametrize(
    ("text", "fact", "value"),
    [
        # the wrapping comes after the freeze: the order the fix asks for
        ("I freeze the backbone, then wrap the model in DDP", "requires_grad_changed", False),
        ("I wrap the model in DDP and then freeze the backbone", "requires_grad_changed", True),
        # "you can see" shows what was done; it advises nothing
        ("you can see I set find_unused_parameters=True", "find_unused_enabled", True),
    ],
)
def test_who_does_what_and_in_which_order(text, fact, value):
    assert understand(KB, text).facts.get(fact) == value
