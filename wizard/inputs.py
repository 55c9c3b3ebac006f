"""Reading the user's inputs: files, FIFOs, stdin; a progress line for long scans.

Shared by `triage`, `ask`, `--answers`/`--paste` and the session, so none of them imports
the command line module.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from collections.abc import Sequence

from .errors import ExitCode, UserError

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO

DEFAULT_MAX_BYTES = 4 << 30


def open_input(path: str) -> IO[bytes]:
    """Open a file, a FIFO or stdin for reading bytes, or raise a UserError."""
    if path == "-":
        return sys.stdin.buffer
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise UserError(ExitCode.INPUT, "err_no_such_file", path=path) from None
    except OSError as exc:
        raise UserError(ExitCode.INPUT, "err_unreadable", path=path, reason=exc.strerror) from None
    if stat.S_ISDIR(info.st_mode):
        raise UserError(ExitCode.INPUT, "err_is_directory", path=path)
    try:
        if stat.S_ISFIFO(info.st_mode):
            # opening a FIFO blocks until a writer appears; open it non-blocking, then read
            # normally: with no writer the read ends at once instead of hanging
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            os.set_blocking(fd, True)
            return os.fdopen(fd, "rb")
        return open(path, "rb")  # noqa: SIM115 - closed by the caller
    except OSError as exc:
        raise UserError(ExitCode.INPUT, "err_unreadable", path=path, reason=exc.strerror) from None


class Progress:
    """A progress line on stderr, only for a terminal and only once a scan takes > 1 s."""

    def __init__(self, total: int | None, label: str):
        self.total, self.label = total, label
        self.start = time.monotonic()
        self.shown = False
        self.enabled = sys.stderr.isatty()

    def __call__(self, done: int) -> None:
        if not self.enabled or time.monotonic() - self.start < 1.0:
            return
        self.shown = True
        mb = done / (1 << 20)
        if self.total:
            width = 24
            filled = int(width * min(1.0, done / self.total))
            bar = "█" * filled + "·" * (width - filled)
            sys.stderr.write(f"\r{self.label} {bar} {mb:,.0f}/{self.total / (1 << 20):,.0f} MB")
        else:
            sys.stderr.write(f"\r{self.label} {mb:,.0f} MB")
        sys.stderr.flush()

    def clear(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()


def read_sources(kb, paths: Sequence[str], lang: str, max_bytes: int | None):
    """Scan every input; returns the TriageResult. Raises UserError for bad inputs."""
    from .i18n import tr
    from .triage import scan_stream, summarise

    scanners = []
    for path in paths:
        stream = open_input(path)
        source = "<stdin>" if path == "-" else path
        total = None
        if path != "-":
            try:
                total = os.fstat(stream.fileno()).st_size or None
            except (OSError, ValueError):
                total = None
        progress = Progress(total, tr(kb, "progress_scanning", lang))
        try:
            scanner = scan_stream(kb, stream, source, max_bytes, progress)
        except OSError as exc:
            raise UserError(
                ExitCode.INPUT, "err_unreadable", path=path, reason=exc.strerror
            ) from None
        finally:
            progress.clear()
            if stream is not sys.stdin.buffer:
                stream.close()
        if not scanner.nonblank:
            raise UserError(ExitCode.INPUT, "err_empty", path=source)
        if scanner.hit_byte_limit:
            warn(tr(kb, "warn_byte_limit", lang, path=source, limit=max_bytes))
        scanners.append(scanner)
    result = summarise(kb, scanners)
    if result.looks_binary:
        raise UserError(ExitCode.INPUT, "err_binary", path=", ".join(result.sources))
    return result


def warn(text: str) -> None:
    sys.stderr.write(text + "\n")
