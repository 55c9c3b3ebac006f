"""Standard streams that may be closed, full, or read by someone who leaves.

`ddp-doctor ... >&-`, `2>&-`, `0<&-`, `> /dev/full` and `| head` must give a one-line
message and a documented exit code, never a traceback. `guarded()` makes that so for the
whole command:

- A closed descriptor 0, 1 or 2 is opened on /dev/null first. Otherwise the next file or
  pipe opened would get that number, and `run`'s pipes to the job would end up as our own
  stderr (that is why `run ... 2>&-` never started the job).
- `sys.stdout` and `sys.stderr` are replaced by streams that never raise on a failed write:
  the first error is remembered and later output is dropped, so the command runs to its own
  end and decides its own exit code. `finish()` then turns a failed stdout into a message
  on stderr and exit code 3 (documented in README), except when the reader simply left
  (`| head`): that is not an error, and the exit code stays what the command decided.
- A closed stdout counts as a failed write (EBADF) the first time something is printed; a
  closed or failing stderr is dropped silently: there is nowhere left to complain.
"""

from __future__ import annotations

import codecs
import errno
import io
import os
import sys
from collections.abc import Callable, Iterator

from .record import field, record
from .scoped import scoped

EXIT_OUTPUT = 3  # cli's "input or output file problem"; only used for a failing stdout


class _GuardedWriter(io.RawIOBase):
    """A raw writer on a descriptor that records the first error instead of raising."""

    def __init__(self, fd: int, closed_at_start: bool):
        super().__init__()
        self.fd = fd
        self.failure: OSError | None = None
        # a descriptor closed at start fails at the first write, not before: `run` never
        # writes through here, and the job's exit code stays its own
        self.closed_at_start = closed_at_start

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def isatty(self) -> bool:
        return not self.closed_at_start and self.failure is None and os.isatty(self.fd)

    def write(self, data) -> int:
        size = len(data)
        if self.closed_at_start and self.failure is None:
            self.failure = OSError(errno.EBADF, os.strerror(errno.EBADF))
        if self.failure is not None:
            return size  # dropped: the destination already failed
        view = memoryview(data)
        while view:
            try:
                written = os.write(self.fd, view)
            except BlockingIOError:  # a parent left the descriptor non-blocking
                import select

                select.select([], [self.fd], [])
                continue
            except InterruptedError:
                continue
            except OSError as exc:
                self.failure = exc
                return size
            view = view[written:]
        return size


@record(frozen=False)
class StreamGuard:
    closed_at_start: frozenset[int]
    writers: dict[str, _GuardedWriter] = field(default_factory=dict)

    @property
    def stdout_failure(self) -> OSError | None:
        writer = self.writers.get("stdout")
        return writer.failure if writer else None

    def reader_left(self) -> bool:
        failure = self.stdout_failure
        return failure is not None and failure.errno == errno.EPIPE

    def finish(self, code: int, say: Callable[[str], None]) -> int:
        """The exit code after the output is flushed; `say(reason)` reports a failed stdout."""
        _flush_both()
        failure = self.stdout_failure
        if failure is None or failure.errno == errno.EPIPE:
            return code  # the reader left: nothing went wrong on our side
        say(failure.strerror or str(failure))
        return code if code not in (0, 1) else EXIT_OUTPUT


def _fill_closed_descriptors() -> frozenset[int]:
    closed = set()
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            flags = os.O_RDONLY if fd == 0 else os.O_WRONLY
            opened = os.open(os.devnull, flags)
            if opened != fd:  # the lowest free number is fd itself, unless a lower one is free
                os.dup2(opened, fd)
                os.close(opened)
            closed.add(fd)
    return frozenset(closed)


ESCAPE_ERRORS = "ddp_doctor_escape"


def _escape_unencodable(error: UnicodeError) -> tuple[str, int]:
    """What the output's encoding cannot hold, as `\\uXXXX` (a surrogate pair above U+FFFF):
    readable in text, and the same character to a JSON parser, so `PYTHONIOENCODING=ascii`
    gets a whole report and valid JSON instead of a UnicodeEncodeError."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    out = []
    for char in error.object[error.start : error.end]:
        code = ord(char)
        if code > 0xFFFF:
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out), error.end


codecs.register_error(ESCAPE_ERRORS, _escape_unencodable)


def _text_stream(original, writer: _GuardedWriter, line_buffering: bool) -> io.TextIOWrapper:
    encoding = getattr(original, "encoding", None) or "utf-8"
    errors = getattr(original, "errors", None) or "replace"
    if errors in ("strict", "backslashreplace"):  # PYTHONIOENCODING=ascii, latin-1, C locale
        errors = ESCAPE_ERRORS
    return io.TextIOWrapper(
        io.BufferedWriter(writer),
        encoding=encoding,
        errors=errors,
        line_buffering=line_buffering,
        write_through=not line_buffering,
    )


def _flush_both() -> None:
    """Flush stdout and stderr; a closed or broken one is what `finish` reports, not an error
    here (a loop of try/except rather than `contextlib.suppress`: see scoped.py)."""
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105
            stream.flush()
        except Exception:  # noqa: BLE001, S110
            pass


@scoped
def guarded() -> Iterator[StreamGuard]:
    """Install the guarded streams for the duration of a command; restore them after."""
    closed = _fill_closed_descriptors()
    guard = StreamGuard(closed)
    saved = (sys.stdin, sys.stdout, sys.stderr)
    if 0 in closed or sys.stdin is None:
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "rb", closefd=False), encoding="utf-8")
    for name, fd in (("stdout", 1), ("stderr", 2)):
        original = getattr(sys, name)
        if original is not None and original is not getattr(sys, f"__{name}__"):
            continue  # redirected inside this process (a test's capture): leave it be
        writer = _GuardedWriter(fd, closed_at_start=fd in closed and name == "stdout")
        guard.writers[name] = writer
        # stderr line by line, as Python's own; stdout line by line only on a terminal
        line_buffering = name == "stderr" or os.isatty(fd)
        setattr(sys, name, _text_stream(original, writer, line_buffering))
    try:
        yield guard
    finally:
        _flush_both()
        sys.stdin, sys.stdout, sys.stderr = saved
