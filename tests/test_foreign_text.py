"""Text from outside (a log's lines, file names, --answers values, module names) reaches the
reader harmless: no live markdown, no escape sequence, no invisible or reordering character,
in every output format and both languages; JSON keeps the values exactly (issue 22, 3-4)."""

from __future__ import annotations

import json
import sys
import unicodedata
from pathlib import Path

import pytest
from ddp_doctor.common.foreign import code_span, dumps, escape_invisible, shorten, shown
from helpers import ROOT, cli
from markdown_it import MarkdownIt

EXAMPLE = (ROOT / "examples" / "torchrun-unused-module.log").read_text(encoding="utf-8")
CODE_LINE = "    loss = model(torch.randn(4, 8)).pow(2).mean()"
PATH = "/home/me/project/train.py"

# what an attacker (or an unlucky log) puts in a traceback's code line and file path
LINK_AND_IMAGE = "# `[click](http://evil.example) <img src=x onerror=alert(1)>`"
EVIL_PATH = "/home/me/pro`<img src=x onerror=alert(1)>`ject/train.py"
INVISIBLE = {
    "\u202e": "\\u202e",  # right-to-left override
    "\u2066": "\\u2066",  # left-to-right isolate
    "\u2069": "\\u2069",  # pop directional isolate
    "\u200b": "\\u200b",  # zero-width space
    "\u009b": "\\x9b",  # C1 CSI: a terminal reads it as ESC [
    "\x1b": "\\x1b",  # ESC
}
OSC_TITLE = "\x1b]0;owned\x07"


def _hostile_log() -> str:
    log = EXAMPLE.replace(CODE_LINE, f"    loss = model(x)  {LINK_AND_IMAGE}", 1)
    log = log.replace(PATH, EVIL_PATH, 1)
    invisible = "".join(f"a{ch}b " for ch in INVISIBLE)
    # the second traceback's lines: invisible characters in its code and in its path
    at = log.index("[rank1]:")
    rest = log[at:].replace(CODE_LINE, f"    loss = f(x)  # {invisible}{OSC_TITLE}", 1)
    rest = rest.replace(PATH, "/home/me/tr\u202eyp.exe/train.py", 1)
    return log[:at] + rest


