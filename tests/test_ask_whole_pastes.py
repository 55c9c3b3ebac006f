"""`ask` given a whole real paste (tests/fixtures/real/corpus) reads it as `triage` does: the
error triage finds is the error `ask` diagnoses, whether it stands in a log, inside a sentence
('the error happen: "RuntimeError: Expected to have finished reduction ..."') or in a Markdown
quote; a log holding no known error, or raising another one, is said to hold none, never
diagnosed as the usual DDP error from the framework its stack frames name."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from ddp_doctor.cli.main import main
from ddp_doctor.knowledge.kb import load
from ddp_doctor.reading.post import split_post
from ddp_doctor.reading.triage import triage_text
from ddp_doctor.talk.readers import raised_in
from helpers import FIXTURES

KB = load()
# a paste a user would type into `ask` (the few logs of hundreds of KB go to `triage`)
PASTES = [
    p for p in sorted((FIXTURES / "real" / "corpus").glob("*.txt")) if p.stat().st_size < 60_000
]


def ask_json(text: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["ask", "--json", text])
    return json.loads(out.getvalue())


@pytest.mark.parametrize("path", PASTES, ids=lambda p: p.stem)
def test_ask_reads_a_whole_paste_as_triage_does(path):
    text = path.read_text(encoding="utf-8", errors="replace")
    found = triage_text(KB, text, path.name)
    post = split_post(text)
    if not found.findings and not ((post.log and not post.sentences) or raised_in(KB, post, text)):
        pytest.skip("prose with no known error: `ask` reads the description")
    report = ask_json(text)
    if found.findings:
        assert report.get("kind") == "diagnosis", report
        assert report["family"] == found.facts["family"]
    elif report.get("kind") != "answer":  # a question beside the log is still answered
        assert report["status"] == "no_known_error", report
        assert not report["causes"] and not report["fixes"]
