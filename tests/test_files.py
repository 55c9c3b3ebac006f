"""Files ddp-doctor writes: atomic (old file whole after a failure), never over an input.

Real processes, real resource limits: a file-size limit (RLIMIT_FSIZE) makes the write fail
half-way exactly as a full disk does.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from ddp_doctor.common.atomic import same_file, write_atomic
from helpers import FIXTURES, ROOT

CONSOLE_SCRIPT = Path(sys.executable).parent / "ddp-doctor"
WRAPPER = [str(CONSOLE_SCRIPT)] if CONSOLE_SCRIPT.exists() else [sys.executable, "-m", "ddp_doctor"]
FLAG_ON_ERROR = FIXTURES / "versions" / "torch_1_10_flag_on.txt"
OLD = "the previous report, which must survive\n"


def _limit_file_size(limit: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("TORCH_DISTRIBUTED_DEBUG", "DDP_DOCTOR_LANG", "PYTHONUNBUFFERED"):
        env.pop(name, None)
    # a child under a file-size limit writes no bytecode: Python does not check a short write
    # of a .pyc, and the first import of a module under the limit would leave a truncated one
    # that breaks every later run of it
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _ddp_death() -> list[str]:
    path = str(FLAG_ON_ERROR)
    code = f"import sys; sys.stderr.write(open({path!r}, encoding='utf-8').read()); sys.exit(1)"
    return [sys.executable, "-c", code]


# ---------------------------------------------------------------------------- the helper


def test_write_atomic_replaces_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "report.md"
    target.write_text(OLD)
    target.chmod(0o640)
    write_atomic(target, "new\n")
    assert target.read_text() == "new\n"
    assert (target.stat().st_mode & 0o777) == 0o640  # an existing file keeps its mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]


def test_write_atomic_without_overwrite_refuses_an_existing_file(tmp_path):
    target = tmp_path / "err.txt"
    target.write_text(OLD)
    with pytest.raises(FileExistsError):
        write_atomic(target, "new\n", overwrite=False)
    assert target.read_text() == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["err.txt"]
    write_atomic(tmp_path / "fresh.txt", "x", overwrite=False)
    assert (tmp_path / "fresh.txt").read_text() == "x"


def test_write_atomic_writes_through_a_symlink_and_knows_the_same_file(tmp_path):
    real = tmp_path / "real.md"
    real.write_text(OLD)
    link = tmp_path / "link.md"
    link.symlink_to(real)
    write_atomic(link, "new\n")
    assert link.is_symlink() and real.read_text() == "new\n"
    assert same_file(link, real) and not same_file(real, tmp_path / "missing")


# ---------------------------------------------------------------------------- run --report


def test_run_report_under_a_file_size_limit_leaves_no_file(tmp_path):
    report = tmp_path / "report.json"
    result = subprocess.run(
        [*WRAPPER, "run", "--lang", "en", "--report", str(report), "--", *_ddp_death()],
        capture_output=True,
        env=_env(),
        cwd=ROOT,
        timeout=120,
        preexec_fn=_limit_file_size(1024),  # the JSON report is several KiB
    )
    err = result.stderr.decode()
    assert result.returncode == 1
    assert f"cannot write the report to {report}" in err
    assert list(tmp_path.iterdir()) == []  # no half report, no temporary file


def test_run_report_never_replaces_an_old_report(tmp_path):
    """Issue 22, item 2: an existing file is refused before the job starts, as --save does."""
    report = tmp_path / "report.json"
    report.write_text(OLD)
    result = subprocess.run(
        [*WRAPPER, "run", "--lang", "en", "--report", str(report), "--", *_ddp_death()],
        capture_output=True,
        env=_env(),
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 3
    assert "already exists" in result.stderr.decode()
    assert report.read_text() == OLD
