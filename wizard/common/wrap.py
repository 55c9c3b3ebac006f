"""Line breaking that treats Chinese as Chinese: a break may fall between any two CJK
characters, not only at spaces.

rich breaks lines at whitespace only, so a run of Chinese (which has no spaces) counts as
one long word and moves to the next line whole, leaving the line before it half empty.
`line_spans` finds the breaks itself (greedy, by terminal cells); the renderer cuts its
styled text at them, and rich never needs to break a line again. Pure standard library.
"""

from __future__ import annotations

import unicodedata

# no line may start with these (closing punctuation) or end with those (opening)
_NO_BREAK_BEFORE = set("，。、；：？！）」』”’》〉】…—,.;:?!)]}%·")
_NO_BREAK_AFTER = set("（「『“‘《〈【([{")


def cell_width(ch: str) -> int:
    """Terminal cells of one character: 2 for wide (CJK, full-width), 0 for combining."""
    if unicodedata.combining(ch) or ch in "\u200b\u200d":
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def text_width(text: str) -> int:
    return sum(cell_width(ch) for ch in text)


def _is_wide(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in ("W", "F")


def _can_break_between(left: str, right: str) -> bool:
    """A break between two non-space characters: only where one of them is CJK."""
    if right in _NO_BREAK_BEFORE or left in _NO_BREAK_AFTER:
        return False
    return _is_wide(left) or _is_wide(right)


def line_spans(text: str, width: int) -> list[tuple[int, int]]:
    """(start, end) of each line when `text` (one paragraph, no newlines) is set `width`
    cells wide. Spaces at a break are dropped; nothing else is lost. A word wider than the
    line is cut at the width (there is no better place)."""
    width = max(width, 2)
    spans: list[tuple[int, int]] = []
    start, n = 0, len(text)
    while start < n:
        while start < n and text[start] == " ":  # a line never starts with a space
            start += 1
        if start >= n:
            break
        used, i, last_break = 0, start, -1  # last_break: index where the next line may start
        while i < n:
            w = cell_width(text[i])
            after_word = i > start and text[i - 1] != " "
            if text[i] == " " or (after_word and _can_break_between(text[i - 1], text[i])):
                last_break = i
            if used + w > width and text[i] != " ":
                break
            used += w
            i += 1
        if i >= n:
            spans.append((start, n))
            break
        cut = last_break if last_break > start else i  # no opportunity: cut at the width
        end = cut
        while end > start and text[end - 1] == " ":
            end -= 1
        spans.append((start, end))
        start = cut
    return spans


def wrap(text: str, width: int) -> list[str]:
    """Plain-string form of `line_spans`, paragraph by paragraph."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        spans = line_spans(paragraph, width)
        lines += [paragraph[a:b] for a, b in spans] or [""]
    return lines


def wrap_fragments(fragments: list[tuple[str, str]], width: int) -> list[tuple[str, str]]:
    """Styled fragments (prompt_toolkit's `(style, text)` pairs) broken into lines of
    `width` cells, on words (and between CJK characters), never inside a word: a prompt
    that the terminal would otherwise cut mid-word at its edge ("Severa / l tasks").

    Breaks are found on the joined text; each fragment keeps its style, and a space at a
    break is dropped. Newlines already in the text start a new line as they are."""
    text = "".join(part for _, part in fragments)
    styles = [style for style, part in fragments for _ in part]
    out: list[tuple[str, str]] = []
    offset = 0
    for number, paragraph in enumerate(text.split("\n")):
        if number:
            out.append(("", "\n"))
        for line, (start, end) in enumerate(line_spans(paragraph, width)):
            if line:
                out.append(("", "\n"))
            for i in range(offset + start, offset + end):  # one fragment per style run
                if out and out[-1][0] == styles[i] and out[-1][1] != "\n":
                    out[-1] = (styles[i], out[-1][1] + text[i])
                else:
                    out.append((styles[i], text[i]))
        offset += len(paragraph) + 1
    return out
