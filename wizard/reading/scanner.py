"""Bytes -> the few windows of a log worth reading, streamed with bounded memory.

Logs can be gigabytes of NCCL chatter and progress bars with one error near the end, so the
scan works on raw bytes in large blocks: a literal search for the families' anchors (C
speed, like grep) finds the few places worth reading, and only a window of bytes around
each of them is decoded and handed to the text analyser (`analyser.py`). Memory stays
bounded by the block size plus the windows, whatever the log's size.
"""

from __future__ import annotations

import os

from ..knowledge.kb import KnowledgeBase
from .analyser import MESSAGE_LINES, Analyser, Finding

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Callable

    Finder = Callable[[bytes], list[int]]  # where any key starts in a block of bytes

BLOCK_SIZE = 4 << 20  # bytes read at a time
CONTEXT_BEFORE = 48 << 10  # bytes kept before an anchor: the traceback that led to it
MAX_AFTER = 1 << 20  # a message longer than this after its anchor (one huge line) is cut
MAX_REGION = 4 << 20  # a window owning anchors over more bytes (an error every line) is split
HEAD_SIZE = 64 << 10  # the start of a log often says the torch version
MAX_FINDINGS = 200  # distinct findings kept; repeats are counted instead
# From this many bytes on, a compiled multi-pattern matcher (Hyperscan, when its wheel is
# installed) replaces the one-pass-per-anchor search; below it, importing and compiling it
# costs more than it saves.
ACCELERATE_FROM = 8 << 20
NO_ACCEL_ENV = "DDP_DOCTOR_NO_ACCEL"  # set: always use the pure-Python search

# A paste copied from a web page (a blog's code block, a rendered issue) often spells its
# spaces as U+00A0 (UTF-8 C2 A0): the anchors are plain text, so such a paste is read with
# plain spaces. Logs a job writes hold none; big inputs (the compiled search) are not rewritten.
_NO_BREAK_SPACE = "\u00a0".encode()
_CONTROL_BYTES = bytes(b for b in range(256) if b < 32 and b not in (9, 10, 13, 27) or b == 127)


def _search_keys(kb: KnowledgeBase) -> tuple[bytes, ...]:
    """The byte strings the scan looks for: every anchor, less those containing another.

    Each key costs one pass over every block, so an anchor that contains a shorter anchor
    (which finds it anyway) is dropped.
    """
    anchors = dict.fromkeys(a.encode("utf-8") for f in kb.families for a in f.anchors if a)
    return tuple(a for a in anchors if not any(b != a and b in a for b in anchors))


def _pure_finder(keys: tuple[bytes, ...]) -> Finder:
    """Where any key starts in `data`: one `bytes.find` pass per key (C speed, no deps)."""

    def starts(data: bytes) -> list[int]:
        found: list[int] = []
        for key in keys:
            at = data.find(key)
            while at != -1:
                found.append(at)
                at = data.find(key, at + 1)
        return found

    return starts


_ACCELERATED: dict[tuple[bytes, ...], Finder | None] = {}


def _accelerated_finder(keys: tuple[bytes, ...]) -> Finder | None:
    """The same search in one pass with Hyperscan, or None where it is not installed.

    Hyperscan reports every end offset of every key, overlapping ones included, which is
    exactly what the pure finder's `find(key, at + 1)` loop yields (a property test checks
    both agree). Compiled once per process and set of keys.
    """
    if keys in _ACCELERATED:
        return _ACCELERATED[keys]
    finder = None
    if keys and not os.environ.get(NO_ACCEL_ENV):
        finder = _compile_hyperscan(keys)
    _ACCELERATED[keys] = finder
    return finder


def _compile_hyperscan(keys: tuple[bytes, ...]) -> Finder | None:
    try:
        import hyperscan
    except ImportError:
        return None
    # every byte written as \xHH: a literal whatever the key holds
    expressions = ["".join(f"\\x{b:02x}" for b in key).encode() for key in keys]
    try:
        database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        database.compile(
            expressions=expressions, ids=list(range(len(keys))), elements=len(keys), flags=0
        )
    except Exception:  # an optional accelerator (a CPU without SSSE3...) never breaks a run
        return None
    lengths = [len(key) for key in keys]

    def starts(data: bytes) -> list[int]:
        found: list[int] = []
        if data:

            def on_match(key_id, _start, end, _flags, _context):
                found.append(end - lengths[key_id])

            database.scan(data, match_event_handler=on_match)
        return found

    return starts


