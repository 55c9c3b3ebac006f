"""Normalised text -> findings: which DDP error a window of a log holds and what it reveals.

The byte scanner (`scanner.py`) finds the few places of a log worth reading and hands each
window, decoded, to `Analyser.analyse`. Everything here works on clean lines (see
`normalise.py`) and the rules' regexes; nothing here reads a file or knows about blocks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from .kb import Extractor, Family, KnowledgeBase
from .normalise import Line, clean_lines, collapse_space
from .record import field, record

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

BLOCK_LINES = 40  # lines after an anchor that can still belong to the same message
# lines after the anchor line searched for them (other ranks' lines in between are skipped);
# the byte scanner keeps this many lines after every anchor so that no message is cut
MESSAGE_LINES = BLOCK_LINES * 4
TRACEBACK_LINES = 400  # lines before an anchor searched for the traceback
LINES_ABOVE_TRACEBACK = 3  # lines above a traceback that may say which process raised it

_TRACEBACK_START = "Traceback (most recent call last)"
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+)$')
_CARETS = re.compile(r"^\s*[~^]+\s*$")
# ranks and versions may be announced before the message (spawn's "-- Process 1
# terminated"), the rest belongs to the message itself
_CONTEXT_FIELDS = ("ranks", "torch_version")


@record
class UserFrame:
    """A traceback frame in the user's own code."""

    file: str
    line: int
    function: str
    code: str


@record
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


class Extracted:
    """What the rules' extractors pulled out of one message (and the lines before it)."""

    __slots__ = ("ranks", "unused_parameter_indices", "unused_parameter_names", "torch_version")

    def __init__(self) -> None:
        self.ranks: list[int] = []
        self.unused_parameter_indices: list[int] = []
        self.unused_parameter_names: list[str] = []
        self.torch_version: list[str] = []

    def add(self, extractor_field: str, value: str) -> None:
        """Record one extracted value under the field its extractor names."""
        if extractor_field == "ranks":
            if value.isdecimal():
                self.ranks.append(int(value))
        elif extractor_field == "unused_parameter_indices":
            # "..." ends a list PyTorch cut after 100 entries; anything else not a number
            # is not an index either
            if value.isdecimal():
                self.unused_parameter_indices.append(int(value))
        elif extractor_field == "unused_parameter_names":
            self.unused_parameter_names.append(value)
        elif extractor_field == "torch_version":
            self.torch_version.append(value)


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


class Analyser:
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
        for j in range(index + 1, min(len(lines), index + 1 + MESSAGE_LINES)):
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
        ranks = list(extracted.ranks)
        if lines[index].rank is not None:
            ranks.insert(0, lines[index].rank)
        names = _dedupe(n for n in extracted.unused_parameter_names if n)
        enabled = facts.get("find_unused_enabled")
        return Finding(
            family=family.id,
            source=self.source,
            line=lines[index].number,
            ranks=tuple(sorted(set(ranks))),
            unused_parameter_indices=_dedupe(extracted.unused_parameter_indices),
            unused_parameter_names=names,
            unused_modules=group_modules(names),
            torch_version=next(iter(extracted.torch_version), None),
            find_unused_parameters_enabled=enabled if isinstance(enabled, bool) else None,
            user_frames=self._user_frames(context),
            quote=lines[index].text.strip()[:300],
            facts=facts,
        )

    def _extract(self, block_text: str, context_text: str) -> Extracted:
        found = Extracted()
        for extractor in self.kb.extractors:
            texts = (
                (context_text, block_text) if extractor.field in _CONTEXT_FIELDS else (block_text,)
            )
            for text in texts:
                for match in extractor.pattern.finditer(text):
                    _record(found, extractor, match)
        return found


def _record(found: Extracted, extractor: Extractor, match: re.Match) -> None:
    """Store what one extractor match says: its value(s), and the rank it names, if any."""
    value = match.group("value") if "value" in extractor.pattern.groupindex else match.group(0)
    if extractor.split is not None:
        parts = value.split(extractor.split) if extractor.split else value.split()
        for part in parts:
            if part.strip():
                found.add(extractor.field, part.strip())
    else:
        found.add(extractor.field, value.strip())
    if extractor.field != "torch_version" and "rank" in extractor.pattern.groupindex:
        rank = match.group("rank")
        if rank is not None:
            found.add("ranks", rank)


# ---------------------------------------------------------------------------- facts


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
