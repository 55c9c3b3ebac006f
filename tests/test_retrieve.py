"""The second reader of `ddp-doctor ask` (rules/examples.yaml, wizard/reading/retrieve.py), "did you
mean" choices, and posts: a quoted log read as a paste, several questions answered each."""

from __future__ import annotations

import json

import pytest
import yaml
from ddp_doctor.knowledge.kb import load
from ddp_doctor.reading import retrieve
from ddp_doctor.reading.post import split_post
from helpers import ROOT, cli, script_module

KB = load()
EXAMPLES = yaml.safe_load((ROOT / "rules" / "examples.yaml").read_text(encoding="utf-8"))
CORPUS = ROOT / "tests" / "fixtures" / "sentences"
C_LOCALE = {"LANG": "C", "LC_ALL": "", "LANGUAGE": ""}


def ask(*args: str, env: dict | None = None):
    return cli("ask", *args, env={**C_LOCALE, **(env or {})})


def _corpus(split: str) -> list[str]:
    items = []
    for name, key in (("sentences.yaml", "sentences"), ("questions.yaml", "questions")):
        data = yaml.safe_load((CORPUS / name).read_text(encoding="utf-8"))[key]
        items += [item["text"] for item in data if item["split"] == split]
    return items


def _example_texts() -> list[str]:
    return [text for text, _ in retrieve.examples_of(EXAMPLES)]


def test_no_held_out_item_is_among_the_examples():
    """The held-out halves measure text the reader has not seen: none may be an example; and
    no phrasing written for the examples may be part of one or hold one whole (case and
    spacing aside). A `dev` item is an example as written, whatever it quotes."""

    def norm(text):
        return " ".join(text.lower().split())

    dev = set(map(norm, _corpus("dev")))
    examples = [norm(t) for t in _example_texts()]
    written = [e for e in examples if e not in dev]
    for held_out in map(norm, _corpus("held_out")):
        assert held_out not in examples, held_out
        for example in written:
            assert held_out not in example and example not in held_out, held_out


def test_every_dev_item_is_an_example():
    examples = set(_example_texts())
    missing = [text for text in _corpus("dev") if text not in examples]
    assert not missing


def test_the_calibration_answers_no_dev_description_as_a_question():
    """A description must be diagnosed, never answered: the shipped calibration answers no
    `dev` description as a question (each measured with its own copy left out), not even with
    a fix threshold lowered by the fit's guard (bench/text_accuracy.py `fit`, a hard
    constraint there)."""
    bench = _bench()
    sentences, _ = bench.load_corpus()
    dev = [s for s in sentences if s["split"] == "dev"]
    prepared = bench.prepare(KB, dev, [])
    calibration = retrieve.index_for(KB)[1]
    for lowered in (None, "fix_alone", "fix_statement"):
        cal = dict(calibration)
        if lowered is not None:
            cal[lowered] -= bench.GUARD
        got = bench.measure_both(KB, dev, [], cal, prepared)
        answered = sum(got[("sentences", lang, "dev")]["hijacked"] for lang in ("en", "zh"))
        assert answered == 0, (lowered, answered)


def _bench():
    return script_module("bench/text_accuracy.py")


def test_the_weight_of_a_descriptions_nearest_examples_is_the_one_fitted_on_dev():
    """`cause_lean` and `cause_floor` are measured, not chosen: the values under which the `dev`
    descriptions' settled causes are likeliest and the `dev` sentences that tell nothing move
    the ranking least (bench/text_accuracy.py `fit_cause_lean`, each description with its own
    copy left out). A change of the examples, the lexicon or the causes that moves the fit
    fails here until the calibration is fitted again."""
    bench = _bench()
    sentences, _ = bench.load_corpus()
    calibration = EXAMPLES["calibration"]
    fitted = bench.fit_cause_lean(KB, sentences)
    assert (calibration["cause_lean"], calibration["cause_floor"]) == fitted