class _Window:
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


_WORD_SEPARATORS = (b" ", b"\t", b",", b";", b"\n", b"\r")


class Scanner:
    """Feed bytes in order; `finish()` gives the findings. Memory stays bounded.

    Each chunk is searched where it lies (no copy of it is made): one `bytes.find` pass per
    anchor (or one pass of a compiled matcher for big inputs), one newline count for line
    numbers (for big inputs in a second thread, at the same time as the compiled matcher:
    see `NewlineCounter`), and a small search over the seam with the previous chunk for an
    anchor cut in two. The bytes before the chunk that a window may need are kept in `tail`.
    """

    def __init__(
        self,
        kb: KnowledgeBase,
        source: str = "<stdin>",
        max_bytes: int | None = None,
        accelerate: bool | None = None,
    ):
        """`accelerate`: None switches to the compiled matcher (if installed) once the input
        passes ACCELERATE_FROM bytes; True uses it from the first byte; False never."""
        self.kb = kb
        self.source = source
        self.max_bytes = max_bytes
        self.anchors = _search_keys(kb)
        self.find_anchors = self._pure = _pure_finder(self.anchors)
        self.accelerate = accelerate
        if accelerate:
            self.find_anchors = _accelerated_finder(self.anchors) or self.find_anchors
        self.overlap = max((len(a) for a in self.anchors), default=1) - 1
        self.analyser = Analyser(kb, source)
        # the latest bytes before the next chunk: at least CONTEXT_BEFORE of them (once the
        # log is that long) and at most about twice that, trimmed in amortised steps so that
        # feeding a line at a time (`ddp-doctor run`) does not copy the tail every time
        self.tail = bytearray()
        self.tail_start = 0
        self.tail_first_line = 1  # line number at tail_start
        self.position = 0  # bytes consumed so far
        self.newlines = 0  # newlines before `position`
        # open windows, oldest first: at most two (one finishing its last message after a
        # cut at MAX_REGION, one collecting)
        self.windows: list[_Window] = []
        self.claimed_to = 0  # lines starting before this offset belong to a closed window
        self.found: dict[tuple, Finding] = {}
        self.head = bytearray()
        self.control_count = 0
        self.nonblank = False
        self.hit_byte_limit = False
        self.stopped_binary = False  # the first block looked binary: nothing more was read

    # -- feeding ---------------------------------------------------------------

    def feed(self, chunk: bytes, counter: NewlineCounter | None = None) -> bool:
        """Consume a chunk; False once reading should stop (byte limit, binary input).

        `counter` (see `scan_stream`) counts the chunk's newlines in a second thread while
        the compiled search runs; the result is the same as without it."""
        if self.max_bytes is not None and self.position + len(chunk) > self.max_bytes:
            chunk = chunk[: max(0, self.max_bytes - self.position)]
            self.hit_byte_limit = True
        if not self.accelerate and _NO_BREAK_SPACE in chunk:
            chunk = chunk.replace(_NO_BREAK_SPACE, b" ")
        if len(self.head) < HEAD_SIZE:
            taken = chunk[: HEAD_SIZE - len(self.head)]
            self.head += taken
            self.control_count += len(taken) - len(taken.translate(None, _CONTROL_BYTES))
        if not self.nonblank and chunk and not chunk.isspace():
            self.nonblank = True
        start = self.position
        if self.accelerate is None and start + len(chunk) > ACCELERATE_FROM:
            self.accelerate = True  # decided once
            self.find_anchors = _accelerated_finder(self.anchors) or self.find_anchors
        if counter is not None and self.find_anchors is not self._pure:
            # the compiled search releases the GIL, bytes.count does not: the newline
            # count runs in the counter's thread while this one searches, on two cores
            counter.submit(chunk)
            found = self.find_anchors(chunk)
            newlines = counter.result()
        else:
            found = self.find_anchors(chunk)
            newlines = None
        for hit in self._hits(chunk, found):
            self._on_anchor(chunk, start, start + hit)
        for window in self.windows:
            self._fill(window, chunk, start)
        self._close_finished()
        self.position += len(chunk)
        self.newlines += chunk.count(b"\n") if newlines is None else newlines
        self._advance_tail(chunk)
        if start == 0 and self.looks_binary and not self.windows and not self.found:
            self.stopped_binary = True  # decided from the first block, like `file` does
        return not (self.hit_byte_limit or self.stopped_binary)

    def _hits(self, chunk: bytes, found: list[int]) -> list[int]:
        """Offsets (relative to the chunk, negative across the seam) where anchors start,
        given those `found` inside the chunk."""
        hits = set(found)
        if self.tail and self.overlap:
            seam_before = self.tail[-self.overlap :]
            seam = bytes(seam_before) + chunk[: self.overlap]
            cut = len(seam_before)
            for anchor in self.anchors:
                at = seam.find(anchor, max(0, cut - len(anchor) + 1))
                while at != -1 and at < cut:  # only the anchors the seam cuts in two
                    hits.add(at - cut)
                    at = seam.find(anchor, at + 1)
        return sorted(hits)

    @staticmethod
    def _fill(window: _Window, data: bytes | bytearray, data_start: int) -> None:
        """Append the part of `data` (which starts at `data_start`) the window still wants."""
        begin = window.collected_to - data_start
        end = min(window.wanted_to() - data_start, len(data))
        if 0 <= begin < end:
            window.data += data[begin:end]

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
        window = self.windows[-1] if self.windows else None
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
        window = _Window(start, self._line_at(start, chunk), own_from, at)
        self._fill(window, self.tail, self.tail_start)
        self._fill(window, chunk, chunk_start)
        self.windows.append(window)

    def _advance_tail(self, chunk: bytes) -> None:
        """Keep the last CONTEXT_BEFORE bytes or more; `position` is already past `chunk`."""
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

    def _close_finished(self) -> None:
        """Analyse the windows whose last message is whole (oldest first)."""
        while self.windows:
            end = self.windows[0].message_end()
            if end is None:
                return
            self._analyse(self.windows.pop(0), end, continues=True)

    def _analyse(self, window: _Window, end: int, continues: bool = False) -> None:
        first, last = window.owned_lines(end)
        self.claimed_to = max(self.claimed_to, window.own_to or end)
        text = window.text(end)
        for finding in self.analyser.analyse(text, window.first_line, continues):
            if not first <= finding.line <= last:
                continue  # context: a neighbouring window owns (and counts) it
            key = finding.identity()
            if key in self.found:
                old = self.found[key]
                self.found[key] = _with_occurrences(old, old.occurrences + 1)
            elif len(self.found) < MAX_FINDINGS:
                self.found[key] = finding

    # -- results ---------------------------------------------------------------

    def finish(self) -> list[Finding]:
        while self.windows:
            window = self.windows.pop(0)
            end = window.message_end() or window.collected_to
            # a window cut by its own limits, not by the end of the log
            self._analyse(window, end, continues=end < window.collected_to)
        findings = list(self.found.values()) or self._findings_in_restored_case()
        version = self._version_from_head()
        if version:
            findings = [_with_version(f, version) for f in findings]
        return findings

    def _findings_in_restored_case(self) -> list[Finding]:
        """For a short input in which nothing was found: the findings in it once the rules'
        wording typed in another case is given back its own (see anycase.py)."""
        if not self.position or self.position > len(self.head) or self.looks_binary:
            return []  # nothing read, or more than the head holds: a log, not typed text
        from .anycase import quoted_as_typed, restore_case, wording_pieces

        typed = bytes(self.head)
        restored = restore_case(typed, wording_pieces(self.kb))
        if restored is None:
            return []
        again = Scanner(self.kb, self.source, accelerate=False)
        again.feed(restored)
        text = typed.decode("utf-8", "replace")
        return [quoted_as_typed(f, text) for f in again.finish()]

    def _version_from_head(self) -> str | None:
        text = self.head.decode("utf-8", errors="replace")
        for extractor in self.kb.extractors:
            if extractor.field == "torch_version":
                match = extractor.pattern.search(text)
                if match:
                    return (match.groupdict().get("value") or match.group(0)).strip()
        return None

    @property
    def looks_binary(self) -> bool:
        # text, even GBK or Latin-1, has almost no C0 control bytes; random data has ~11%
        return bool(self.head) and self.control_count > len(self.head) // 20


