"""One DDP error message -> a `Finding`: what the rules' extractors pull out of its lines
and the traceback above it, and the user's own frames in that traceback.

The analyser (`analyser.py`) finds where each message starts and which lines are its own;
this module reads them. Clean lines only (see `normalise.py`), no file, no blocks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from .findings import Finding, UserFrame, dedupe, group_modules
from .namelists import CLOSING, WRAP_WIDTH, is_parameter_name, read_name_list
from .normalise import collapse_space

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..knowledge.kb import Extractor, KnowledgeBase
    from .normalise import Line

BLOCK_LINES = 40  # lines after an anchor that can still belong to the same message
# lines after the anchor line searched for them (other ranks' lines in between are skipped);
# the byte scanner keeps this many lines after every anchor so that no message is cut
MESSAGE_LINES = BLOCK_LINES * 4
TRACEBACK_LINES = 400  # lines before an anchor searched for the traceback
LINES_ABOVE_TRACEBACK = 3  # lines above a traceback that may say which process raised it

TRACEBACK_START = "Traceback (most recent call last)"
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+)$')
_CARETS = re.compile(r"^\s*[~^]+\s*$")
_NUMBERS_ONLY = re.compile(r"^[\d .]+$")
# ranks and versions may be announced before the message (spawn's "-- Process 1
# terminated"), the rest belongs to the message itself
_CONTEXT_FIELDS = ("ranks", "torch_version")


class Extracted:
    """What the rules' extractors pulled out of one message (and the lines before it)."""

    __slots__ = (
        "ranks",
        "unused_parameter_indices",
        "unused_parameter_names",
        "rejected_names",
        "torch_version",
        "names_cut",
        "read_on",
    )

    def __init__(self) -> None:
        self.names_cut = False
        self.read_on = False  # a list read on past the message's own lines
        self.ranks: list[int] = []
        self.unused_parameter_indices: list[int] = []
        self.unused_parameter_names: list[str] = []
        self.rejected_names: list[str] = []
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
            if is_parameter_name(value):
                self.unused_parameter_names.append(value)
            else:
                self.rejected_names.append(value)
        elif extractor_field == "torch_version":
            self.torch_version.append(value)


class MessageReader:
    """Turns one message of a window (its lines, found by the analyser) into a finding."""

    def __init__(self, kb: KnowledgeBase, source: str):
        self.kb = kb
        self.source = source
        self.library = kb.library_paths
        self.continues = False  # set per window by `start_window`
        self._extracted: dict[tuple, Extracted] = {}

    def start_window(self, continues: bool) -> None:
        """A new window; `continues`: the log goes on after it (a window's cut)."""
        self.continues = continues
        self._extracted = {}

    @staticmethod
    def _context(lines: list[Line], index: int, consumed: set[int]) -> list[Line]:
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
            if j in consumed:
                break
            context.append(lines[j])
            if above is not None:
                above -= 1
                if above == 0:
                    break
            elif lines[j].text.lstrip().startswith(TRACEBACK_START):
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
        return dedupe(frames)

    def finding(self, family, lines, index, rank, texts, consumed) -> Finding:  # noqa: PLR0913
        context = self._context(lines, index, consumed)
        context_text = "\n".join(line.text for line in context)

        # a list of names may run on past the message's BLOCK_LINES: the rest of the window,
        # up to MESSAGE_LINES (what the scanner keeps after an anchor)
        # (built only when a list header is met: a log with an error on every line has
        # thousands of messages and no list)
        def after() -> list[str]:
            reach = lines[index + 1 : index + 1 + MESSAGE_LINES]
            return [line.text for line in reach if line.rank == rank][len(texts.lines) - 1 :]

        cut = self.continues or index + 1 + MESSAGE_LINES < len(lines)
        # the same message printed again and again (an error on every line of a log) is
        # read once: what it holds depends on its lines and its context alone, unless a list
        # of names in it ran on past them
        key = (tuple(texts.lines), context_text)
        extracted = self._extracted.get(key)
        if extracted is None:
            extracted = self._extract(texts.lines, context_text, after, cut)
            if not extracted.read_on:
                self._extracted[key] = extracted
        facts: dict[str, Any] = dict(family.sets)
        for rule in family.facts:
            if texts.search(rule.pattern):
                facts.update(rule.sets)
        ranks = list(extracted.ranks)
        if rank is not None:
            ranks.insert(0, rank)
        names = dedupe(n for n in extracted.unused_parameter_names if n)
        enabled = facts.get("find_unused_enabled")
        return Finding(
            family=family.id,
            source=self.source,
            line=lines[index].number,
            ranks=tuple(sorted(set(ranks))),
            unused_parameter_indices=dedupe(extracted.unused_parameter_indices),
            unused_parameter_names=names,
            unused_modules=group_modules(names),
            torch_version=next(iter(extracted.torch_version), None),
            find_unused_parameters_enabled=enabled if isinstance(enabled, bool) else None,
            user_frames=self._user_frames(context),
            quote=lines[index].text.strip()[:300],
            facts=facts,
            rejected_names=dedupe(extracted.rejected_names),
            names_cut=extracted.names_cut,
        )

    def _extract(
        self,
        block_lines: list[str],
        context_text: str,
        after: Callable[[], Sequence[str]] = tuple,
        continues: bool = False,
    ) -> Extracted:
        found = Extracted()
        block_text = "\n".join(block_lines)
        glued = None
        for extractor in self.kb.extractors:
            if _is_name_list(extractor):
                _record_name_lists(found, extractor, block_lines, after, continues)
                continue
            if _is_index_list(extractor):
                _record_index_lists(found, extractor, block_lines)
                continue
            texts = (
                (context_text, block_text) if extractor.field in _CONTEXT_FIELDS else (block_text,)
            )
            matches = [m for text in texts for m in extractor.pattern.finditer(text)]
            if not matches and extractor.field not in _CONTEXT_FIELDS:
                # a terminal's hard wrap inside the value (`aux_head.wei` / `ght did not ...`)
                if glued is None:  # once per message, not once per extractor
                    glued = collapse_space("".join(block_lines))
                matches = list(extractor.pattern.finditer(glued))
            for match in matches:
                _record(found, extractor, match)
        return found