@pytest.mark.parametrize(
    "greeting",
    [
        "Hello everyone, thanks in advance for any help. Below is the log of my run.",
        "大家好，先谢谢了，下面是日志。",
    ],
)
def test_a_greeting_around_a_pasted_log_leaves_the_causes_as_the_log_ranks_them(greeting):
    """Words that tell nothing share n-grams with every cause's examples; under the fitted
    floor they lean toward none: `ask` ranks the causes as `triage` does for the log alone."""
    log = (ROOT / "tests/fixtures/real/unused_module__nodebug__spawn.txt").read_text()
    alone = json.loads(cli("triage", "--json", "-", input=log, env=C_LOCALE).out)
    post = json.loads(ask(f"{greeting}\n\n```\n{log}\n```", "--json").out)
    assert post["kind"] == "diagnosis"
    ranked = [[(c["id"], round(c["score"], 3)) for c in d["causes"]] for d in (alone, post)]
    assert ranked[0] == ranked[1]


def test_a_description_is_read_by_its_nearest_examples_and_a_paste_is_not():
    """`ask` ranks a description's causes with the examples' leans (`text_leans` among the
    facts, the settled reading's facts kept); `triage` never reads the examples."""
    data = json.loads(ask("I use layerdrop in my wav2vec2 model", "--json").out)
    assert data["kind"] == "diagnosis"
    assert data["facts"]["conditional_modules"] == "steps"
    leans = dict(data["facts"]["text_leans"])
    assert max(leans, key=leans.get) == "conditional_branch" == data["causes"][0]["id"]
    paste = ROOT / "tests" / "fixtures" / "versions" / "torch_1_10_flag_on.txt"
    assert "text_leans" not in json.loads(cli("triage", str(paste), "--json").out)["facts"]


def test_every_fix_cause_and_family_has_examples_in_both_languages():
    by_kind: dict[str, set] = {"questions": set(), "causes": set(), "families": set()}
    for section, key in (("questions", "fix"), ("causes", "cause"), ("families", "family")):
        for entry in EXAMPLES[section]:
            assert entry["en"] and entry["zh"], entry
            by_kind[section].add(entry[key])
    assert by_kind["questions"] == set(KB.fixes)
    assert by_kind["causes"] == {c.id for c in KB.causes}
    assert by_kind["families"] == {f.id for f in KB.families}
    assert {e["aspect"] for e in EXAMPLES["aspects"]} == set(retrieve.ASPECTS)


def test_the_nearest_examples_find_a_question_the_lexicon_has_no_words_for():
    """No fix name, no lexicon cue: "the point of no_sync" is read from its examples."""
    data = json.loads(ask("what is the point of no_sync", "--json").out)
    assert data["kind"] == "answer"
    assert data["fixes"] == ["no_sync_first_backward"] and data["aspect"] == "why"


@pytest.mark.parametrize(
    "text",
    ["I call backward twice per step", "在 __init__ 里定义了一个模块，但是 forward 里没有用到它"],
)
def test_a_description_is_still_diagnosed(text):
    assert json.loads(ask(text, "--json").out)["kind"] == "diagnosis"


def test_an_unclear_question_offers_the_closest_readings():
    """ "Does it slow down training?" names no option: ask offers choices, not an answer."""
    done = ask("does it slow down training?", "--json")
    data = json.loads(done.out)
    assert data["status"] == "not_understood" and done.returncode == 1
    offered = [(c["fix"], c["aspect"]) for c in data["candidates"]]
    assert 2 <= len(offered) <= 3
    assert ("find_unused_parameters", "cost") in offered
    assert all(c["label"] for c in data["candidates"])
    text = ask("does it slow down training?", "--format", "markdown").out
    assert "Not sure which you mean" in text and "1. " in text and "2. " in text


def test_a_clear_question_offers_no_choices():
    data = json.loads(ask("what does find_unused_parameters cost?", "--json").out)
    assert data["kind"] == "answer" and data["candidates"] == []


def test_a_chinese_unclear_question_offers_chinese_choices():
    data = json.loads(ask("请问 broadcast_buffers 设成 False 有什么用", "--json").out)
    assert data["fixes"] == ["broadcast_buffers_false"]
    for candidate in data["candidates"]:
        assert any("\u4e00" <= ch <= "\u9fff" for ch in candidate["label"])


