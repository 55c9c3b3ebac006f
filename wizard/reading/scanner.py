"""Bytes -> the few windows of a log worth reading, streamed with bounded memory.

Logs can be gigabytes of NCCL chatter and progress bars with one error near the end, so the
scan works on raw bytes in large blocks: a literal search for the families' anchors (C
speed, like grep) finds the few places worth reading, and only a window of bytes around
each of them (`windows.py`) is decoded and handed to the text analyser (`analyser.py`).
Memory stays bounded by the block size plus the windows, whatever the log's size.
"""

from __future__ import annotations

import os

from ..knowledge.kb import KnowledgeBase
from .analyser import Analyser
from .findings import Finding
from .windows import Window, Windows

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Callable

    Finder = Callable[[bytes], list[int]]  # where any key starts in a block of bytes

BLOCK_SIZE = 4 << 20  # bytes read at a time
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
    # only a shorter anchor can lie inside another: each is tested against the anchors
    # before the first of its length in length order, by `map` over `__contains__`, with
    # no Python frame per pair (~40 anchors, ~800 pairs; 0.3 ms a run before)
    ordered = sorted(anchors, key=len)
    first: dict[int, int] = {}
    for i, b in enumerate(ordered):
        first.setdefault(len(b), i)
    inside = {a for a in ordered if any(map(a.__contains__, ordered[: first[len(a)]]))}
    return tuple(a for a in anchors if a not in inside)


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


class Scanner:
    """Feed bytes in order; `finish()` gives the findings. Memory stays bounded.

    Each chunk is searched where it lies (no copy of it is made): one `bytes.find` pass per
    anchor (or one pass of a compiled matcher for big inputs), one newline count for line
    numbers (for big inputs in a second thread, at the same time as the compiled matcher:
    see `NewlineCounter`), and a small search over the seam with the previous chunk for an
    anchor cut in two. The windows around the hits are `windows.Windows`; what the start of
    the input says (binary? the torch version?) is `_Head`.
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
        self.windows = Windows()
        self.found: dict[tuple, Finding] = {}
        self.head = _Head()
        self.hit_byte_limit = False
        self.stopped_binary = False  # the first block looked binary: nothing more was read

    @property
    def position(self) -> int:
        """Bytes consumed so far."""
        return self.windows.position

    @property
    def nonblank(self) -> bool:
        return self.head.nonblank

    @property
    def looks_binary(self) -> bool:
        return self.head.looks_binary

    # -- feeding ---------------------------------------------------------------

    def feed(self, chunk: bytes, counter: NewlineCounter | None = None) -> bool:
        """Consume a chunk; False once reading should stop (byte limit, binary input).

        `counter` (see `scan_stream`) counts the chunk's newlines in a second thread while
        the compiled search runs; the result is the same as without it."""
        start = self.position
        if self.max_bytes is not None and start + len(chunk) > self.max_bytes:
            chunk = chunk[: max(0, self.max_bytes - start)]
            self.hit_byte_limit = True
        if not self.accelerate and _NO_BREAK_SPACE in chunk:
            chunk = chunk.replace(_NO_BREAK_SPACE, b" ")
        self.head.take(chunk)
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
        self.windows.take(chunk, self._hits(chunk, found))
        for window, end in self.windows.closed():
            self._analyse(window, end, continues=True)
        self.windows.advance(chunk, chunk.count(b"\n") if newlines is None else newlines)
        if start == 0 and self.looks_binary and not self.windows.open and not self.found:
            self.stopped_binary = True  # decided from the first block, like `file` does
        return not (self.hit_byte_limit or self.stopped_binary)

    def _hits(self, chunk: bytes, found: list[int]) -> list[int]:
        """Offsets (relative to the chunk, negative across the seam) where anchors start,
        given those `found` inside the chunk."""
        hits = set(found)
        tail = self.windows.tail
        if tail and self.overlap:
            seam_before = tail[-self.overlap :]
            seam = bytes(seam_before) + chunk[: self.overlap]
            cut = len(seam_before)
            for anchor in self.anchors:
                at = seam.find(anchor, max(0, cut - len(anchor) + 1))
                while at != -1 and at < cut:  # only the anchors the seam cuts in two
                    hits.add(at - cut)
                    at = seam.find(anchor, at + 1)
        return sorted(hits)

    def _analyse(self, window: Window, end: int, continues: bool = False) -> None:
        first, last = window.owned_lines(end)
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
        for window, end, continues in self.windows.remaining():
            self._analyse(window, end, continues)
        findings = list(self.found.values()) or self._findings_in_restored_case()
        version = self.head.torch_version(self.kb)
        if version:
            findings = [_with_version(f, version) for f in findings]
        return findings

    def _findings_in_restored_case(self) -> list[Finding]:
        """For a short input in which nothing was found: the findings in it once the rules'
        wording typed in another case is given back its own (see anycase.py)."""
        head = self.head.data
        if not self.position or self.position > len(head) or self.looks_binary:
            return []  # nothing read, or more than the head holds: a log, not typed text
        from .anycase import quoted_as_typed, restore_case, wording_pieces

        typed = bytes(head)
        restored = restore_case(typed, wording_pieces(self.kb))
        if restored is None:
            return []
        again = Scanner(self.kb, self.source, accelerate=False)
        again.feed(restored)
        text = typed.decode("utf-8", "replace")
        return [quoted_as_typed(f, text) for f in again.finish()]


class _Head:
    """The first HEAD_SIZE bytes of the input: whether it is text at all, and the torch
    version a log often states at its start."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.control_count = 0
        self.nonblank = False

    def take(self, chunk: bytes) -> None:
        if len(self.data) < HEAD_SIZE:
            taken = chunk[: HEAD_SIZE - len(self.data)]
            self.data += taken
            self.control_count += len(taken) - len(taken.translate(None, _CONTROL_BYTES))
        if not self.nonblank and chunk and not chunk.isspace():
            self.nonblank = True

    @property
    def looks_binary(self) -> bool:
        # text, even GBK or Latin-1, has almost no C0 control bytes; random data has ~11%
        return bool(self.data) and self.control_count > len(self.data) // 20

    def torch_version(self, kb: KnowledgeBase) -> str | None:
        text = self.data.decode("utf-8", errors="replace")
        for extractor in kb.extractors:
            if extractor.field == "torch_version":
                match = extractor.pattern.search(text)
                if match:
                    return (match.groupdict().get("value") or match.group(0)).strip()
        return None


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
