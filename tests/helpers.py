"""Shared helpers for the tests: where things are, and how to run the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
FIXTURES = TESTS / "fixtures"


def cli(*args: str, input: bytes | str | None = None, env: dict | None = None, timeout=60):
    """Run `python -m ddp_doctor` as a user would run `ddp-doctor`; returns CompletedProcess."""
    full_env = {**os.environ, "PYTHONIOENCODING": "utf-8", **(env or {})}
    full_env.pop("DDP_DOCTOR_LANG", None)
    if isinstance(input, str):
        input = input.encode("utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "ddp_doctor", *args],
        input=input,
        capture_output=True,
        env=full_env,
        timeout=timeout,
        cwd=ROOT,
    )
    result.out = result.stdout.decode("utf-8", errors="replace")
    result.err = result.stderr.decode("utf-8", errors="replace")
    return result


def script_module(path: str):
    """A script of the repository (`bench/right_fix.py`) imported as a module, once per test
    run: registered under its name, as its dataclasses look their module up by name, and shared
    by every test file that uses it instead of executed again for each."""
    import importlib.util

    name = Path(path).stem
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def has_chinese(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)