def _with_occurrences(finding: Finding, count: int) -> Finding:
    from ..common.record import replace

    return replace(finding, occurrences=count)


def _with_version(finding: Finding, version: str) -> Finding:
    from ..common.record import replace

    return finding if finding.torch_version else replace(finding, torch_version=version)


class NewlineCounter:
    """A thread that counts the newlines of one block while the caller searches it.

    Hyperscan's scan releases the GIL and `bytes.count` holds it, so the caller searches
    in its own thread and this one counts: the two run on two cores at once. The other way
    round (the count in the caller) stalls: the worker would wait for the GIL through the
    whole count before it could start its scan.

    With `read_ahead` (a regular file's reader), the thread then reads the next block, while
    the caller handles the hits of this one; `next_block()` gives it.
    """

    def __init__(self, read_ahead: Callable[[], bytes] | None = None) -> None:
        import threading
        from queue import SimpleQueue

        self.read_ahead = read_ahead
        self.reading = False  # a block is being read ahead: next_block() gives it
        self._blocks: SimpleQueue = SimpleQueue()
        self._counts: SimpleQueue = SimpleQueue()
        self._read: SimpleQueue = SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="ddp-doctor-count", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            job = self._blocks.get()
            if job is None:
                return
            block, read = job
            try:
                self._counts.put(block.count(b"\n"))
            except BaseException as exc:  # MemoryError...: raised again in the caller
                self._counts.put(exc)
            if read is not None:
                try:
                    self._read.put(read())
                except BaseException as exc:  # OSError...: raised again in the caller
                    self._read.put(exc)

    def submit(self, block: bytes) -> None:
        self._blocks.put((block, self.read_ahead))
        self.reading = self.read_ahead is not None

    def result(self) -> int:
        return _raised(self._counts.get())

    def next_block(self) -> bytes:
        self.reading = False
        return _raised(self._read.get())

    def close(self) -> None:
        self._blocks.put(None)
        self._thread.join()


