"""Saving a report: which files, whether that is safe, and writing them atomically.

No terminal imports: the interactive session asks the questions (overwrite? another
name?), `--save` without a terminal refuses instead; both use this module to decide.

A save writes up to three files beside each other: the report (`report.md`), the answers
that reproduce it (`report.answers.yaml`) and, when the error was pasted at the prompt, a
copy of it (`report.error.txt`). The rules:
- never over a file the run reads (the `--paste` log, the `--answers` file): refused;
- never over an existing file unless the caller says the user agreed, and never through a
  symlink into the file it points to (the link itself is replaced);
- a character device or FIFO (`/dev/null`) is written in place, never replaced;
- every file atomically (`atomic.write_atomic`): a failure leaves the old file whole, and
  the result lists exactly the files that were written, so a printed command never names
  a file that does not exist.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..common.atomic import same_file, special_file, write_atomic

DEFAULT_REPORT = "ddp-doctor-report.md"


@dataclass(frozen=True)
class SaveFile:
    path: str
    text: str


@dataclass(frozen=True)
class SavePlan:
    report: SaveFile
    answers: SaveFile | None
    error_copy: SaveFile | None

    @property
    def files(self) -> tuple[SaveFile, ...]:
        return tuple(f for f in (self.report, self.answers, self.error_copy) if f is not None)


@dataclass(frozen=True)
class SaveCheck:
    inputs_hit: tuple[str, ...]  # planned paths that are files this run reads: refused
    existing: tuple[str, ...]  # planned paths that exist already: ask before replacing

    @property
    def refused(self) -> bool:
        return bool(self.inputs_hit)


@dataclass(frozen=True)
class SaveResult:
    written: tuple[str, ...]  # in plan order; only these may be named afterwards
    error: OSError | None  # the first failure; the files after it were not attempted
    failed_path: str | None

    def wrote(self, path: str | None) -> bool:
        return path is not None and path in self.written


def companion_paths(report_path: str) -> tuple[str, str]:
    """`report.md` -> (`report.answers.yaml`, `report.error.txt`)."""
    report = Path(report_path)
    stem = report.with_suffix("") if report.suffix else report
    return f"{stem}.answers.yaml", f"{stem}.error.txt"


def plan_save(
    report_path: str,
    report_text: str,
    answers_text: str | None = None,
    pasted_text: str | None = None,
) -> SavePlan:
    """The files a save writes; `pasted_text` only when the error exists in no file yet."""
    answers_path, error_path = companion_paths(report_path)
    return SavePlan(
        report=SaveFile(report_path, report_text),
        answers=SaveFile(answers_path, answers_text) if answers_text is not None else None,
        error_copy=SaveFile(error_path, pasted_text) if pasted_text else None,
    )


def check_plan(plan: SavePlan, inputs: Sequence[str | None]) -> SaveCheck:
    """Which planned files are inputs of this run, and which exist already."""
    readable = [path for path in inputs if path and path != "-"]
    hit = tuple(f.path for f in plan.files if any(same_file(f.path, source) for source in readable))
    existing = tuple(
        f.path
        for f in plan.files
        if f.path not in hit and os.path.lexists(f.path) and not _in_place(f.path)
    )
    return SaveCheck(hit, existing)


def _in_place(path: str) -> bool:
    """A character device or FIFO (`/dev/null`, `/dev/stdout`): written to, never replaced,
    so nothing is lost by saving there. A block device or socket counts as existing."""
    try:
        return special_file(path)
    except OSError:
        return False


def write_plan(plan: SavePlan, overwrite: bool) -> SaveResult:
    """Write the plan's files atomically, in order, stopping at the first failure.

    `overwrite=False` refuses (FileExistsError) a file that appeared after the check.
    """
    written: list[str] = []
    for item in plan.files:
        try:
            # a symlink is replaced, never written through to the file it points to
            write_atomic(item.path, item.text, overwrite=overwrite, follow_symlinks=False)
        except OSError as exc:
            return SaveResult(tuple(written), exc, item.path)
        written.append(item.path)
    return SaveResult(tuple(written), None, None)
