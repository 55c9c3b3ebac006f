"""An output that cannot hold every character (PYTHONIOENCODING=ascii or latin-1, an old C
locale) gets escapes, never a UnicodeEncodeError traceback, and the exit code stays what
the command decided (issue 22, item 7)."""

from __future__ import annotations

import json

import pytest
from helpers import ROOT, cli

LOG = str(ROOT / "examples" / "torchrun-unused-module.log")


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("fmt", ["rich", "markdown", "text"])
def test_a_narrow_output_encoding_gets_the_whole_report(encoding, lang, fmt):
    done = cli("triage", LOG, "--format", fmt, "--lang", lang, env={"PYTHONIOENCODING": encoding})
    assert done.returncode == 0, done.err
    assert "Traceback" not in done.err
    text = done.stdout.decode(encoding)  # every byte is in the encoding asked for
    if lang == "zh":
        assert "\\u68af\\u5ea6" in text  # 梯度, escaped
    assert "aux_head" in text


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_json_in_a_narrow_encoding_is_the_same_document(encoding, lang):
    narrow = cli("triage", LOG, "--json", "--lang", lang, env={"PYTHONIOENCODING": encoding})
    wide = cli("triage", LOG, "--json", "--lang", lang)
    assert narrow.returncode == 0, narrow.err
    assert json.loads(narrow.stdout.decode(encoding)) == json.loads(wide.out)


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_an_error_in_a_narrow_encoding_keeps_its_exit_code(encoding):
    done = cli("triage", "no-such.log", "--lang", "zh", env={"PYTHONIOENCODING": encoding})
    assert done.returncode == 3
    assert "Traceback" not in done.err
    assert "\\u65e0\\u6cd5" in done.stderr.decode(encoding)  # 无法, escaped