class BlockTexts:
    """The lines of one message, and the two ways to read them as one text: joined with a
    space (a line break between words) and glued (a terminal's hard wrap inside a word,
    `gradi` / `ent`). A pattern matches the message if it matches either."""

    def __init__(self, lines: list[Line], block: list[int]):
        self.lines = [lines[j].text for j in block]
        self.flat = collapse_space("\n".join(self.lines))
        self.glued = collapse_space("".join(self.lines))

    def search(self, pattern: re.Pattern) -> bool:
        return pattern.search(self.flat) is not None or pattern.search(self.glued) is not None


def _is_name_list(extractor: Extractor) -> bool:
    return extractor.field == "unused_parameter_names" and extractor.split == ","


def _record_name_lists(  # noqa: PLR0913
    found: Extracted,
    extractor: Extractor,
    lines: list[str],
    after: Callable[[], Sequence[str]] = tuple,
    continues: bool = False,
) -> None:
    """A list of names may run over the lines after its header (wrapped, bulleted, quoted),
    also past the message's own lines (`after`: the rest of the text read). A list still
    going where the text read ends, when the log `continues`, was cut: its last token may
    be half a name, so it is dropped, never shown or put into code, and the cut is noted."""
    for number, line in enumerate(lines):
        for match in extractor.pattern.finditer(line):
            start = match.start("value") if "value" in extractor.pattern.groupindex else match.end()
            found.read_on = True
            following = [*lines[number + 1 :], *after()]
            names, rejected, still_open, last = read_name_list(line[start:], following, line)
            if still_open and continues:
                found.names_cut = True
                if last and names and names[-1] == last.rstrip(CLOSING).lstrip("\"'`"):
                    names.pop()
            for name in names:
                found.add(extractor.field, name)
            found.rejected_names.extend(rejected)
            _record_rank(found, extractor, match)


def _is_index_list(extractor: Extractor) -> bool:
    return extractor.field == "unused_parameter_indices" and extractor.split == " "


def _record_index_lists(found: Extracted, extractor: Extractor, lines: list[str]) -> None:
    """A list of indices is one line, unless a terminal or a log viewer wrapped it: it goes on
    over the lines that hold only numbers (see `_join_wrapped_numbers`)."""
    width = max(map(len, lines), default=0)  # a hard wrap cuts the message's lines at this width
    for number, line in enumerate(lines):
        for match in extractor.pattern.finditer(line):
            tokens = match.group("value").split()
            previous = line
            for following in lines[number + 1 :]:
                if not following.strip() or not _NUMBERS_ONLY.match(following):
                    break
                tokens = _join_wrapped_numbers(tokens, following, previous, width)
                previous = following
            for part in tokens:
                found.add(extractor.field, part)
            _record_rank(found, extractor, match)


def _join_wrapped_numbers(left: list[str], line: str, left_line: str, width: int) -> list[str]:
    """The tokens of a number list over a line break: is the break inside a number
    (`... 159 16` / `0 161`) or between two (`... 158` / `159 160`)?

    A hard wrap cuts lines at the message's width: a line that ends at that width with a
    digit, followed by one that starts with a digit, was cut inside a number (a space at the
    cut would start the next line, or end this one and leave it a character short). PyTorch
    lists the indices in ascending order, which settles it where the width cannot and vetoes
    a glue that would break the order."""
    right = line.split()
    if not (left and right and len(left_line) >= WRAP_WIDTH and line[:1].isdigit()):
        return left + right
    if not left[-1].isdecimal() or not right[0].isdecimal():
        return left + right
    before = int(left[-2]) if len(left) > 1 and left[-2].isdecimal() else -1
    after = int(right[1]) if len(right) > 1 and right[1].isdecimal() else None
    split_ok = before < int(left[-1]) < int(right[0]) and (after is None or int(right[0]) < after)
    glued = int(left[-1] + right[0])
    glued_ok = before < glued and (after is None or glued < after)
    if split_ok and not glued_ok:
        return left + right
    if len(left_line) == width or (glued_ok and not split_ok):
        return left[:-1] + [left[-1] + right[0]] + right[1:]
    return left + right


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
    _record_rank(found, extractor, match)


def _record_rank(found: Extracted, extractor: Extractor, match: re.Match) -> None:
    """The rank a match names (`... for rank 3: ...`), if its pattern has one; a version
    pattern's `rank` group is not a process rank."""
    if extractor.field != "torch_version" and "rank" in extractor.pattern.groupindex:
        rank = match.group("rank")
        if rank is not None:
            found.add("ranks", rank)
