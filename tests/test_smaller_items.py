"""The smaller items of issue 22: huge integers (9), COLUMNS=0 (10), and the odds and ends
of item 27 (UTF-32 without a byte order mark, a hard link read twice, empty file names)."""

from __future__ import annotations

import json
import os

import pytest
from helpers import ROOT, cli

LOG = ROOT / "examples" / "torchrun-unused-module.log"
HUGE = "1" * 5000  # more digits than Python converts (4300)


# ---------------------------------------------------------------------------- 9


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_a_huge_integer_in_answers_is_a_clear_error(tmp_path, lang, fmt):
    answers = tmp_path / "answers.yaml"
    answers.write_text(f"framework: {HUGE}\n")
    done = cli("--answers", str(answers), "--lang", lang, "--format", fmt)
    assert done.returncode == 3
    assert "Traceback" not in done.err and len(done.err.splitlines()) == 1
    assert "4300" in done.err
    if fmt == "json":
        assert json.loads(done.out)["error"]["id"] == "err_answers_long_number"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_huge_integer_in_a_rules_file_is_a_clear_error(tmp_path, lang):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "signatures.yaml").write_text(
        f"families: []\nhints:\n  - pattern: x\n    sets: {{framework: {HUGE}}}\n"
    )
    done = cli("triage", str(LOG), "--rules", str(rules), "--lang", lang,
               env={"XDG_CACHE_HOME": str(tmp_path / "cache")})  # fmt: skip
    assert done.returncode == 4
    assert "Traceback" not in done.err and len(done.err.splitlines()) == 1
    assert "signatures.yaml" in done.err and "4300" in done.err


# ---------------------------------------------------------------------------- 10


@pytest.mark.parametrize("columns", ["0", "1", "7"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_zero_or_tiny_columns_still_prints_the_diagnosis(columns, lang):
    done = cli("triage", str(LOG), "--format", "rich", "--lang", lang, env={"COLUMNS": columns})
    assert done.returncode == 0, done.err
    assert "aux_head" in done.out
    assert ("有参数没有拿到梯度" if lang == "zh" else "Parameters that got no gradient") in done.out


def test_ask_with_zero_columns_still_answers():
    done = cli("ask", "I call backward twice per step", "--format", "rich", "--lang", "en",
               env={"COLUMNS": "0"})  # fmt: skip
    assert done.returncode == 0, done.err
    assert len(done.out.splitlines()) > 5


# ---------------------------------------------------------------------------- 27


@pytest.mark.parametrize("encoding", ["utf-32-le", "utf-32-be"])
@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_utf32_without_a_byte_order_mark_is_read(tmp_path, encoding, fmt):
    log = tmp_path / "utf32.log"
    log.write_bytes(LOG.read_text(encoding="utf-8").encode(encoding))  # no mark
    done = cli("triage", str(log), "--format", fmt)
    assert done.returncode == 0, done.err
    assert "aux_head" in done.out


@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_the_same_file_through_a_hard_link_is_read_once(tmp_path, fmt):
    link = tmp_path / "same.log"
    os.link(LOG, link)
    once = cli("triage", str(LOG), "--format", fmt)
    twice = cli("triage", str(LOG), str(link), "--format", fmt)
    assert twice.returncode == 0, twice.err
    assert twice.out == once.out  # the link is not a second log: nothing counted twice


@pytest.mark.parametrize("option", ["--save", "--rules", "--answers", "--paste"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_empty_file_name_is_a_usage_error_not_ignored(tmp_path, option, lang):
    answers = tmp_path / "a.yaml"
    answers.write_text("framework: pytorch\n")
    args = ["--answers", str(answers), "--format", "json", "--lang", lang]
    if option == "--answers":
        args = ["--format", "json", "--lang", lang]
    done = cli(*args, option, "")
    assert done.returncode == 2, done.err
    assert option in done.err
    assert json.loads(done.out)["error"]["id"] == "usage"
