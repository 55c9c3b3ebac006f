"""The README shows what the program prints today: each sample block is regenerated from the
real command and compared (scripts/readme_samples.py rewrites them)."""

from __future__ import annotations

from helpers import script_module

samples = script_module("scripts/readme_samples.py")


def test_every_sample_is_in_the_readme():
    text = samples.README.read_text(encoding="utf-8")
    found = {m.group("name") for m in samples.BLOCK.finditer(text)}
    assert found == set(samples.SAMPLES)


def test_the_readme_samples_are_what_the_program_prints():
    text = samples.README.read_text(encoding="utf-8")
    for match in samples.BLOCK.finditer(text):
        args, keep = samples.SAMPLES[match.group("name")]
        assert match.group("body") == samples.output(args, keep), (
            f"README sample {match.group('name')} is stale: run scripts/readme_samples.py"
        )