# ---------------------------------------------------------------------------- posts


def test_a_post_is_split_into_sentences_and_the_log_it_quotes():
    post = split_post(
        "I train a detector with DDP. It crashes:\n"
        '```\nTraceback (most recent call last):\n  File "train.py", line 3\n```\n'
        "RuntimeError: Expected to have finished reduction in the prior iteration.\n"
        "This error indicates that your module has parameters that were not used.\n\n"
        "1. Is find_unused_parameters=True safe?\n2. 会变慢吗？"
    )
    assert post.sentences == (
        "I train a detector with DDP.",
        "It crashes:",
        "Is find_unused_parameters=True safe?",
        "会变慢吗？",
    )
    assert "Traceback" in post.log and "were not used" in post.log
    assert "I train" not in post.log


def test_the_error_quoted_in_a_post_is_diagnosed():
    log = (ROOT / "tests/fixtures/real/checkpoint_reentrant__info__spawn.txt").read_text()
    post = f"My job dies like this:\n\n```\n{log}\n```\n\nWhat should I change?"
    data = json.loads(ask(post, "--json").out)
    assert data["kind"] == "diagnosis"
    assert data["family"] == "mark_ready_twice"  # the quoted error, not the usual one


def test_several_questions_get_several_answers():
    post = (
        "I use DDP.\n1. Does find_unused_parameters=True slow training down?\n"
        "2. How do I set static_graph in Lightning?"
    )
    data = json.loads(ask(post, "--json").out)
    assert data["kind"] == "answers"
    got = [(a["fixes"], a["aspect"]) for a in data["answers"]]
    assert got == [(["find_unused_parameters"], "cost"), (["static_graph"], "framework")]
    text = ask(post, "--format", "markdown").out
    assert "Question 1" in text and "Question 2" in text


def test_a_question_after_one_naming_a_fix_asks_about_that_fix():
    """ "Where do I set it?" after a question about the flag asks where to set the flag: two
    answers, the second for the framework the question names."""
    post = (
        "I use DDP on 4 GPUs. 1. Will find_unused_parameters=True slow down my training a lot? "
        "2. Where do I set it if I use the HF Trainer?"
    )
    data = json.loads(ask(post, "--json").out)
    assert data["kind"] == "answers"
    got = [(a["fixes"], a["aspect"], a["framework"]) for a in data["answers"]]
    assert got == [
        (["find_unused_parameters"], "cost", None),
        (["find_unused_parameters"], "framework", "hf_trainer"),
    ]
    assert "ddp_find_unused_parameters" in data["answers"][1]["parts"][0]["code"]


QUOTED = (
    "[rank1]: RuntimeError: Expected to have finished reduction in the prior iteration before "
    "starting a new one. This error indicates that your module has parameters that were not used "
    "in producing loss. You can enable unused parameter detection by passing the keyword argument "
    "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by\n"
    "[rank1]: making sure all `forward` function outputs participate in calculating loss."
)


def test_questions_beside_a_quoted_error_are_answered_after_its_diagnosis():
    """A post quoting the error and asking about the fix it suggests gets both: the diagnosis
    of the error, and each question answered. The flag named in a question is not read as set
    (the error itself says it is off)."""
    post = (
        f"Training Swin with DDP on 4 GPUs died with:\n\n{QUOTED}\n\n"
        "I have two questions:\n1. Will find_unused_parameters=True slow down my training a lot?"
        "\n2. Where do I set it if I use the HF Trainer?\nThanks!"
    )
    data = json.loads(ask(post, "--json").out)
    assert data["kind"] == "diagnosis" and data["family"] == "unfinished_reduction"
    assert data["facts"].get("find_unused_enabled") is not True
    assert data["framework"] == "hf_trainer"
    got = [(a["question"], a["fixes"], a["aspect"]) for a in data["answers"]]
    assert got == [
        (
            "Will find_unused_parameters=True slow down my training a lot?",
            ["find_unused_parameters"],
            "cost",
        ),
        ("Where do I set it if I use the HF Trainer?", ["find_unused_parameters"], "framework"),
    ]
    text = ask(post, "--format", "markdown").out
    diagnosis = text.index("# ddp-doctor diagnosis")
    first = text.index("Will find_unused_parameters=True slow down my training a lot?", diagnosis)
    assert diagnosis < first < text.index("Where do I set it if I use the HF Trainer?", first)


