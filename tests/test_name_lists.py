"""Lists of parameter names: every name shown is one the log holds; a list cut short says so
(issue 22, items 5 and 25)."""

from __future__ import annotations

import json

import pytest
from ddp_doctor.knowledge.kb import load
from ddp_doctor.reading.triage import triage_text
from helpers import cli

KB = load()
HEAD = (
    "RuntimeError: Expected to have finished reduction in the prior iteration before starting "
    "a new one. This error indicates that your module has parameters that were not used in "
    "producing loss.\n"
)
HEADER = "Parameters which did not receive grad for rank 0: "
CUT_NOTE = {
    "en": "the list goes on past the part of the log",
    "zh": "名单在读取到的日志之后还有后续",
}


def _names(count: int) -> list[str]:
    return [f"vision_tower.blocks.{i}.attn.qkv.weight" for i in range(count)]


def _hard_wrapped(text: str, width: int) -> str:
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


def _long_list_log(width: int | None, count: int = 1200) -> str:
    names = _names(count)
    if width is None:  # one name per line
        return HEAD + HEADER + ",\n".join(names) + "\n"
    return HEAD + _hard_wrapped(HEADER + ", ".join(names), width) + "\n"


def _finding(done) -> dict:
    return json.loads(done.stdout)["findings"][0]


@pytest.mark.parametrize("width", [80, 200, None])
def test_a_long_wrapped_list_never_yields_a_name_the_log_does_not_hold(tmp_path, width):
    log = tmp_path / "long.log"
    log.write_text(_long_list_log(width))
    done = cli("triage", str(log), "--json")
    assert done.returncode == 0, done.err
    finding = _finding(done)
    real = set(_names(1200))
    shown = finding["unused_parameter_names"]
    assert shown and set(shown) <= real
    real_modules = {n.rsplit(".", 1)[0] for n in real}
    assert set(finding["unused_modules"]) <= real_modules
    # not every name is read: the report says the list was cut
    assert len(shown) < 1200 and finding["unused_parameter_names_cut"] is True


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("fmt", ["markdown", "rich"])
def test_the_report_says_where_the_list_was_cut(tmp_path, lang, fmt):
    log = tmp_path / "long.log"
    log.write_text(_long_list_log(80))
    done = cli("triage", str(log), "--format", fmt, "--lang", lang, "--all")
    assert done.returncode == 0, done.err
    flat = "".join(done.out.split())  # the terminal wraps the note
    assert CUT_NOTE[lang].replace(" ", "") in flat


def test_a_whole_list_at_the_end_of_the_log_is_not_called_cut(tmp_path):
    log = tmp_path / "short.log"
    log.write_text(HEAD + HEADER + "aux_head.bias, aux_head.weight")  # no newline, long line
    finding = _finding(cli("triage", str(log), "--json"))
    assert finding["unused_parameter_names"] == ["aux_head.bias", "aux_head.weight"]
    assert finding["unused_parameter_names_cut"] is False


@pytest.mark.parametrize("control", ["\r", "\x00", "\x08", "\x1f"])
def test_a_control_character_inside_a_list_glues_no_names(control):
    text = (
        HEAD + HEADER + f"model.head.weight{control}evil_thing, model.other.bias, "
        f"model.x{control}y.weight, model.last.weight\n"
    )
    names = triage_text(KB, text).findings[0].unused_parameter_names
    # the whole names are kept; the pieces around the control character are not names
    assert names == ("model.other.bias", "model.last.weight")


def test_a_bare_cr_progress_bar_before_the_error_still_reads_it():
    text = "step 1 loss 0.5\rstep 2 loss 0.4\r" + HEAD + HEADER + "aux_head.bias, aux_head.weight\n"
    finding = triage_text(KB, text).findings[0]
    assert finding.unused_parameter_names == ("aux_head.bias", "aux_head.weight")
