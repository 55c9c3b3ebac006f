"""Text or stream -> Findings: which DDP errors a log holds and what they reveal.

Logs can be gigabytes of NCCL chatter and progress bars with one error near the end, so the
scan works on raw bytes in large blocks: a literal search for the families' anchors (C
speed, like grep) finds the few places worth reading, and only a window of bytes around
each of them is decoded, normalised and matched with the rules' regexes. Memory stays
bounded by the block size plus the windows, whatever the log's size.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any, Callable

from .kb import Family, KnowledgeBase
from .normalise import Line, clean_lines, collapse_space

BLOCK_SIZE = 4 << 20  # bytes read at a time
CONTEXT_BEFORE = 48 << 10  # bytes kept before an anchor: the traceback that led to it
CONTEXT_AFTER = 24 << 10  # bytes kept after an anchor: the rest of the message
MAX_REGION = 4 << 20  # a window that keeps growing (an error repeated every step) is cut here
HEAD_SIZE = 64 << 10  # the start of a log often says the torch version
MAX_FINDINGS = 200  # distinct findings kept; repeats are counted instead
BLOCK_LINES = 40  # lines after an anchor that can still belong to the same message
TRACEBACK_LINES = 400  # lines before an anchor searched for the traceback
LINES_ABOVE_TRACEBACK = 3  # lines above a traceback that may say which process raised it

_CONTROL_BYTES = bytes(b for b in range(256) if b < 32 and b not in (9, 10, 13, 27) or b == 127)
_TRACEBACK_START = "Traceback (most recent call last)"
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+)$')
_CARETS = re.compile(r"^\s*[~^]+\s*$")


@dataclass(frozen=True)
class UserFrame:
    """A traceback frame in the user's own code."""

    file: str
    line: int
    function: str
    code: str


@dataclass(frozen=True)
class Finding:
    """One DDP error found in a log, with what it reveals."""

    family: str
    source: str
    line: int
    ranks: tuple[int, ...]
    unused_parameter_indices: tuple[int, ...]
    unused_parameter_names: tuple[str, ...]
    unused_modules: tuple[str, ...]
    torch_version: str | None
    find_unused_parameters_enabled: bool | None
    user_frames: tuple[UserFrame, ...]
    quote: str  # the line that names the error, as the user will recognise it
    facts: Mapping[str, Any] = field(default_factory=dict)
    occurrences: int = 1

    def identity(self) -> tuple:
        """Two findings with the same identity are the same error printed twice."""
        return (
            self.family,
            self.source,
            self.ranks,
            self.unused_parameter_indices,
            self.unused_parameter_names,
        )