def test_chinese_questions_beside_a_quoted_error_are_answered_in_chinese():
    post = (
        f"{QUOTED}\n\n加上 find_unused_parameters=True 会让训练变慢吗？在 Lightning 里在哪设置它？"
    )
    data = json.loads(ask(post, "--json").out)
    assert data["kind"] == "diagnosis" and data["lang"] == "zh"
    got = [(a["fixes"], a["aspect"], a["framework"]) for a in data["answers"]]
    assert got == [
        (["find_unused_parameters"], "cost", None),
        (["find_unused_parameters"], "framework", "lightning"),
    ]
    text = ask(post, "--format", "markdown").out
    assert "你还问了" in text and "在 Lightning 里在哪设置它？" in text


def test_an_issue_templates_headings_are_no_questions():
    """ "### What version are you seeing the problem on?" is the template's, not the user's: it
    is neither answered nor taken as going on about the fix asked before it."""
    post = split_post(
        "Is static_graph=True faster?\n\n### Environment\n\n### What version?\n\nv2.2"
    )
    assert post.sentences == ("Is static_graph=True faster?", "v2.2")
    issue = (
        f"Does static_graph=True make training faster?\n\n### Error messages and logs\n\n"
        f"```\n{QUOTED}\n```\n\nIt fails on the second step.\n\n"
        "### What version are you seeing the problem on?\n\nv2.2"
    )
    data = json.loads(ask(issue, "--json").out)
    assert data["kind"] == "diagnosis"
    assert [(a["fixes"], a["aspect"]) for a in data["answers"]] == [(["static_graph"], "cost")]


def test_a_chinese_post_tells_its_story_and_asks_beside_the_error():
    """The story ("the aux head is used only in the first 10 epochs": a branch on some steps)
    is diagnosed, the question about the flag answered, and "any better way?", which says
    nothing of what it asks about the flag, is left to the diagnosis."""
    post = (
        f"多卡训练的时候报了下面这个错：\n\n{QUOTED}\n\n"
        "我的模型有一个辅助分类头 aux_head，只在训练前 10 个 epoch 用到。\n请问：\n"
        "1. 直接加 find_unused_parameters=True 可以吗？会不会影响精度？\n2. 有没有别的更好的办法？"
    )
    data = json.loads(ask(post, "--json").out)
    assert data["kind"] == "diagnosis" and data["lang"] == "zh"
    assert data["causes"][0]["id"] == "conditional_branch"
    got = [(a["question"], a["fixes"], a["aspect"]) for a in data["answers"]]
    assert got == [
        ("直接加 find_unused_parameters=True 可以吗？", ["find_unused_parameters"], "safe")
    ]


def test_a_question_about_the_quoted_error_itself_gets_the_diagnosis_alone():
    data = json.loads(ask(f"{QUOTED}\n\nHow do I fix this? Any idea?", "--json").out)
    assert data["kind"] == "diagnosis" and data["answers"] == []


def test_a_posts_question_is_answered_apart_from_its_story():
    """The story after (or before) a question names other fixes and tells facts: the question
    is read alone ("what does it cost?" about the flag it names), the story's facts kept."""
    post = (
        "What does find_unused_parameters=True cost? I freeze the backbone with "
        "requires_grad=False after wrapping the model in DDP"
    )
    data = json.loads(ask(post, "--json").out)
    assert data["kind"] == "answer"
    assert (data["fixes"], data["aspect"]) == (["find_unused_parameters"], "cost")
    assert data["candidates"] == []
    told = "I use PyTorch Lightning with two optimizers. How do I set find_unused_parameters?"
    data = json.loads(ask(told, "--json").out)
    assert (data["fixes"], data["aspect"], data["framework"]) == (
        ["find_unused_parameters"],
        "framework",
        "lightning",
    )


