"""Reading the user's inputs: files, FIFOs, stdin; a progress line for long scans.

Shared by `triage`, `ask`, `--answers`/`--paste` and the session, so none of them imports
the command line module.
"""

from __future__ import annotations

import codecs
import os
import stat
import sys
import time
from collections.abc import Sequence

from ..common.errors import ExitCode, UserError

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
    """Scan every input; returns the TriageResult. Raises UserError for bad inputs.

    With several inputs, one that is missing, empty, unreadable or binary is reported on
    stderr and the others are still diagnosed; only when none is usable is it an error. The
    same file named twice is read once.
    """
    from ..common.foreign import shown_fields
    from ..common.i18n import tr
    from .triage import summarise

    scanners, problems = [], []
    for path in _distinct(paths):
        try:
            scanners.append(_scan_one(kb, path, lang, max_bytes))
        except UserError as problem:
            if len(paths) == 1:
                raise
            problems.append(problem)
    for problem in problems[0 if scanners else 1 :]:
        warn("ddp-doctor: " + tr(kb, problem.key, lang, **shown_fields(problem.fields)))
    if not scanners:
        raise problems[0]
    result = summarise(kb, scanners)
    if result.looks_binary:
        raise UserError(ExitCode.INPUT, "err_binary", path=", ".join(result.sources))
    return result


def _distinct(paths: Sequence[str]) -> list[str]:
    """The paths in order, each file once (`log.txt ./log.txt` is one file, and so are two
    hard links to it: the same device and inode)."""
    seen: set = set()
    distinct = []
    for path in paths:
        key = path if path == "-" else _file_key(path)
        if key not in seen:
            seen.add(key)
            distinct.append(path)
    return distinct


def _file_key(path: str):
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return os.path.realpath(path)  # its error is reported when it is read
    return (info.st_dev, info.st_ino)


def _scan_one(kb, path: str, lang: str, max_bytes: int | None):
    from ..common.foreign import shown
    from ..common.i18n import tr
    from .triage import scan_stream

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
        reader = Utf8Reader(stream)
        size = total if reader.decoder is None and _is_regular(stream) else None
        scanner = scan_stream(kb, reader, source, max_bytes, progress, size)
    except OSError as exc:
        raise UserError(ExitCode.INPUT, "err_unreadable", path=path, reason=exc.strerror) from None
    finally:
        progress.clear()
        if stream is not sys.stdin.buffer:
            stream.close()
    if not scanner.nonblank:
        raise UserError(ExitCode.INPUT, "err_empty", path=source)
    if scanner.hit_byte_limit:
        warn(tr(kb, "warn_byte_limit", lang, path=shown(source), limit=max_bytes))
    if scanner.looks_binary and not scanner.finish():
        raise UserError(ExitCode.INPUT, "err_binary", path=source)
    return scanner


def _is_regular(stream) -> bool:
    try:
        return stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    except (OSError, ValueError, AttributeError):
        return False


# UTF-32 first: its little-endian mark starts with UTF-16's
_BYTE_ORDER_MARKS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


_PLAIN_ASCII = frozenset(range(32, 127)) | {9, 10, 13, 27}


def _utf16_without_mark(head: bytes) -> str | None:
    """UTF-16 written without a byte order mark (some Windows tools do): every other byte of
    the head is zero and the rest is plain ASCII text ("R\\0u\\0"). None when it is not."""
    pairs = len(head) // 2
    if pairs < 2:
        return None
    for encoding, text_at, zero_at in (("utf-16-le", 0, 1), ("utf-16-be", 1, 0)):
        if all(
            head[2 * i + zero_at] == 0 and head[2 * i + text_at] in _PLAIN_ASCII
            for i in range(pairs)
        ):
            return encoding
    return None


def _utf32_without_mark(head: bytes) -> str | None:
    """UTF-32 written without a byte order mark: a first character of plain ASCII text and
    three zero bytes ("R\\0\\0\\0"). None when it is not."""
    if len(head) < 4:
        return None
    if head[1:4] == b"\0\0\0" and head[0] in _PLAIN_ASCII:
        return "utf-32-le"
    if head[:3] == b"\0\0\0" and head[3] in _PLAIN_ASCII:
        return "utf-32-be"
    return None


class Utf8Reader:
    """A byte stream that reads as UTF-8: a UTF-16 or UTF-32 log with a byte order mark
    (PowerShell's `>` writes UTF-16), or UTF-16 without one, is decoded a block at a time;
    anything else passes through untouched."""

    def __init__(self, stream: IO[bytes]):
        self.stream = stream
        # four bytes, no more: a pipe that sends a short text and waits for the answer must
        # not be read past what it sent
        head = stream.read(4)
        self.pending = head
        self.decoder = None
        for mark, encoding in _BYTE_ORDER_MARKS:
            if head.startswith(mark):
                self.decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
                self.pending = head[len(mark) :]
                break
        else:
            encoding = _utf32_without_mark(head) or _utf16_without_mark(head)
            if encoding is not None:
                self.decoder = codecs.getincrementaldecoder(encoding)(errors="replace")

    def read(self, size: int = -1) -> bytes:
        while True:
            data = self.pending + self.stream.read(size)
            self.pending = b""
            if self.decoder is None:
                return data
            text = self.decoder.decode(data, final=not data)
            if text or not data:  # a block may end inside a character: read on
                return text.encode("utf-8")


def warn(text: str) -> None:
    sys.stderr.write(text + "\n")
