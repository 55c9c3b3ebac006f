"""Every error family recognises its own examples and none of its counter-examples.

The examples live next to the patterns in rules/signatures.yaml (the thefuck / Semgrep way:
a rule and its test travel together); this one test runs them all.
"""

from __future__ import annotations

import pytest
from ddp_doctor.knowledge import kb as kb_module
from ddp_doctor.reading.triage import triage_text
from helpers import TESTS

KB = kb_module.load()


def _text(example) -> str:
    if example.text is not None:
        return example.text
    return (TESTS / example.file).read_text(encoding="utf-8")


POSITIVE = [
    pytest.param(f.id, e, id=f"{f.id}-{i}") for f in KB.families for i, e in enumerate(f.positive)
]
NEGATIVE = [
    pytest.param(f.id, e, id=f"{f.id}-{i}") for f in KB.families for i, e in enumerate(f.negative)
]


@pytest.mark.parametrize(("family", "example"), POSITIVE)
def test_positive_example_is_recognised(family, example):
    result = triage_text(KB, _text(example))
    assert result.findings, f"{family}: example not recognised"
    assert result.findings[0].family == family


@pytest.mark.parametrize(("family", "example"), NEGATIVE)
def test_negative_example_is_not_this_family(family, example):
    result = triage_text(KB, _text(example))
    assert family not in {f.family for f in result.findings}


def test_every_family_has_examples_and_a_title_in_both_languages():
    for family in KB.families:
        assert family.positive and family.negative, family.id
        assert family.title.en and family.title.zh


def test_example_files_exist():
    for family in KB.families:
        for example in family.positive + family.negative:
            if example.file:
                assert (TESTS / example.file).is_file(), example.file
