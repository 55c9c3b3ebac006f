"""The windows of a log worth reading: byte ranges around the anchors the search found,
collected as blocks arrive, with the line numbers they start at.

The scanner (`scanner.py`) searches each block and hands the hits here; `Windows` keeps the
bytes before the block that a new window may need (the traceback that led to an error) and
gives back each window once its last message is whole, for the analyser to read.
"""

from __future__ import annotations

from .message import MESSAGE_LINES

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

CONTEXT_BEFORE = 48 << 10  # bytes kept before an anchor: the traceback that led to it
MAX_AFTER = 1 << 20  # a message longer than this after its anchor (one huge line) is cut
MAX_REGION = 4 << 20  # a window owning anchors over more bytes (an error every line) is split

_WORD_SEPARATORS = (b" ", b"\t", b",", b";", b"\n", b"\r")


class Window:
    """A byte range of the log around one or more anchors, collected as blocks arrive.

    The window *owns* the lines that start from `own_from` on (up to `own_to`, where the
    next window takes over): only findings on those lines count. The bytes before are
    context (the traceback), the bytes after its last anchor the rest of the last message.
    A neighbouring window may read the same bytes but never counts them, so each message is
    counted once, and a window ends only where its last message has ended.
    """

    def __init__(self, start: int, first_line: int, own_from: int, anchor: int):
        self.start, self.first_line, self.own_from = start, first_line, own_from
        self.own_to: int | None = None  # where a later window takes over; None: the end
        self.data = bytearray()
        self.own(anchor)

    @property
    def collected_to(self) -> int:
        return self.start + len(self.data)

    def own(self, anchor: int) -> None:
        """Take the anchor at byte `anchor` (later than the ones owned so far)."""
        self.last_anchor = anchor
        self.scan_at = anchor  # where counting line ends after the last anchor resumes
        self.line_ends = 0

    def wanted_to(self) -> int:
        """Bytes past this offset are never needed (see `message_end`)."""
        return self.last_anchor + MAX_AFTER

    def message_end(self) -> int | None:
        """Where the window may end, or None while the last message may go on.

        The last owned message ends at most MESSAGE_LINES lines after its anchor line (the
        analyser looks no further), so the window ends after that many line ends. A message
        that goes on for MAX_AFTER bytes without them (one enormous line) is cut after the
        last whole word, never inside a name.
        """
        data = self.data
        while self.line_ends <= MESSAGE_LINES:
            at = data.find(b"\n", self.scan_at - self.start)
            if at == -1:
                break
            self.line_ends += 1
            self.scan_at = self.start + at + 1
        if self.line_ends > MESSAGE_LINES:
            return self.scan_at
        if self.collected_to >= self.wanted_to():
            return self._word_end()
        return None

    def _word_end(self) -> int:
        begin = self.last_anchor - self.start
        limit = self.wanted_to() - self.start
        cut = max(self.data.rfind(sep, begin, limit) for sep in _WORD_SEPARATORS)
        return self.start + cut + 1 if cut > begin else self.start + limit

    def text(self, end: int) -> str:
        return bytes(self.data[: end - self.start]).decode("utf-8", errors="replace")

    def owned_lines(self, end: int) -> tuple[int, int]:
        """First and last line numbers (1-based) this window owns, its text ending at `end`.

        A line belongs to the window that owns the byte it starts at."""
        own_from, own_to = self.own_from - self.start, (self.own_to or end) - self.start
        first = self.first_line + self.data.count(b"\n", 0, own_from)
        if own_from > 0 and self.data[own_from - 1 : own_from] != b"\n":
            first += 1  # own_from is inside a line that started earlier
        last = self.first_line + self.data.count(b"\n", 0, max(0, own_to - 1))
        return first, last


