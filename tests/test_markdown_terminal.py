"""`ask` in a terminal prints its markdown through render.print_markdown, not a markdown
parser: every word must reach the screen, marks dropped, code kept line for line."""

from __future__ import annotations

import io
import re

import pytest
import yaml
from ddp_doctor.knowledge.kb import load
from ddp_doctor.output.render import print_markdown
from ddp_doctor.reading.understand import understand
from ddp_doctor.talk import ask
from helpers import FIXTURES
from rich.console import Console

KB = load()
QUESTIONS = yaml.safe_load((FIXTURES / "sentences" / "questions.yaml").read_text("utf-8"))
ANSWERS = []
for item in QUESTIONS["questions"]:
    found = ask.build_answer(KB, understand(KB, item["text"]), item["lang"])
    if found is not None:
        ANSWERS.append((item["lang"], ask.answer_markdown(KB, found, item["lang"])))


def _screen(text: str, lang: str, width: int = 70) -> str:
    out = io.StringIO()
    print_markdown(KB, text, lang, Console(file=out, width=width, color_system=None))
    return out.getvalue()


def _words(text: str) -> list[str]:
    text = re.sub(r"^```\w*$", " ", text, flags=re.MULTILINE)  # a fence and its language
    return re.sub(r"[`*#]", " ", text).split()


@pytest.mark.parametrize(("lang", "markdown"), ANSWERS[:25])
def test_every_word_of_an_answer_reaches_the_screen_in_order(lang, markdown):
    screen = _screen(markdown, lang, width=200)  # no "wider than the terminal" note
    assert "`" not in screen and "**" not in screen
    # wrapping may split Chinese between characters: compare without any spacing
    assert "".join(_words(screen)) == "".join(_words(markdown))


def test_code_blocks_are_printed_line_for_line():
    markdown = (
        "## Fix\n\nText with `code`.\n\n```python\nx = 1  # one\nif x:\n    y = 2\n```\n- an item\n"
    )
    screen = _screen(markdown, "en", width=20)
    assert "x = 1  # one\nif x:\n    y = 2\n" in screen
    assert "Text with code." in screen
    assert "- an item" in screen


def test_there_are_answers_to_check():
    assert len(ANSWERS) >= 20


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_answers_never_show_an_unfilled_placeholder(lang):
    """`ask` fills {device_ids}, {wrap}, {module}... as reports do: it once printed
    `model{device_ids},` (a syntax error) and `{{missing}}` in an f-string."""
    names = {"module", "modules", "param_names", *KB.placeholders}
    for fix in KB.fixes.values():
        for framework in fix.snippets:
            for facts in ({}, {"framework": framework}, {"backend": "gloo"}):
                for part in ask._snippet(KB, fix, lang, framework, facts):
                    where = (fix.id, framework, facts)
                    assert "{{" not in part.code and "}}" not in part.code, where
                    assert not any("{" + name + "}" in part.code for name in names), where
                    if part.language == "python":
                        compile(part.code, "<snippet>", "exec")  # runs as printed
