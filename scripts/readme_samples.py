"""Rewrite the README's sample outputs from the real program, or check that they are current.

    .venv/bin/python scripts/readme_samples.py          # rewrite README.md's samples
    .venv/bin/python scripts/readme_samples.py --check  # exit 1 if one is stale

A sample sits between `<!-- sample: NAME -->` and `<!-- /sample -->`, inside a fenced block
the script keeps; NAME is one of SAMPLES below: the command a newcomer would type, run on the
bundled example at 80 columns. tests/test_readme_samples.py runs the check, so the README
never shows output the program no longer prints.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
EXAMPLE = "examples/torchrun-unused-module.log"

# name -> (arguments after `ddp-doctor`, lines kept from the top or None for all)
SAMPLES = {
    "triage-terminal-en": (["--lang", "en", "triage", EXAMPLE, "--format", "rich"], None),
    "triage-markdown-en": (["--lang", "en", "triage", EXAMPLE, "--format", "markdown"], 40),
    "triage-terminal-zh": (["--lang", "zh", "triage", EXAMPLE, "--format", "rich"], None),
}

BLOCK = re.compile(
    r"(<!-- sample: (?P<name>[\w-]+) -->\n(?P<fence>`{3,})(?P<info>\w*)\n)"
    r"(?P<body>.*?)(\n(?P=fence)\n<!-- /sample -->)",
    re.S,
)


def output(args: list[str], keep: int | None) -> str:
    env = {**os.environ, "COLUMNS": "80", "LINES": "24", "PYTHONIOENCODING": "utf-8"}
    env.pop("DDP_DOCTOR_LANG", None)
    result = subprocess.run(
        [sys.executable, "-m", "ddp_doctor", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    lines = result.stdout.rstrip("\n").splitlines()
    return "\n".join(lines[:keep] if keep else lines)


def rewritten(text: str) -> str:
    def replace(match: re.Match) -> str:
        args, keep = SAMPLES[match.group("name")]
        return match.group(1) + output(args, keep) + match.group(6)

    return BLOCK.sub(replace, text)


def main(argv: list[str]) -> int:
    text = README.read_text(encoding="utf-8")
    names = {m.group("name") for m in BLOCK.finditer(text)}
    unknown = names - set(SAMPLES)
    if unknown:
        print(f"unknown samples in README.md: {sorted(unknown)}", file=sys.stderr)
        return 2
    new = rewritten(text)
    if "--check" in argv:
        if new != text:
            print("README.md samples are stale: run scripts/readme_samples.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
