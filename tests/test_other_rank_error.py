"""A rank that failed first: its own error is shown beside the one it caused.

The capture is a real torchrun job (torch 2.13, gloo, 2 ranks, `--tee 3`): rank 1 raised a
ValueError while rank 0 waited for it in the gradient all-reduce and then failed with
"Connection closed by peer" (tests/ddp/test_peer_exit.py runs that job live).
"""

from __future__ import annotations

import io

import pytest
from ddp_doctor.knowledge.kb import load
from ddp_doctor.output.render import build_report, print_rich, to_markdown
from ddp_doctor.reading.triage import triage_text
from ddp_doctor.reasoning import engine
from helpers import FIXTURES
from rich.console import Console

KB = load()
CAPTURE = FIXTURES / "captured" / "peer_exit__torchrun_tee.txt"
NAMED = (
    "RuntimeError: Expected to have finished reduction in the prior iteration before starting "
    "a new one. This error indicates that your module has parameters that were not used in "
    "producing loss.\n"
)


def _report(text: str, lang: str):
    result = triage_text(KB, text)
    return result, build_report(KB, engine.diagnose(KB, result), lang)


def _short_rich(report) -> str:
    out = io.StringIO()
    print_rich(KB, report, Console(file=out, width=100, color_system=None, highlight=False))
    return out.getvalue()


def test_the_first_error_of_the_rank_that_exited_is_found():
    result = triage_text(KB, CAPTURE.read_text(encoding="utf-8"))
    (finding,) = result.findings
    assert finding.family == "collective_timeout" and finding.ranks == (0,)
    first = finding.other_rank_error
    assert (first.rank, first.line) == (1, 8)
    assert first.text == "ValueError: bad sample in batch 1: image has 4 channels"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("[rank0]: ValueError: x\n[rank0]: " + NAMED, "the same rank's own lines"),
        ("ValueError: x\n" + NAMED, "no rank prefixes: ranks cannot be told apart"),
        ("[rank1]: " + NAMED + "[rank0]: " + NAMED, "another rank's DDP error is a finding"),
        ("[rank1]: ValueError is raised when\n[rank0]: " + NAMED, "prose, not an error line"),
    ],
)
def test_nothing_is_claimed_without_another_ranks_error_line(text, why):
    findings = triage_text(KB, text).findings
    assert findings and all(f.other_rank_error is None for f in findings), why


@pytest.mark.parametrize(
    ("lang", "label"), [("en", "another rank failed first"), ("zh", "另一个 rank 先出错")]
)
def test_the_report_shows_it_in_the_users_language(lang, label):
    _, report = _report(CAPTURE.read_text(encoding="utf-8"), lang)
    for shown in (to_markdown(KB, report), _short_rich(report)):
        assert label in shown
        assert "ValueError: bad sample in batch 1" in shown


def test_with_nothing_to_try_the_short_report_shows_how_to_find_the_culprit():
    _, report = _report(CAPTURE.read_text(encoding="utf-8"), "en")
    # nothing proven for every cause and no question that decides: at most a row per cause
    assert not report.fixes and report.splitting_question is None
    assert all(row.cause for row in report.conditional)
    shown = _short_rich(report)
    assert report.diagnostics[0].title in shown
    assert "--log-dir logs --tee 3" in shown


def test_with_fixes_to_try_the_short_report_keeps_the_diagnostics_for_all():
    _, report = _report(NAMED, "en")
    assert report.fixes or report.conditional
    shown = _short_rich(report)
    assert report.diagnostics and report.diagnostics[0].title not in shown


@pytest.mark.parametrize(
    ("lang", "label"), [("en", "another rank failed first"), ("zh", "另一个 rank 先出错")]
)
def test_the_interview_shows_it_with_what_it_found(lang, label):
    pytest.importorskip("questionary")
    from ddp_doctor.talk.session import run_session
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    out = io.StringIO()
    console = Console(file=out, width=160, highlight=False, color_system=None)
    with create_pipe_input() as keys:
        keys.close()  # no answer: the session ends after showing what the paste holds
        run_session(
            KB,
            lang,
            str(CAPTURE),
            console=console,
            prompt_input=keys,
            prompt_output=DummyOutput(),
        )
    screen = out.getvalue()
    assert label in screen and "ValueError: bad sample in batch 1" in screen
