"""`run --report FILE` and `--save FILE` never clobber what the user points at (issue 22, 1-2).

An atomic replace is only for regular files: a character device or a FIFO is written in
place; an existing file, a symlink (to anything but a device or FIFO) and a directory are
refused before the job starts, with one line and a documented exit code.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers import FIXTURES, ROOT, cli

ERROR = FIXTURES / "versions" / "torch_1_10_flag_on.txt"
WRAPPER = [sys.executable, "-m", "ddp_doctor"]


def _job(marker: Path) -> list[str]:
    """A job that leaves a marker (so a test can tell it ran), prints a DDP error, exits 1."""
    code = (
        f"import sys, pathlib; pathlib.Path({str(marker)!r}).write_text('ran'); "
        f"sys.stderr.write(open({str(ERROR)!r}).read()); sys.exit(1)"
    )
    return [sys.executable, "-c", code]


def _run(report: Path | str, marker: Path, lang: str = "en", timeout: int = 60):
    env = {k: v for k, v in os.environ.items() if k != "DDP_DOCTOR_LANG"}
    return subprocess.run(
        [*WRAPPER, "run", "--lang", lang, "--report", str(report), "--", *_job(marker)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=timeout,
    )


def _char_device(path: Path) -> None:
    """A second /dev/null (same device numbers): what `--report /dev/null` would meet."""
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))


def test_a_character_device_is_written_in_place_not_replaced(tmp_path):
    device = tmp_path / "null"
    _char_device(device)
    done = _run(device, tmp_path / "ran")
    assert done.returncode == 1, done.stderr  # the job's own exit code
    assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert "cannot write" not in done.stderr
    assert not list(tmp_path.glob(".null.*"))  # no temporary file left


def test_a_full_device_is_one_line_and_keeps_the_exit_code(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    full = tmp_path / "full"
    os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    done = _run(full, tmp_path / "ran")
    assert done.returncode == 1
    assert stat.S_ISCHR(os.lstat(full).st_mode)
    assert f"ddp-doctor: cannot write the report to {full}: " in done.stderr
    assert "Traceback" not in done.stderr.split("RuntimeError")[-1]


def test_a_fifo_with_a_reader_gets_the_report(tmp_path):
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    done = _run(fifo, tmp_path / "ran")
    reader.join(30)
    assert done.returncode == 1, done.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert json.loads(got[0])["run"]["job_exit_code"] == 1


def test_a_fifo_nobody_reads_fails_at_once_and_keeps_the_exit_code(tmp_path):
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    done = _run(fifo, tmp_path / "ran", timeout=60)
    assert done.returncode == 1
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert f"ddp-doctor: cannot write the report to {fifo}: " in done.stderr


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_symlink_to_another_file_is_refused_before_the_job_runs(tmp_path, lang):
    target = tmp_path / "target2.txt"
    target.write_text("keep me\n")
    link = tmp_path / "r.json"
    link.symlink_to(target.name)
    marker = tmp_path / "ran"
    done = _run(link, marker, lang)
    assert done.returncode == 3
    assert target.read_text() == "keep me\n" and link.is_symlink()
    assert not marker.exists()
    assert len(done.stderr.splitlines()) == 1 and str(link) in done.stderr
    assert ("符号链接" if lang == "zh" else "symbolic link") in done.stderr


def test_a_dangling_symlink_is_refused_and_nothing_appears_at_its_target(tmp_path):
    link = tmp_path / "r.json"
    link.symlink_to(tmp_path / "elsewhere.json")
    done = _run(link, tmp_path / "ran")
    assert done.returncode == 3
    assert not (tmp_path / "elsewhere.json").exists()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_existing_file_is_refused_before_the_job_runs(tmp_path, lang):
    report = tmp_path / "report.json"
    report.write_text("an earlier report\n")
    marker = tmp_path / "ran"
    done = _run(report, marker, lang)
    assert done.returncode == 3
    assert report.read_text() == "an earlier report\n"
    assert not marker.exists()
    assert ("已经存在" if lang == "zh" else "already exists") in done.stderr


def test_a_directory_is_refused_before_the_job_runs(tmp_path):
    marker = tmp_path / "ran"
    done = _run(tmp_path, marker)
    assert done.returncode == 3 and not marker.exists()
    assert len(done.stderr.splitlines()) == 1


def test_a_new_file_is_written(tmp_path):
    report = tmp_path / "new.json"
    done = _run(report, tmp_path / "ran")
    assert done.returncode == 1
    assert json.loads(report.read_text())["family"] == "unfinished_reduction"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_empty_report_name_is_a_usage_error(tmp_path, lang):
    marker = tmp_path / "ran"
    done = _run("", marker, lang)
    assert done.returncode == 2 and not marker.exists()
    assert "--report" in done.stderr


# ---------------------------------------------------------------------------- --save


def _answers(tmp_path: Path) -> Path:
    answers = tmp_path / "answers.yaml"
    answers.write_text("framework: pytorch\n")
    return answers


def test_save_to_a_character_device_writes_in_place(tmp_path):
    device = tmp_path / "null"
    _char_device(device)
    done = cli("--answers", str(_answers(tmp_path)), "--save", str(device), "--format", "json")
    assert done.returncode == 0, done.err
    assert stat.S_ISCHR(os.lstat(device).st_mode)


def test_save_never_writes_through_a_symlink(tmp_path):
    target = tmp_path / "target.md"
    target.write_text("keep me\n")
    link = tmp_path / "report.md"
    link.symlink_to(target)
    done = cli("--answers", str(_answers(tmp_path)), "--save", str(link), "--format", "json")
    assert done.returncode == 3
    assert target.read_text() == "keep me\n"


def test_an_atomic_save_over_a_link_replaces_the_link_not_its_target(tmp_path):
    from ddp_doctor.output.saving import plan_save, write_plan

    target = tmp_path / "target.md"
    target.write_text("keep me\n")
    link = tmp_path / "report.md"
    link.symlink_to(target)
    result = write_plan(plan_save(str(link), "new report\n"), overwrite=True)
    assert result.error is None
    assert target.read_text() == "keep me\n"
    assert not link.is_symlink() and link.read_text() == "new report\n"
