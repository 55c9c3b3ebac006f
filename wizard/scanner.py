"""Bytes -> the few windows of a log worth reading, streamed with bounded memory.

Logs can be gigabytes of NCCL chatter and progress bars with one error near the end, so the
scan works on raw bytes in large blocks: a literal search for the families' anchors (C
speed, like grep) finds the few places worth reading, and only a window of bytes around
each of them is decoded and handed to the text analyser (`analyser.py`). Memory stays
bounded by the block size plus the windows, whatever the log's size.
"""

from __future__ import annotations

from typing import IO, Callable

from .analyser import Analyser, Finding
from .kb import KnowledgeBase

BLOCK_SIZE = 4 << 20  # bytes read at a time
CONTEXT_BEFORE = 48 << 10  # bytes kept before an anchor: the traceback that led to it
CONTEXT_AFTER = 24 << 10  # bytes kept after an anchor: the rest of the message
MAX_REGION = 4 << 20  # a window that keeps growing (an error repeated every step) is cut here
HEAD_SIZE = 64 << 10  # the start of a log often says the torch version
MAX_FINDINGS = 200  # distinct findings kept; repeats are counted instead

_CONTROL_BYTES = bytes(b for b in range(256) if b < 32 and b not in (9, 10, 13, 27) or b == 127)


def _search_keys(kb: KnowledgeBase) -> tuple[bytes, ...]:
    """The byte strings the scan looks for: every anchor, less those containing another.

    Each key costs one pass over every block, so an anchor that contains a shorter anchor
    (which finds it anyway) is dropped.
    """
    anchors = dict.fromkeys(a.encode("utf-8") for f in kb.families for a in f.anchors if a)
    return tuple(a for a in anchors if not any(b != a and b in a for b in anchors))


class _Window:
    """A byte range of the log around one or more anchors, collected as blocks arrive."""

    def __init__(self, start: int, end: int, first_line: int, data: bytes):
        self.start, self.end, self.first_line = start, end, first_line
        self.data = bytearray(data)

    @property
    def collected_to(self) -> int:
        return self.start + len(self.data)


class Scanner:
    """Feed bytes in order; `finish()` gives the findings. Memory stays bounded.

    Each chunk is searched where it lies (no copy of it is made): one `bytes.find` pass per
    anchor, one newline count for line numbers, and a small search over the seam with the
    previous chunk for an anchor cut in two. The bytes before the chunk that a window may
    need are kept in `tail`.
    """

    def __init__(
        self,
        kb: KnowledgeBase,
        source: str = "<stdin>",
        max_bytes: int | None = None,
    ):
        self.kb = kb
        self.source = source
        self.max_bytes = max_bytes
        self.anchors = _search_keys(kb)
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
        self.window: _Window | None = None
        self.found: dict[tuple, Finding] = {}
        self.head = bytearray()
        self.control_count = 0
        self.nonblank = False
        self.hit_byte_limit = False

    # -- feeding ---------------------------------------------------------------

    def feed(self, chunk: bytes) -> bool:
        """Consume a chunk; False once the byte limit is reached (stop reading)."""
        if self.max_bytes is not None and self.position + len(chunk) > self.max_bytes:
            chunk = chunk[: max(0, self.max_bytes - self.position)]
            self.hit_byte_limit = True
        if len(self.head) < HEAD_SIZE:
            taken = chunk[: HEAD_SIZE - len(self.head)]
            self.head += taken
            self.control_count += len(taken) - len(taken.translate(None, _CONTROL_BYTES))
        if not self.nonblank and chunk and not chunk.isspace():
            self.nonblank = True
        start = self.position
        for hit in self._hits(chunk):
            self._on_anchor(chunk, start, start + hit)
        if self.window is not None:
            self._fill(self.window, chunk, start)
            if self.window.collected_to >= self.window.end or len(self.window.data) > MAX_REGION:
                self._close_window()
        self.position += len(chunk)
        self.newlines += chunk.count(b"\n")
        self._advance_tail(chunk)
        return not self.hit_byte_limit

    def _hits(self, chunk: bytes) -> list[int]:
        """Offsets (relative to the chunk, negative across the seam) where anchors start."""
        hits: set[int] = set()
        for anchor in self.anchors:
            at = chunk.find(anchor)
            while at != -1:
                hits.add(at)
                at = chunk.find(anchor, at + 1)
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
        end = min(window.end - data_start, len(data))
        if 0 <= begin < end:
            window.data += data[begin:end]

    def _line_at(self, offset: int, chunk: bytes) -> int:
        """The 1-based line number at byte `offset` of the log (in the tail or the chunk)."""
        if offset >= self.position:
            return self.newlines + 1 + chunk.count(b"\n", 0, offset - self.position)
        return self.tail_first_line + self.tail.count(b"\n", 0, offset - self.tail_start)

    def _on_anchor(self, chunk: bytes, chunk_start: int, at: int) -> None:
        window = self.window
        if window is not None and at - CONTEXT_BEFORE <= window.end:
            window.end = max(window.end, at + CONTEXT_AFTER)
            return
        if window is not None:
            self._fill(window, chunk, chunk_start)
            self._close_window()
        start = max(self.tail_start, at - CONTEXT_BEFORE)
        self.window = _Window(start, at + CONTEXT_AFTER, self._line_at(start, chunk), b"")
        self._fill(self.window, self.tail, self.tail_start)
        self._fill(self.window, chunk, chunk_start)

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

    def _close_window(self) -> None:
        window, self.window = self.window, None
        if window is None:
            return
        data = bytes(window.data[: window.end - window.start])
        text = data.decode("utf-8", errors="replace")
        for finding in self.analyser.analyse(text, window.first_line):
            key = finding.identity()
            if key in self.found:
                old = self.found[key]
                self.found[key] = _with_occurrences(old, old.occurrences + 1)
            elif len(self.found) < MAX_FINDINGS:
                self.found[key] = finding

    # -- results ---------------------------------------------------------------

    def finish(self) -> list[Finding]:
        self._close_window()
        findings = list(self.found.values())
        version = self._version_from_head()
        if version:
            findings = [_with_version(f, version) for f in findings]
        return findings

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
    from dataclasses import replace

    return replace(finding, occurrences=count)


def _with_version(finding: Finding, version: str) -> Finding:
    from dataclasses import replace

    return finding if finding.torch_version else replace(finding, torch_version=version)


def scan_stream(
    kb: KnowledgeBase,
    stream: IO[bytes],
    source: str,
    max_bytes: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> Scanner:
    scanner = Scanner(kb, source, max_bytes)
    while True:
        chunk = stream.read(BLOCK_SIZE)
        if not chunk:
            break
        if not scanner.feed(chunk):
            break
        if progress is not None:
            progress(scanner.position)
    return scanner
