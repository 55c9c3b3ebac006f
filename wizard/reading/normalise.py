"""Turn raw log text into clean lines tagged with the rank that printed them.

What a user pastes has been through terminals and launchers: ANSI colours, carriage-return
progress bars, `[rank3]:` / `[default0]:` prefixes, timestamps. The rules' regexes are
written against clean text, so everything passes through here first. Which prefixes exist
is knowledge, so their patterns come from the rules (`line_prefixes` in signatures.yaml).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ..common.lazy_regex import LazyRegex
from ..common.record import record

# ECMA-48 CSI sequences (colours, cursor moves) and OSC sequences (titles, hyperlinks).
_ANSI = LazyRegex(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]?")
_LINE_BREAK = LazyRegex(r"\r\n|\r|\n")
_CONTROL = LazyRegex(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# A control character (NUL, a bare CR) between two characters of a name (word or dot)
# stands where a character was lost or overwritten: `model.head.weight\0evil` is neither
# `model.head.weightevil` nor `model.head.weight`. U+FFFD marks the spot (on both sides of a
# CR, which still breaks the line), so no name is glued from the two parts: tokens holding
# it are text, never names.
LOST = "\ufffd"
_GLUING_CONTROL = LazyRegex(r"(?<=[\w.])[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]+(?=[\w.])")
_GLUING_CR = LazyRegex(r"(?<=[\w.])\r(?=[\w.])")


@record
class Line:
    """One cleaned line of a log."""

    number: int  # 1-based line number in the source, for "file:line" references
    rank: int | None  # from a launcher prefix, when there was one
    text: str


def _ANY(_text: str) -> bool:
    return True


def strip_ansi(text: str) -> str:
    if "\x1b" not in text:  # every sequence starts with ESC: most logs have none
        return text
    return _ANSI.sub("", text)


def collapse_space(text: str) -> str:
    """One space for any run of whitespace: C++ messages break lines mid-sentence."""
    # `str.split()` splits at the characters `\s` matches (both read Py_UNICODE_ISSPACE), so
    # this is `re.sub(r"\s+", " ", text).strip()` without a regex
    return " ".join(text.split())


def strip_prefixes(text: str, prefixes: Sequence[re.Pattern]) -> tuple[int | None, str]:
    """Remove launcher/logging prefixes (possibly several, e.g. timestamp then rank)."""
    rank: int | None = None
    changed = True
    while changed:
        changed = False
        for pattern in prefixes:
            match = pattern.match(text)
            if match and match.end() > 0:
                if "rank" in pattern.groupindex and match.group("rank") is not None:
                    rank = int(match.group("rank"))
                text = text[match.end() :]
                changed = True
    return rank, text


def clean_lines(text: str, prefixes: Sequence[re.Pattern], first_number: int = 1) -> list[Line]:
    """Split `text` into normalised lines; `first_number` is the source line of its start."""
    lines: list[Line] = []
    text = strip_ansi(text)
    # a text without control characters keeps none after the next line: each line then
    # needs no `_CONTROL.sub`
    has_control = _CONTROL.search(text) is not None
    if "\r" in text or has_control:
        text = _GLUING_CR.sub(LOST + "\r" + LOST, _GLUING_CONTROL.sub(LOST, text))
    # a prefix whose needed text is nowhere in the window cannot start a line of it (and a
    # rules prefix not compiled yet then never is: see kb.LazyPattern)
    prefixes = [p for p in prefixes if getattr(p, "could_match", _ANY)(text)]
    number = first_number
    for match in _iter_lines(text):
        raw, ends_with_cr = match
        rank, body = strip_prefixes(_CONTROL.sub("", raw) if has_control else raw, prefixes)
        if "\\n" in body or "<br" in body or "<BR" in body:
            for part in _escaped_lines(body):
                lines.append(Line(number, rank, part.rstrip()))
        else:
            lines.append(Line(number, rank, body.rstrip()))
        if not ends_with_cr:  # a bare CR (progress bar) does not start a new source line
            number += 1
    return lines


# A message logged as one JSON string or Python repr ("...producing loss.\\nParameters which
# did not receive grad...") or copied from HTML ("<br>") keeps its line breaks as text. Two
# or more in one line, each before a capital, a space, a bracket or the end, are read as the
# breaks they stand for; a Windows path (C:\\new\\nets) has them before small letters.
# A pattern string, compiled by `re` on first use: most logs have none.
_ESCAPED_BREAK = r"\\r\\n|\\n(?=[A-Z\s\[\\]|$)|<[bB][rR]\s*/?>"


def _escaped_lines(body: str) -> list[str]:
    parts = re.split(_ESCAPED_BREAK, body)
    if len(parts) < 3:
        return [body]
    return [p.replace('\\"', '"').replace("\\'", "'").replace("\\t", " ") for p in parts]


def _iter_lines(text: str) -> Iterable[tuple[str, bool]]:
    if "\r" not in text:  # only "\n" breaks it: `split`, without the regex
        parts = text.split("\n")
        last = parts.pop()
        for part in parts:
            yield part, False
        if last:  # what follows the last break, if anything does
            yield last, False
        return
    start = 0
    for brk in _LINE_BREAK.finditer(text):
        yield text[start : brk.start()], brk.group() == "\r"
        start = brk.end()
    if start < len(text):
        yield text[start:], False
