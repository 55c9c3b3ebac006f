"""Normalised text -> findings: which DDP error a window of a log holds and what it reveals.

The byte scanner (`scanner.py`) finds the few places of a log worth reading and hands each
window, decoded, to `Analyser.analyse`. Everything here works on clean lines (see
`normalise.py`) and the rules' regexes; nothing here reads a file or knows about blocks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from ..common.record import field, record, replace
from ..knowledge.kb import Extractor, Family, KnowledgeBase
from .normalise import LOST, Line, clean_lines, collapse_space

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
MIN_LIST_ITEMS = 3  # a line of this many comma-separated names is a list
MIN_RUN_FROM_ZERO = 4  # indices 0..N, at least this many, read as "everything up to N"

_TRACEBACK_START = "Traceback (most recent call last)"
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+)$')
_CARETS = re.compile(r"^\s*[~^]+\s*$")
# ranks and versions may be announced before the message (spawn's "-- Process 1
# terminated"), the rest belongs to the message itself
_CONTEXT_FIELDS = ("ranks", "torch_version")


@record
class RankError:
    """The last line of another rank's traceback, the first one in the text."""

    rank: int
    line: int  # in the source
    text: str


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
    # text in a parameter list that is not a dotted identifier: quoted back to the user as
    # text, never used as a name (a name ends up in code the user is told to run)
    rejected_names: tuple[str, ...] = ()
    # another rank failed first: its own error may be the cause of this one
    other_rank_error: RankError | None = None
    # the list of names goes on past the text read (a window of a long log, a list longer
    # than the analyser reads): `unused_parameter_names` holds the names up to the cut
    names_cut: bool = False

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


# ---------------------------------------------------------------------------- names

# PyTorch names parameters by attribute path: dotted identifiers (`decoder.0.weight`), ASCII
# in practice; Chinese text glued to a name after a lost line break ("weight结束") is not one
_PARAMETER_NAME = re.compile(r"[A-Za-z_]\w*(?:\.\w+)*", re.ASCII)
# (?<!\s): a search over a long run of spaces starts only once, not at every space
_LIST_TOKEN = re.compile(r"(?<!\s)\s*([^\s,]+)")
_NUMBERS_ONLY = re.compile(r"^[\d .]+$")
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d{1,3}[.)])\s+")
_CLOSING = "\"'`.;:)]}>"
_WRAP_WIDTH = 60  # a line this long that ends inside a name was cut by the terminal


def is_parameter_name(text: str) -> bool:
    """A dotted identifier, the only shape of a PyTorch parameter name; anything else from a
    log (`head;__import__('os')...`, backticks, spaces) is text, never a name."""
    return _PARAMETER_NAME.fullmatch(text) is not None