def _raised(value):
    if isinstance(value, BaseException):
        raise value
    return value


def _several_cpus() -> bool:
    try:
        return len(os.sched_getaffinity(0)) > 1
    except (AttributeError, OSError):
        return (os.cpu_count() or 1) > 1


def scan_stream(
    kb: KnowledgeBase,
    stream: IO[bytes],
    source: str,
    max_bytes: int | None = None,
    progress: Callable[[int], None] | None = None,
    size: int | None = None,
) -> Scanner:
    """Scan a whole stream. `size` is given for a regular file only: a big one uses the
    compiled search from its first byte instead of from ACCELERATE_FROM on, and its next
    block is read (in the counter's thread) while this one is handled."""
    limit = size if max_bytes is None or size is None else min(size, max_bytes)
    scanner = Scanner(
        kb, source, max_bytes, accelerate=True if limit and limit > ACCELERATE_FROM else None
    )
    counter = None

    def read() -> bytes:
        return stream.read(BLOCK_SIZE)

    try:
        while True:
            chunk = counter.next_block() if counter is not None and counter.reading else read()
            if not chunk:
                break
            if (
                counter is None
                and (scanner.accelerate or scanner.position + len(chunk) > ACCELERATE_FROM)
                and _accelerated_finder(scanner.anchors) is not None
                and _several_cpus()
            ):
                # a regular file is read a block ahead: reading past a stop (byte limit,
                # binary) costs nothing there, unlike a pipe that may never end
                counter = NewlineCounter(read if size is not None else None)
            if not scanner.feed(chunk, counter):
                break
            if progress is not None:
                progress(scanner.position)
    finally:
        if counter is not None:
            counter.close()
    return scanner