def test_the_questions_after_the_one_naming_a_fix_go_on_asking_about_it():
    from ddp_doctor.talk.readers import asked_sentence, read_post

    post, asking = read_post(KB, "Can I turn off static_graph? How much faster would it be? Thanks")
    assert asked_sentence(KB, post, asking) == (
        "Can I turn off static_graph? How much faster would it be?"
    )
    post, asking = read_post(KB, "I use DDP. Is static_graph=True safe? What does no_sync do?")
    assert asked_sentence(KB, post, asking) == "Is static_graph=True safe?"
    assert asked_sentence(KB, *read_post(KB, "Is static_graph=True safe?")) is None


def test_a_post_repeating_one_question_is_read_within_the_sentences_looked_at():
    """A pasted post that repeats its question 2,000 times is read as the first sentences
    `ask` looks at, not as every copy (which took seconds: each copy was read again)."""
    from ddp_doctor.talk.readers import MAX_SENTENCES, asked_sentence, read_post

    question = "Does static_graph=True make training faster?"
    asked = asked_sentence(KB, *read_post(KB, " ".join([question] * 2000)))
    assert asked is not None and asked.startswith(question)
    assert asked.count(question) <= MAX_SENTENCES


def test_a_place_left_among_the_choices_goes_to_the_nearest_reading():
    """A named fix with an unclear aspect: its two likeliest aspects, then the nearest
    (fix, aspect) reading of the examples as a third choice."""
    from ddp_doctor.talk.readers import read_question

    offered = [
        (c.fix, c.aspect) for c in read_question(KB, "I wonder about static_graph").candidates
    ]
    assert len(offered) == 3 and len(set(offered)) == 3
    assert offered[0][0] == "static_graph"


def test_a_post_of_a_thousand_questions_gets_a_few_answers():
    """A pasted wall of questions is a post, not a batch job: the first ones are answered
    (at most five), in one JSON document."""
    asked = [
        "Is find_unused_parameters=True safe?",
        "Does static_graph=True cost much?",
        "How do I set broadcast_buffers=False in Lightning?",
        "What does use_reentrant=False do?",
        "Why multiply the unused output by zero?",
        "What does model.no_sync() do?",
        "Why sum the losses and call backward once?",
    ]
    post = " ".join(asked * 150)  # a thousand questions (one argument holds at most 128 KB)
    data = json.loads(ask(post, "--json").out)
    assert data["kind"] == "answers"
    assert 2 <= len(data["answers"]) <= 5
    assert [a["question"] for a in data["answers"]] == asked[: len(data["answers"])]


# ---------------------------------------------------------------------------- rules


def test_a_users_example_naming_an_unknown_fix_is_a_one_line_error(tmp_path):
    (tmp_path / "examples.yaml").write_text(
        "questions:\n  - fix: no_such_fix\n    aspect: why\n    en: [a]\n    zh: [甲]\n",
        encoding="utf-8",
    )
    done = ask("what does find_unused_parameters cost?", "--rules", str(tmp_path))
    assert done.returncode != 0
    assert "no_such_fix" in done.err and "Traceback" not in done.err
    assert len(done.err.strip().splitlines()) == 1