class _ListState:
    """Where the reading of one list of names stands."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.rejected: list[str] = []
        self.carry = ""  # the last token of a line that ended inside the list, no comma after
        self.open = True  # the list goes on on the next line (it ended with a comma)

    def accept(self, raw: str, last: bool) -> None:
        token = raw.rstrip(_CLOSING).lstrip("\"'`") if last else raw
        (self.names if is_parameter_name(token) else self.rejected).append(token or raw)


def parse_name_list(
    first: str, following: Iterable[str], first_line: str | None = None
) -> tuple[list[str], list[str]]:
    """Names and rejected tokens of a list (see `read_name_list`)."""
    names, rejected, _, _ = read_name_list(first, following, first_line)
    return names, rejected


def read_name_list(
    first: str, following: Iterable[str], first_line: str | None = None
) -> tuple[list[str], list[str], bool, str]:
    """Names in a comma-separated parameter list that may run over several lines.

    `first` is the text after the list's header, `following` the lines after it. The list
    goes on while a line ends with a comma, while lines start with a bullet, and across a
    terminal's hard wrap in the middle of a name; it ends at the first token not followed by
    a comma (text glued on after a lost line break: `a.weight Parameter indices ...`).
    `first_line` is the whole line `first` ends (header included): its length tells a hard
    wrap. Returns (names, rejected tokens, open, last): `open` when the lines ran out with
    the list still going (a comma, or a token that may go on, at the very end); `last` is
    that last token, already counted among the names: if the text goes on past `following`,
    it may be the first part of a name cut in two.
    """
    state = _ListState()
    if _scan_list_line(first, state) == "end":
        return state.names, state.rejected, False, ""
    previous = first if first_line is None else first_line
    for line in following:
        original = line  # its length tells a hard wrap, whatever is glued to it below
        bullet = _BULLET.match(line)
        if state.carry:
            glued = _glue(state, previous, line)
            if glued is None:
                break
            line = glued
        elif bullet:
            line = line[bullet.end() :]
        elif not state.open or not _starts_item(line):
            break
        if _scan_list_line(line, state) == "end":
            return state.names, state.rejected, False, ""
        previous = original
    else:
        carry = state.carry
        if carry:
            state.accept(carry, last=True)
        return state.names, state.rejected, bool(carry) or state.open, carry
    if state.carry:
        state.accept(state.carry, last=True)
    return state.names, state.rejected, False, ""


def _glue(state: _ListState, previous: str, line: str) -> str | None:
    """The next line, with the carried token of the previous one put back in front of it.

    A long line cut inside a name (`...layers.2` / `3.attention...`) continues without a
    space; a short line holding one name is a one-name-per-line list. None: the list ended.
    """
    token = _LIST_TOKEN.match(line)
    bullet = _BULLET.match(line)
    carry, state.carry = state.carry, ""
    if line.lstrip().startswith(","):  # the wrap fell just before the comma after a name
        state.accept(carry, last=False)
        return line.lstrip()[1:]
    if token is None or bullet:
        state.accept(carry, last=True)
        return line[bullet.end() :] if bullet else None
    after = line[token.end() :]
    ends_item = not after.strip() or after.lstrip().startswith(",")
    first = token.group(1)
    if LOST in carry or LOST in first:
        # a character lost or overwritten here (normalise.py): pieces of text, never glued
        # into a name, and across a hard wrap neither piece is a name; the list goes on
        wrapped = len(previous) >= _WRAP_WIDTH
        if wrapped or LOST in carry:
            state.rejected.append(carry)
        else:
            state.accept(carry, last=True)
        if wrapped or LOST in first:
            state.rejected.append(first)
            return after
        return line
    glued = carry + token.group(1)
    if len(previous) >= _WRAP_WIDTH and ends_item and is_parameter_name(glued.rstrip(_CLOSING)):
        return glued + after
    state.accept(carry, last=True)
    if ends_item and is_parameter_name(token.group(1).rstrip(_CLOSING)):
        return line  # one name per line
    return None


def _inside_a_list(lines: list[Line], index: int) -> bool:
    """The line just above (same rank, or no rank) ends a list of names: the message this line
    belongs to started above, out of view (a window of a long log that begins inside a 40 KB
    list), so this line must not start a message of its own."""
    if index == 0:
        return False
    above = lines[index - 1]  # a line cut by the window's start has lost its rank prefix
    if above.rank not in (lines[index].rank, None) or "," not in above.text:
        return False
    items = [item.strip() for item in above.text.split(",")]
    # the first item may be a name cut in two by the window's start
    return len(items) >= MIN_LIST_ITEMS and all(is_parameter_name(i) for i in items[1:] if i)


def _starts_item(line: str) -> bool:
    """The line begins with one list item (a name followed by a comma or the line's end),
    not with a sentence (`Parameter indices which ...`)."""
    token = _LIST_TOKEN.match(line)
    if token is None:
        return False
    after = line[token.end() :]
    return not after.strip() or after.lstrip().startswith(",")


def _scan_list_line(line: str, state: _ListState) -> str:
    """Consume the names of one line. 'end': the list ended on it; 'more': it may go on.

    Items are what lies between commas. One word is a name (or rejected text); a name followed
    by more words is the last item (a sentence glued on after a lost line break); anything
    else is rejected as a whole, and the list goes on after the next comma.
    """
    position = 0
    state.open = False
    while True:
        comma = line.find(",", position)
        chunk = line[position:] if comma < 0 else line[position:comma]
        words = chunk.split()
        if not words:
            if comma < 0:  # the line ended right after a comma (or holds nothing)
                state.open = position > 0 or not line.strip()
                return "more"
        elif len(words) == 1 and comma < 0:  # may go on after a terminal's hard wrap
            state.carry = words[0]
            return "more"
        elif len(words) == 1:
            state.accept(words[0], last=False)
        elif is_parameter_name(words[0].rstrip(_CLOSING).lstrip("\"'`")):
            state.accept(words[0], last=True)
            return "end"
        else:
            state.rejected.append(chunk.strip())
            if comma < 0:
                return "end"
        position = comma + 1


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
        self.continues = False  # set per window by `analyse`
        self._extracted: dict[tuple, Extracted] = {}

    def analyse(self, text: str, first_line: int, continues: bool = False) -> list[Finding]:
        """The findings in `text`; `continues`: the log goes on after it (a window's cut), so
        a list of names still open at its end was cut there."""
        self.continues = continues
        self._extracted: dict[tuple, Extracted] = {}
        lines = clean_lines(text, self.prefixes, first_line)
        findings: list[Finding] = []
        anchored = {i: self._families(line) for i, line in enumerate(lines)}
        anchored = {i: fams for i, fams in anchored.items() if fams}
        consumed: set[int] = set()
        window_facts: dict[str, Any] | None = None
        rank_errors: list[RankError] | None = None  # read once per window, when needed
        for index, families in anchored.items():
            if index in consumed or _inside_a_list(lines, index):
                continue
            for family in families:  # rules order: the first family that matches wins
                block, rank = self._block(lines, index, family, anchored)
                if not self._starts_message(lines, index, block, family, anchored):
                    continue
                consumed.update(block)
                if window_facts is None:
                    window_facts = self._window_facts(lines)
                if rank_errors is None:
                    rank_errors = self._rank_errors(lines, anchored)
                texts = _BlockTexts(lines, block)
                finding = self._finding(family, lines, index, rank, texts, consumed)
                findings.append(
                    replace(
                        finding,
                        facts={**window_facts, **finding.facts},
                        other_rank_error=_first_of_another_rank(rank_errors, rank),
                    )
                )
                break
        return findings

    @staticmethod
    def _starts_message(lines, index, block, family, anchored) -> bool:  # noqa: PLR0913
        """A family's pattern matches from the anchor's line on, before the next line that
        anchors the same family: a traceback frame naming DDP's check, or the last line of
        one message, must not take the message below it."""
        head = []
        for j in block:
            if j != index and family in anchored.get(j, ()):
                break
            head.append(j)
        texts = _BlockTexts(lines, head)
        return any(texts.search(pattern) for pattern in family.patterns)

    def _rank_errors(self, lines: list[Line], anchored: dict[int, list[Family]]) -> list[RankError]:
        """The traceback lines of the window that a rank prefix names, in order: errors of
        their own, not the DDP errors the rules know (those are findings)."""
        return [
            RankError(line.rank, line.number, line.text.strip()[:300])
            for j, line in enumerate(lines)
            if line.rank is not None and j not in anchored and self.kb.error_line.search(line.text)
        ]

    def _window_facts(self, lines: list[Line]) -> dict[str, Any]:
        """Facts the text around an error reveals (`hints`): a framework's frames, a
        checkpoint warning printed before the traceback, LoRA names, launch flags."""
        text = "\n".join(line.text for line in lines)
        facts: dict[str, Any] = {}
        for hint in self.kb.hints:
            if hint.pattern.search(text):
                facts.update(hint.sets)
        return facts

    def _families(self, line: Line) -> list[Family]:
        return [f for f in self.kb.families if any(a in line.text for a in f.anchors)]

    @staticmethod
    def _block(
        lines: list[Line], index: int, family: Family, anchored: dict[int, list[Family]]
    ) -> tuple[list[int], int | None]:
        """Indices of the anchor line and the lines after it that continue its message, and
        the rank that printed it.

        The message ends where another error starts: a traceback, a line anchoring another
        family, or the same message printed again. Lines of other ranks are skipped, since
        launchers interleave the ranks' output. A message copied from its first line has no
        rank prefix there but on the lines after it: it takes the rank of the next line.
        """
        rank = lines[index].rank
        opening = {a for a in family.anchors if a in lines[index].text}
        if rank is None and index + 1 < len(lines):
            following = lines[index + 1]
            if not any(a in following.text for a in opening):  # not the next rank's message
                rank = following.rank
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
        return block, rank

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

    def _finding(self, family, lines, index, rank, texts, consumed) -> Finding:  # noqa: PLR0913
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
            rejected_names=_dedupe(extracted.rejected_names),
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


class _BlockTexts:
    """The lines of one message, and the two ways to read them as one text: joined with a
    space (a line break between words) and glued (a terminal's hard wrap inside a word,
    `gradi` / `ent`). A pattern matches the message if it matches either."""

    def __init__(self, lines: list[Line], block: list[int]):
        self.lines = [lines[j].text for j in block]
        self.flat = collapse_space("\n".join(self.lines))
        self.glued = collapse_space("".join(self.lines))

    def search(self, pattern: re.Pattern) -> bool:
        return pattern.search(self.flat) is not None or pattern.search(self.glued) is not None


def _first_of_another_rank(errors: list[RankError], rank: int | None) -> RankError | None:
    """The first error a rank other than `rank` printed; none when the ranks cannot be told
    apart (no rank prefix on the error's line)."""
    if rank is None:
        return None
    return next((e for e in errors if e.rank != rank), None)


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
                if last and names and names[-1] == last.rstrip(_CLOSING).lstrip("\"'`"):
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
    if not (left and right and len(left_line) >= _WRAP_WIDTH and line[:1].isdigit()):
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
    facts["indices_from_zero"] = any(_indices_from_zero(f) for f in findings)
    return facts


def _indices_from_zero(finding: Finding) -> bool:
    """Every parameter from index 0 to the last one listed got no gradient: a whole stack of
    layers cut off from the loss, not one forgotten module."""
    indices = finding.unused_parameter_indices
    return len(indices) >= MIN_RUN_FROM_ZERO and set(indices) == set(range(max(indices) + 1))


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
