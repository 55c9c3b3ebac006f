"""The interview's short report on a screen it does not fit: its top has scrolled away when the
prompt comes, so the headline, the most likely cause and the fix are said again right above it
(issue 22, item 16)."""

from __future__ import annotations

import io
import re

import pytest
from ddp_doctor.knowledge.kb import load
from helpers import ROOT

KB = load()
DOWN_ENTER = "\x1b[B\r"  # the first option (nothing is pointed at until the user moves)


def screen(lang: str, height: int) -> str:
    pytest.importorskip("questionary")
    from ddp_doctor.talk.session import run_session
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput
    from rich.console import Console

    out = io.StringIO()
    console = Console(file=out, width=80, height=height, highlight=False, color_system=None)
    # aux_head "is never called" (the first option), the framework (the first), no full report,
    # no save, Enter ends the follow-ups
    keys = DOWN_ENTER + DOWN_ENTER + "n" + "n" + "\r"
    with create_pipe_input() as pipe:
        pipe.send_text(keys)
        pipe.close()
        code = run_session(
            KB,
            lang,
            str(ROOT / "examples" / "torchrun-unused-module.log"),
            console=console,
            prompt_input=pipe,
            prompt_output=DummyOutput(),
        )
    assert code == 0, out.getvalue()
    return out.getvalue()


@pytest.mark.parametrize(
    "lang, marker, headline, fix",
    [
        ("en", "↑ In short:", "Parameters that got no gradient", "Fix:"),
        ("zh", "↑ 简单说：", "有参数没有拿到梯度", "修复："),
    ],
)
def test_a_report_taller_than_the_screen_is_summed_up_above_the_prompt(lang, marker, headline, fix):
    text = screen(lang, height=24)
    assert marker in text
    recap = re.sub(r"\s+", " ", text.split(marker, 1)[1].split("\n\n", 1)[0])
    assert headline in recap and fix in recap
    # the report itself came first, whole: the recap repeats, it does not replace
    assert text.index(headline) < text.index(marker)


def test_a_report_that_fits_is_not_repeated():
    assert "↑ In short:" not in screen("en", height=400)