class Windows:
    """The open windows and the bytes before the next block, with the line numbers.

    `tail` holds the latest bytes before the next chunk: at least CONTEXT_BEFORE of them
    (once the log is that long) and at most about twice that, trimmed in amortised steps so
    that feeding a line at a time (`ddp-doctor run`) does not copy the tail every time.
    """

    def __init__(self) -> None:
        self.tail = bytearray()
        self.tail_start = 0
        self.tail_first_line = 1  # line number at tail_start
        self.position = 0  # bytes consumed so far
        self.newlines = 0  # newlines before `position`
        # open windows, oldest first: at most two (one finishing its last message after a
        # cut at MAX_REGION, one collecting)
        self.open: list[Window] = []
        self.claimed_to = 0  # lines starting before this offset belong to a closed window

    def take(self, chunk: bytes, hits: list[int]) -> None:
        """The chunk at `position`, with the anchors found in it (offsets relative to it)."""
        start = self.position
        for hit in hits:
            self._on_anchor(chunk, start, start + hit)
        for window in self.open:
            _fill(window, chunk, start)

    def closed(self) -> Iterator[tuple[Window, int]]:
        """The windows whose last message is whole (oldest first), each with its end."""
        while self.open:
            end = self.open[0].message_end()
            if end is None:
                return
            yield self._close(end), end

    def remaining(self) -> Iterator[tuple[Window, int, bool]]:
        """At the end of the log: every open window, its end, and whether it was cut by its
        own limits rather than by the end of the log."""
        while self.open:
            window = self.open[0]
            end = window.message_end() or window.collected_to
            yield self._close(end), end, end < window.collected_to

    def _close(self, end: int) -> Window:
        window = self.open.pop(0)
        self.claimed_to = max(self.claimed_to, window.own_to or end)
        return window

    def advance(self, chunk: bytes, newlines: int) -> None:
        """Move past `chunk`, which holds `newlines` line ends."""
        self.position += len(chunk)
        self.newlines += newlines
        if len(chunk) >= CONTEXT_BEFORE:
            self.tail = bytearray(chunk[-CONTEXT_BEFORE:])
            self.tail_start = self.position - CONTEXT_BEFORE
            self.tail_first_line = self.newlines + 1 - self.tail.count(b"\n")
            return
        self.tail += chunk
        excess = len(self.tail) - CONTEXT_BEFORE
        if excess > CONTEXT_BEFORE:
            self.tail_first_line += self.tail.count(b"\n", 0, excess)
            del self.tail[:excess]
            self.tail_start += excess

    def _line_at(self, offset: int, chunk: bytes) -> int:
        """The 1-based line number at byte `offset` of the log (in the tail or the chunk)."""
        if offset >= self.position:
            return self.newlines + 1 + chunk.count(b"\n", 0, offset - self.position)
        return self.tail_first_line + self.tail.count(b"\n", 0, offset - self.tail_start)

    def _line_start(self, offset: int, chunk: bytes) -> int:
        """The offset where the line holding byte `offset` starts (as far as the tail goes)."""
        if offset >= self.position:
            at = chunk.rfind(b"\n", 0, offset - self.position)
            if at != -1:
                return self.position + at + 1
            offset = self.position
        at = self.tail.rfind(b"\n", 0, offset - self.tail_start)
        return self.tail_start + at + 1 if at != -1 else self.tail_start

    def _on_anchor(self, chunk: bytes, chunk_start: int, at: int) -> None:
        window = self.open[-1] if self.open else None
        if window is not None:
            span = at - window.own_from
            if span <= MAX_REGION or (
                span <= 2 * MAX_REGION and self._line_start(at, chunk) <= window.last_anchor
            ):  # a line too (no line end since the last anchor) is never split, up to a point
                window.own(at)
                return
        # A new window. An open one that owns too much already (an error repeated on every
        # line for megabytes) hands over here but stays open until its last message is whole.
        start = max(self.tail_start, at - CONTEXT_BEFORE)
        own_from = max(start, self.claimed_to, self._line_start(at, chunk))
        if window is not None:
            window.own_to = own_from
        window = Window(start, self._line_at(start, chunk), own_from, at)
        _fill(window, self.tail, self.tail_start)
        _fill(window, chunk, chunk_start)
        self.open.append(window)


def _fill(window: Window, data: bytes | bytearray, data_start: int) -> None:
    """Append the part of `data` (which starts at `data_start`) the window still wants."""
    begin = window.collected_to - data_start
    end = min(window.wanted_to() - data_start, len(data))
    if 0 <= begin < end:
        window.data += data[begin:end]
