"""Lists of parameter names as logs print them: comma-separated, wrapped by a terminal,
bulleted or quoted, one name a line; what is a name and what is only text.

Works on clean lines (see `normalise.py`); knows nothing of the rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..common.lazy_regex import LazyRegex
from .normalise import LOST

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .normalise import Line

MIN_LIST_ITEMS = 3  # a line of this many comma-separated names is a list

# PyTorch names parameters by attribute path: dotted identifiers (`decoder.0.weight`), ASCII
# in practice; Chinese text glued to a name after a lost line break ("weight结束") is not one
# (compiled on first use, as the other two: most logs hold no list of names)
_PARAMETER_NAME = LazyRegex(r"[A-Za-z_]\w*(?:\.\w+)*", re.ASCII)
# (?<!\s): a search over a long run of spaces starts only once, not at every space
_LIST_TOKEN = LazyRegex(r"(?<!\s)\s*([^\s,]+)")
_BULLET = LazyRegex(r"^\s*(?:[-*\u2022]|\d{1,3}[.)])\s+")
CLOSING = "\"'`.;:)]}>"
WRAP_WIDTH = 60  # a line this long that ends inside a name was cut by the terminal


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
        token = raw.rstrip(CLOSING).lstrip("\"'`") if last else raw
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
        wrapped = len(previous) >= WRAP_WIDTH
        if wrapped or LOST in carry:
            state.rejected.append(carry)
        else:
            state.accept(carry, last=True)
        if wrapped or LOST in first:
            state.rejected.append(first)
            return after
        return line
    glued = carry + token.group(1)
    if len(previous) >= WRAP_WIDTH and ends_item and is_parameter_name(glued.rstrip(CLOSING)):
        return glued + after
    state.accept(carry, last=True)
    if ends_item and is_parameter_name(token.group(1).rstrip(CLOSING)):
        return line  # one name per line
    return None


def inside_a_list(lines: list[Line], index: int) -> bool:
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
        elif is_parameter_name(words[0].rstrip(CLOSING).lstrip("\"'`")):
            state.accept(words[0], last=True)
            return "end"
        else:
            state.rejected.append(chunk.strip())
            if comma < 0:
                return "end"
        position = comma + 1