def test_a_broken_index_cache_is_rebuilt(tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    first = json.loads(ask("what is the point of no_sync", "--json", env=env).out)
    cached = list((tmp_path / "ddp-doctor").glob("examples-*.json"))
    assert len(cached) == 1
    cached[0].write_text('{"format": 2, "size": 2, "digest": "x"}\n{}', encoding="utf-8")
    again = json.loads(ask("what is the point of no_sync", "--json", env=env).out)
    assert again["fixes"] == first["fixes"] == ["no_sync_first_backward"]


# ---------------------------------------------------------------------------- the session


def test_the_session_offers_the_readings_and_one_key_picks_one(tmp_path, monkeypatch):
    """A follow-up that names no option: the session lists the readings; pressing `2` (no
    Enter) answers the second one."""
    pytest.importorskip("questionary")
    import io
    import re

    from ddp_doctor.talk.readers import read_question
    from ddp_doctor.talk.session import run_session
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput
    from rich.console import Console

    monkeypatch.chdir(tmp_path)
    question = "does it slow down training?"
    offered = read_question(KB, question).candidates
    assert len(offered) >= 2
    second = KB.fixes[offered[1].fix]
    # nothing after the `2`: were Enter needed, the input would end inside the choice
    # each question answered with its first option (↓ then Enter: nothing is pre-selected)
    first = "\x1b[B\r"
    # Enter keeps the reading the fix rests on ("backward is called more than once")
    keys = (
        "\rI call backward twice per step\r" + first + first + "\r" + "nn" + question + "\r" + "2"
    )
    out = io.StringIO()
    console = Console(file=out, width=200, highlight=False, color_system=None)
    with create_pipe_input() as pipe:
        pipe.send_text(keys)
        pipe.close()
        code = run_session(
            KB, "en", console=console, prompt_input=pipe, prompt_output=DummyOutput()
        )
    screen = re.sub(r"\s+", " ", out.getvalue())
    assert code == 0
    after = screen.split("Not sure which you mean", 1)[1]
    assert second.title.en.replace("`", "") in after.replace("`", "")
    assert "Traceback" not in screen


def test_no_fresh_batch_item_is_an_example_or_a_lexicon_entry():
    """A fresh batch (tests/fixtures/sentences/fresh_*.yaml) is measured as text nobody has seen,
    `dev` half included: none of its items may become an example or a lexicon phrase."""

    def norm(text):
        return " ".join(text.lower().split())

    examples = {norm(t) for t in _example_texts()}
    lexicon = norm((ROOT / "rules" / "lexicon.yaml").read_text(encoding="utf-8"))
    for path in CORPUS.glob("fresh_*.yaml"):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for item in (data.get("questions") or []) + (data.get("sentences") or []):
            assert norm(item["text"]) not in examples, item["text"]
            assert norm(item["text"]) not in lexicon, item["text"]


@pytest.mark.parametrize(
    "line",
    [
        "~/envs/mm/lib/python3.7/site-packages/torch/distributed/distributed_c10d.py in _get_default_group()",
        "--> 358         raise RuntimeError(",
        "packages/torch/utils/checkpoint.py:429: UserWarning: torch.utils.checkpoint: please pass",
        "> [rank0]: RuntimeError: Expected to have finished reduction in the prior iteration",
    ],
    ids=["jupyter frame", "jupyter arrow", "warning with a cut path", "markdown quote"],
)
def test_a_line_a_program_printed_is_log_not_prose(line):
    post = split_post(f"{line}\n\nThe run stops here.")
    assert post.log == line and post.sentences == ("The run stops here.",)


def test_a_post_names_the_exception_its_log_raised():
    post = split_post("It breaks:\n[rank0]: torch.OutOfMemoryError: CUDA out of memory\nHelp?")
    assert post.raised == "[rank0]: torch.OutOfMemoryError: CUDA out of memory"
    assert split_post("Training is slow with find_unused_parameters=True.").raised is None
    quoted = split_post('It says "ValueError: expected 4D input (got 3D)". Any idea?')
    assert quoted.raised == "ValueError: expected 4D input (got 3D)"
    assert split_post("RuntimeError when I wrap two models in DDP").raised is None
    assert split_post("Error: it broke again, why?").raised is None


def test_a_quoted_python_prompt_and_quoted_prose_keep_their_kind():
    assert split_post(">>> model(x)\n\nIt fails.").log == ">>> model(x)"
    post = split_post("> Did you set find_unused_parameters?\n\nYes, it still fails.")
    assert post.log == "" and len(post.sentences) == 2


def test_a_title_naming_an_exception_is_prose():
    """ "RuntimeError when ..." is a person's title; "RuntimeError: ..." is what a program printed."""
    title = split_post("RuntimeError when I wrap two models in DDP")
    assert title.log == "" and title.sentences == ("RuntimeError when I wrap two models in DDP",)
    assert split_post("RuntimeError: Expected to have finished reduction").sentences == ()