@pytest.fixture(scope="module")
def hostile_log(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("foreign") / "hostile.log"
    path.write_text(_hostile_log(), encoding="utf-8")
    return path


def _html(markdown: str) -> str:
    return MarkdownIt("commonmark").render(markdown)


def _assert_no_live_markup(markdown: str) -> None:
    html = _html(markdown)
    assert "<img" not in html and "<a " not in html, html


def _assert_nothing_invisible(text: str) -> None:
    for ch in INVISIBLE:
        assert ch not in text, repr(ch)


# ---------------------------------------------------------------------------- the function


def _unsafe_code_points():
    for code in range(sys.maxunicode + 1):
        ch = chr(code)
        if ch != "\t" and unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            yield ch


def test_every_control_and_invisible_character_is_shown_as_an_escape():
    missed = [f"U+{ord(ch):04X}" for ch in _unsafe_code_points() if escape_invisible(ch) == ch]
    assert not missed


def test_no_character_of_the_classes_is_printable():
    # `escape_invisible` and `dumps` skip the regex for printable text (foreign.py): sound
    # only while `isprintable` refuses every character the classes hold
    import re

    from ddp_doctor.common import foreign

    for cls in (foreign._UNSAFE_CLASS, foreign._JSON_UNSAFE_CLASS):
        pattern = re.compile(cls)
        printable = [c for c in range(sys.maxunicode + 1) if chr(c).isprintable()]
        assert not [f"U+{c:04X}" for c in printable if pattern.match(chr(c))]


def test_escapes_name_the_character_and_keep_the_rest():
    assert shown("a\x1b[31mb\u202ec", "terminal") == "a\\x1b[31mb\\u202ec"
    assert shown("训练\u200b", "markdown") == "训练\\u200b"
    assert shown("a\x1bb", "json") == "a\x1bb"  # JSON keeps the value; dumps escapes it


def test_json_keeps_every_value_and_prints_no_raw_unsafe_character():
    value = "".join(_unsafe_code_points())
    document = dumps({"text": value})
    assert json.loads(document) == {"text": value}
    assert all(ch in "\n" or escape_invisible(ch) == ch for ch in document)


@pytest.mark.parametrize(
    "text", ["a", "a`b", "`x`", " x ", "x```y", "``", "a `` b ` c", "<img src=x>", " `a` "]
)
def test_a_code_span_holds_any_text_exactly(text):
    html = _html(code_span(text)).strip()
    inner = html.removeprefix("<p><code>").removesuffix("</code></p>")
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    assert inner == escaped


def test_shorten_keeps_both_ends():
    assert shorten("a" * 10 + "MIDDLE" + "b" * 10, 9) == "aaaa…bbbb"
    assert shorten("short", 9) == "short"


# ---------------------------------------------------------------------------- reports


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("fmt", ["markdown", "text"])
def test_the_markdown_report_has_no_live_link_or_html(hostile_log, lang, fmt):
    done = cli("triage", str(hostile_log), "--format", fmt, "--all", "--lang", lang)
    assert done.returncode == 0, done.err
    _assert_no_live_markup(done.out)
    # the text is still there for the reader, as code
    assert "[click](http://evil.example)" in done.out
    assert "<img src=x onerror=alert(1)>" in done.out


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("fmt", ["markdown", "text", "rich"])
def test_invisible_characters_are_shown_as_escapes(hostile_log, lang, fmt):
    done = cli("triage", str(hostile_log), "--format", fmt, "--all", "--lang", lang)
    assert done.returncode == 0, done.err
    _assert_nothing_invisible(done.out)
    # (an escape sequence inside a log line is removed with the colours, before any reading)
    assert "\\u202e" in done.out and "\\x9b" in done.out


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_json_keeps_the_log_as_it_is_but_prints_it_safely(hostile_log, lang):
    done = cli("triage", str(hostile_log), "--json", "--lang", lang)
    assert done.returncode == 0, done.err
    _assert_nothing_invisible(done.out)
    data = json.loads(done.out)
    frames = [u for f in data["findings"] for u in f["user_frames"]]
    assert any(u["file"] == EVIL_PATH for u in frames)
    assert any("\u202e" in u["code"] and "\u009b" in u["code"] for u in frames)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_saved_report_has_no_live_markup(hostile_log, tmp_path, lang):
    answers = tmp_path / "answers.yaml"
    answers.write_text("framework: pytorch\n", encoding="utf-8")
    saved = tmp_path / "report.md"
    done = cli(
        "--answers", str(answers), "--paste", str(hostile_log), "--save", str(saved),
        "--lang", lang, "--format", "json",
    )  # fmt: skip
    assert done.returncode == 0, done.err
    text = saved.read_text(encoding="utf-8")
    _assert_no_live_markup(text)
    _assert_nothing_invisible(text)


# ---------------------------------------------------------------------------- names and errors


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("fmt", ["markdown", "rich", "json"])
def test_a_log_file_name_with_an_escape_sequence(tmp_path, lang, fmt):
    log = tmp_path / f"a{OSC_TITLE}\u202e.txt"
    log.write_text(EXAMPLE, encoding="utf-8")
    done = cli("triage", str(log), "--format", fmt, "--all", "--lang", lang)
    assert done.returncode == 0, done.err
    _assert_nothing_invisible(done.out)
    if fmt == "json":
        assert json.loads(done.out)["findings"][0]["source"] == str(log)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_empty_log_with_an_escape_in_its_name(tmp_path, lang):
    log = tmp_path / f"a{OSC_TITLE}.txt"
    log.write_text("", encoding="utf-8")
    done = cli("triage", str(log), "--lang", lang)
    assert done.returncode == 3
    _assert_nothing_invisible(done.err)
    assert "\\x1b]0;owned\\x07" in done.err


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_answers_value_with_an_escape_sequence_is_echoed_harmless(tmp_path, lang):
    answers = tmp_path / "answers.yaml"
    answers.write_text(json.dumps({"framework": f"x{OSC_TITLE}\u202e"}), encoding="utf-8")
    done = cli("--answers", str(answers), "--lang", lang, "--format", "markdown")
    assert done.returncode == 2, done.err
    _assert_nothing_invisible(done.err)
    assert "\\x1b]0;owned\\x07" in done.err


def test_an_option_value_echoed_by_a_usage_error_is_harmless():
    done = cli("triage", "--format", f"x{OSC_TITLE}")
    assert done.returncode == 2
    _assert_nothing_invisible(done.err)


def test_a_run_command_that_does_not_exist_is_named_harmlessly():
    done = cli("run", "--lang", "en", "--", f"no-such{OSC_TITLE}")
    assert done.returncode == 127
    _assert_nothing_invisible(done.err)
    assert "\\x1b]0;owned\\x07" in done.err


PROBE_TARGET = """
import torch

def make():
    model = torch.nn.Module()
    model.add_module("used", torch.nn.Linear(2, 1))
    model.add_module("evil\\x1b]0;owned\\x07\\u202e<img src=x onerror=alert(1)>", torch.nn.Linear(2, 1))
    return model, lambda m: m.used(torch.ones(1, 2)).sum()
"""


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("fmt", ["markdown", "rich", "json"])
def test_module_names_the_probe_prints_are_harmless(tmp_path, lang, fmt):
    pytest.importorskip("torch")
    target = tmp_path / "target.py"
    target.write_text(PROBE_TARGET, encoding="utf-8")
    done = cli("probe", f"{target}:make", "--format", fmt, "--lang", lang, "--steps", "1")
    assert done.returncode == 1, done.err
    _assert_nothing_invisible(done.out)
    if fmt == "markdown":
        _assert_no_live_markup(done.out)
    if fmt == "json":
        names = [p["name"] for p in json.loads(done.out)["never_reached"]]
        assert any(OSC_TITLE in name for name in names)


def test_a_rules_folder_name_with_an_escape_sequence_is_echoed_harmless(tmp_path):
    rules = tmp_path / f"r{OSC_TITLE}"
    rules.mkdir()
    (rules / "signatures.yaml").write_text("families: [\n")
    done = cli("triage", "--rules", str(rules), "-", input="x\n",
               env={"XDG_CACHE_HOME": str(tmp_path / "cache")})  # fmt: skip
    assert done.returncode == 4
    _assert_nothing_invisible(done.err)
    assert "\\x1b]0;owned\\x07" in done.err