@dataclass(frozen=True)
class TriageResult:
    """All findings of one triage, merged over its sources."""

    findings: tuple[Finding, ...]
    facts: Mapping[str, Any]
    bytes_read: int
    looks_binary: bool
    hit_byte_limit: bool
    sources: tuple[str, ...]

    @property
    def unused_modules(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for finding in self.findings:
            for module in finding.unused_modules:
                seen.setdefault(module, None)
        return tuple(seen)


# ---------------------------------------------------------------------------- helpers


def module_of(parameter_name: str) -> str:
    """`decoder.aux_head.weight` -> `decoder.aux_head`; a top-level parameter -> itself."""
    name = parameter_name.strip()
    if name.startswith("module."):  # the DDP wrapper's own prefix says nothing about the model
        name = name[len("module.") :]
    return name.rsplit(".", 1)[0] if "." in name else name


def group_modules(names: Iterable[str]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for name in names:
        seen.setdefault(module_of(name), None)
    return tuple(seen)


def _dedupe(values: Iterable) -> tuple:
    return tuple(dict.fromkeys(values))


# ---------------------------------------------------------------------------- analysis


class _Analyser:
    """Reads one decoded window of a log and turns it into findings."""

    def __init__(self, kb: KnowledgeBase, source: str):
        self.kb = kb
        self.source = source
        self.prefixes = kb.line_prefixes
        self.library = kb.library_paths

    def analyse(self, text: str, first_line: int) -> list[Finding]:
        lines = clean_lines(text, self.prefixes, first_line)
        findings: list[Finding] = []
        anchored = {i: self._families(line) for i, line in enumerate(lines)}
        anchored = {i: fams for i, fams in anchored.items() if fams}
        consumed: set[int] = set()
        for index, families in anchored.items():
            if index in consumed:
                continue
            for family in families:  # rules order: the first family that matches wins
                block = self._block(lines, index, family, anchored)
                joined = "\n".join(lines[j].text for j in block)
                flat = collapse_space(joined)
                if any(p.search(flat) for p in family.patterns):
                    consumed.update(block)
                    finding = self._finding(family, lines, index, block, joined, flat, anchored)
                    findings.append(finding)
                    break
        return findings

    def _families(self, line: Line) -> list[Family]:
        return [f for f in self.kb.families if any(a in line.text for a in f.anchors)]

    @staticmethod
    def _block(
        lines: list[Line], index: int, family: Family, anchored: dict[int, list[Family]]
    ) -> list[int]:
        """Indices of the anchor line and the lines after it that continue its message.

        The message ends where another error starts: a traceback, a line anchoring another
        family, or the same message printed again. Lines of other ranks are skipped, since
        launchers interleave the ranks' output.
        """
        rank = lines[index].rank
        opening = {a for a in family.anchors if a in lines[index].text}
        block = [index]
        for j in range(index + 1, min(len(lines), index + 1 + BLOCK_LINES * 4)):
            line = lines[j]
            if line.rank != rank:
                continue
            if line.text.lstrip().startswith(_TRACEBACK_START):
                break
            if j in anchored and (
                family not in anchored[j] or any(a in line.text for a in opening)
            ):
                break
            block.append(j)
            if len(block) >= BLOCK_LINES:
                break
        return block

    @staticmethod
    def _context(lines: list[Line], index: int, anchored: Mapping[int, Any]) -> list[Line]:
        """Same-rank lines before the anchor, back to the start of its traceback and the
        few lines above it (spawn's "-- Process 1 terminated with the following error:").

        An earlier error message ends it too: its lines belong to that error, and an error
        repeated on every line would otherwise cost TRACEBACK_LINES of regex work each."""
        rank = lines[index].rank
        context: list[Line] = []
        above = None  # lines still taken once the traceback's start is reached
        for j in range(index - 1, max(-1, index - 1 - TRACEBACK_LINES), -1):
            if lines[j].rank != rank:
                continue
            if j in anchored:
                break
            context.append(lines[j])
            if above is not None:
                above -= 1
                if above == 0:
                    break
            elif lines[j].text.lstrip().startswith(_TRACEBACK_START):
                above = LINES_ABOVE_TRACEBACK
        context.reverse()
        return context

    def _user_frames(self, context: list[Line]) -> tuple[UserFrame, ...]:
        frames: list[UserFrame] = []
        for i, line in enumerate(context):
            match = _FRAME.match(line.text)
            if not match or self.library.search(match.group("file")):
                continue
            code = ""
            if i + 1 < len(context):
                following = context[i + 1].text
                if not _FRAME.match(following) and not _CARETS.match(following):
                    code = following.strip()
            frames.append(
                UserFrame(
                    match.group("file"),
                    int(match.group("line")),
                    match.group("function").strip(),
                    code,
                )
            )
        return _dedupe(frames)

    def _finding(self, family, lines, index, block, joined, flat, anchored) -> Finding:  # noqa: PLR0913
        context = self._context(lines, index, anchored)
        context_text = "\n".join(line.text for line in context)
        extracted = self._extract(joined, context_text)
        facts: dict[str, Any] = dict(family.sets)
        for rule in family.facts:
            if rule.pattern.search(flat):
                facts.update(rule.sets)
        for hint in self.kb.hints:
            if hint.pattern.search(context_text) or hint.pattern.search(joined):
                facts.update(hint.sets)
        ranks = list(extracted["ranks"])
        if lines[index].rank is not None:
            ranks.insert(0, lines[index].rank)
        names = _dedupe(n for n in extracted["unused_parameter_names"] if n)
        enabled = facts.get("find_unused_enabled")
        return Finding(
            family=family.id,
            source=self.source,
            line=lines[index].number,
            ranks=tuple(sorted(set(ranks))),
            unused_parameter_indices=tuple(
                _dedupe(int(i) for i in extracted["unused_parameter_indices"] if i.isdigit())
            ),
            unused_parameter_names=names,
            unused_modules=group_modules(names),
            torch_version=next(iter(extracted["torch_version"]), None),
            find_unused_parameters_enabled=enabled if isinstance(enabled, bool) else None,
            user_frames=self._user_frames(context),
            quote=lines[index].text.strip()[:300],
            facts=facts,
        )

    def _extract(self, block_text: str, context_text: str) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {
            "ranks": [],
            "unused_parameter_indices": [],
            "unused_parameter_names": [],
            "torch_version": [],
        }
        for extractor in self.kb.extractors:
            # ranks and versions may be announced before the message (spawn's
            # "-- Process 1 terminated"), the rest belongs to the message itself
            texts = (
                (context_text, block_text) if extractor.field in _CONTEXT_FIELDS else (block_text,)
            )
            for text in texts:
                for match in extractor.pattern.finditer(text):
                    value = (
                        match.group("value")
                        if "value" in extractor.pattern.groupindex
                        else match.group(0)
                    )
                    if extractor.split is not None:
                        parts = value.split(extractor.split) if extractor.split else value.split()
                        found[extractor.field].extend(p.strip() for p in parts if p.strip())
                    else:
                        found[extractor.field].append(value.strip())
                    if (
                        extractor.field != "torch_version"
                        and "rank" in extractor.pattern.groupindex
                    ):
                        rank = match.group("rank")
                        if rank is not None:
                            found["ranks"].append(rank)
        found["ranks"] = [r for r in found["ranks"] if r.isdigit()]
        found["ranks"] = [int(r) for r in found["ranks"]]  # type: ignore[misc]
        # "..." ends a list PyTorch cut after 100 entries
        found["unused_parameter_indices"] = [
            i for i in found["unused_parameter_indices"] if i != "..."
        ]
        return found


_CONTEXT_FIELDS = ("ranks", "torch_version")


# ---------------------------------------------------------------------------- scanning


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
    """Feed bytes in order; `result()` gives the findings. Memory stays bounded.

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
        self.analyser = _Analyser(kb, source)
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


# ---------------------------------------------------------------------------- public API


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


def summarise(kb: KnowledgeBase, scanners: list[Scanner]) -> TriageResult:
    """Merge the findings of every source into one result with the facts they imply."""
    findings = [f for s in scanners for f in s.finish()]
    order = {family.id: i for i, family in enumerate(kb.families)}
    findings.sort(key=lambda f: (order.get(f.family, 99), f.source, f.ranks, f.line))
    return TriageResult(
        findings=tuple(findings),
        facts=facts_from_findings(findings),
        bytes_read=sum(s.position for s in scanners),
        looks_binary=any(s.looks_binary for s in scanners) and not findings,
        hit_byte_limit=any(s.hit_byte_limit for s in scanners),
        sources=tuple(s.source for s in scanners),
    )


def facts_from_findings(findings: list[Finding]) -> dict[str, Any]:
    """What the engine may take as known from the text alone.

    `findings` must be sorted by family priority (the rules' order): the first one names
    the problem.
    """
    facts: dict[str, Any] = {}
    if not findings:
        return facts
    for finding in reversed(findings):  # the most important finding's facts win
        facts.update(finding.facts)
    facts["family"] = findings[0].family
    for finding in findings:
        facts[f"seen_{finding.family}"] = True
    facts["has_param_names"] = any(f.unused_parameter_names for f in findings)
    facts["has_param_indices"] = any(f.unused_parameter_indices for f in findings)
    enabled = [f.find_unused_parameters_enabled for f in findings]
    if any(e is not None for e in enabled):
        facts["find_unused_enabled"] = any(e for e in enabled if e is not None)
    facts["ranks_disagree"] = _ranks_disagree(findings)
    return facts


def _ranks_disagree(findings: list[Finding]) -> bool:
    """Different ranks (or files) naming different unused parameters: a rank-dependent branch."""
    per_rank: dict[tuple, set] = {}
    for finding in findings:
        if not (finding.unused_parameter_names or finding.unused_parameter_indices):
            continue
        key = (finding.source, finding.ranks)
        names = finding.unused_parameter_names or tuple(map(str, finding.unused_parameter_indices))
        per_rank.setdefault(key, set()).update(names)
    return len({frozenset(v) for v in per_rank.values()}) > 1


def triage_text(kb: KnowledgeBase, text: str, source: str = "<paste>") -> TriageResult:
    scanner = Scanner(kb, source)
    scanner.feed(text.encode("utf-8", errors="replace"))
    return summarise(kb, [scanner])
