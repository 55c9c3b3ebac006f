"""Input manners in the interactive session (issue 22, items 12, 13, 14, 17).

Driven as in test_session.py: in-process through prompt_toolkit's pipe input, or the
installed `ddp-doctor` under a pseudo-terminal (pexpect) where the terminal's own behaviour
(typed-ahead keys, pastes without bracket marks) matters.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_session import CLI, ROOT, drive, honest_script, paste

EXAMPLE = ROOT / "examples" / "torchrun-unused-module.log"


def printed_command(screen: str) -> str:
    return next(line.strip() for line in screen.splitlines() if " --answers " in line)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_same_diagnosis_command_works_as_printed_after_declining_to_save(tmp_path, lang):
    """Item 17: a paste naming a module, a per-module answer, no save: the printed command
    (which cannot name the paste: it is in no file) must run, not exit 2."""
    if not CLI.exists():
        pytest.skip("ddp-doctor is not installed in this environment (pip install -e .)")
    text = EXAMPLE.read_text(encoding="utf-8")
    result, script, facts = honest_script(text, {"revealed_module_state": "not_called"})
    assert any(":" in asked.key for asked, _ in script)  # a per-module question was asked
    code, screen = drive(paste(text) + "".join(k for _, k in script) + "nn", lang)
    assert code == 0, screen
    command = printed_command(screen)
    assert "--paste" not in command
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(
        ["bash", "-c", command + " --json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    # the module answer was applied: the cause it speaks for leads, as in the session
    assert data["causes"][0]["id"] == "unused_module"
    # and with the error saved to a file, the same command plus --paste still works
    log = tmp_path / "error.txt"
    log.write_text(text, encoding="utf-8")
    proc = subprocess.run(
        ["bash", "-c", f"{command} --paste {log} --json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["causes"][0]["id"] == "unused_module"
