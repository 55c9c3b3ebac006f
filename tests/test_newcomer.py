"""What a newcomer meets on the command line (issue 22, items 18, 19, 20, 21, 23): the
commands as a new user types them, in English and Chinese."""

from __future__ import annotations

import json
import re

import pytest
from helpers import cli

C_LOCALE = {"LANG": "C", "LC_ALL": "", "LANGUAGE": ""}
EXAMPLE = "examples/torchrun-unused-module.log"


# ---------------------------------------------------------------------------- item 18


@pytest.mark.parametrize(
    ("words", "fix"),
    [
        ("what does find_unused_parameters cost", "find_unused_parameters"),
        ("static_graph 有什么代价", "static_graph"),
    ],
)
def test_ask_takes_unquoted_words_as_the_sentence(words, fix):
    unquoted = cli("ask", *words.split(), "--json", env=C_LOCALE)
    assert unquoted.returncode == 0, unquoted.err
    quoted = cli("ask", words, "--json", env=C_LOCALE)
    assert json.loads(unquoted.out) == json.loads(quoted.out)
    assert json.loads(unquoted.out)["fixes"] == [fix]


# ---------------------------------------------------------------------------- item 23


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("written", [["--save", "x.md"], ["--answers", "x.md"], ["--save=x.md"]])
def test_an_interview_option_after_the_command_is_explained_as_before_it(lang, written):
    name = written[0].split("=")[0]
    after = cli("--lang", lang, "triage", EXAMPLE, *written)
    before = cli("--lang", lang, name, "x.md", "triage", EXAMPLE)
    assert after.returncode == before.returncode == 2
    last = after.err.strip().splitlines()[-1]
    assert last == before.err.strip().splitlines()[-1]
    assert name in last and "`triage`" in last


def test_an_unknown_option_after_the_command_is_still_refused():
    done = cli("triage", EXAMPLE, "--bogus", env=C_LOCALE)
    assert done.returncode == 2
    assert "unrecognized arguments: --bogus" in done.err


SAFE = {
    "en": ("is it safe to just set find_unused_parameters=True?", "is it safe?", "Safe"),
    "zh": ("直接设置 find_unused_parameters=True 安全吗？", "安全吗？", "安全"),
}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_safety_question_leads_with_the_answer(lang):
    question, heading, verdict = SAFE[lang]
    done = cli("ask", question, "--format", "markdown", "--lang", lang, env=C_LOCALE)
    assert done.returncode == 0, done.err
    lines = [line for line in done.out.splitlines() if line.strip()]
    # the first part is the verdict, and its first line says where the flag is safe
    assert lines[1].startswith("## ") and lines[1].endswith(heading), lines[:3]
    assert verdict in lines[2]
    assert not lines[2].lstrip("- ").startswith(("Not here", "这里不"))
    # every measured failure is still told, after the verdict
    assert "multitask_missing_loss" in done.out


# ---------------------------------------------------------------------------- item 22


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_assembled_rows_name_a_question_by_its_short_label(lang):
    """'如果选“…”，且“<the whole question>”的回答是…' reads as a translation: a row names the
    question by a few words (its `short`), never by its whole text."""
    from ddp_doctor.knowledge.kb import load

    kb = load()
    assert all(q.short is not None for q in kb.questions)
    done = cli("--lang", lang, "triage", EXAMPLE, "--json")
    rows = json.loads(done.out)["conditional_fixes"]
    joined = [row["when"]["text"] for row in rows if len(row["when"]["answers"]) > 1]
    assert joined, "the example has rows that depend on two answers"
    for text in joined:
        for question in kb.questions:
            words = max(re.split(r"\{\w+\}", question.text.get(lang)), key=len)[:12]
            assert words not in text, text
    shorts = [q.short.get(lang) for q in kb.questions]
    assert all(any(short in text for short in shorts) for text in joined)


# ---------------------------------------------------------------------------- item 20


@pytest.mark.parametrize(
    ("lang", "question"),
    [
        ("en", "how do I set this in pytorch lightning"),
        ("zh", "pytorch lightning 里这个选项怎么设置"),
    ],
)
def test_how_to_set_it_in_lightning_gets_the_setting(lang, question):
    done = cli("ask", question, "--json", "--lang", lang, env=C_LOCALE)
    assert done.returncode == 0, done.err
    data = json.loads(done.out)
    assert data["kind"] == "answer" and data["aspect"] == "framework"
    assert data["framework"] == "lightning"
    code = data["parts"][0]["code"]
    assert 'strategy="ddp_find_unused_parameters_true"' in code
    text = cli("ask", question, "--format", "markdown", "--lang", lang, env=C_LOCALE).out
    assert len(text.splitlines()) < 25  # the setting, not a whole diagnosis


# ---------------------------------------------------------------------------- item 19


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("command", ["", "triage", "ask", "questions", "run", "probe"])
def test_help_fits_80_columns_by_display_width(lang, command):
    from ddp_doctor.common.wrap import text_width

    done = cli("--lang", lang, *([command] if command else []), "--help", env={"COLUMNS": "80"})
    assert done.returncode == 0, done.err
    lines = done.out.splitlines()
    assert max(text_width(line) for line in lines) <= 80, done.out
    # usage continuation lines start under the program name, after the (wide) prefix
    usage = [line for line in lines[:6] if line.strip()]
    if len(usage) > 1 and usage[1].startswith(" "):
        prog = f"ddp-doctor {command}".strip()
        column = text_width(usage[0].split("ddp-doctor")[0]) + len(prog) + 1
        assert len(usage[1]) - len(usage[1].lstrip()) == column, usage[:2]


# ---------------------------------------------------------------------------- item 21


def test_freeze_then_unfreeze_takes_the_same_path_in_both_languages():
    """The sentence holds the direction ("then unfreeze it" / "之后再解冻"): neither language
    asks "freeze, unfreeze or both?" again, and both reach the same diagnosis."""
    said = {
        "en": "I freeze the backbone for the first 2 epochs then unfreeze it",
        "zh": "我前 2 个 epoch 冻结 backbone，之后再解冻",
    }
    seen = {}
    for lang, sentence in said.items():
        done = cli("ask", sentence, "--json", env=C_LOCALE)
        assert done.returncode == 0, done.err
        data = json.loads(done.out)
        assert data["facts"]["requires_grad_direction"] == "unfreeze", data["understood"]
        upcoming = data["next_question"]
        assert upcoming is None or upcoming["id"] != "requires_grad_direction"
        # the same reading, cause, fixes and next question (each language's sentence has its
        # own nearest examples, which may order the unlikely causes after the first apart)
        stated = {k: v for k, v in data["facts"].items() if k != "text_leans"}
        fixes = [f["id"] for f in data["fixes"]]
        seen[lang] = (stated, upcoming and upcoming["id"], data["causes"][0]["id"], fixes)
    assert seen["en"] == seen["zh"]
