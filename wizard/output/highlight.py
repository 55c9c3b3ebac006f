"""Colours for the code snippets of the terminal report, from the standard library.

rich's `Syntax` highlights through Pygments, whose import and Python lexer cost more start-up
time (~80 ms measured here) than the whole rest of a terminal report. Snippets are short Python
or shell, and a reader needs only comments, strings, numbers and keywords told apart: Python's
own `tokenize` does that. The text is never changed, only styled, so what is copied from the
screen runs as printed.
"""

from __future__ import annotations

import io
import keyword
import tokenize

# (text, style) pieces; "" is the terminal's default colour
Pieces = list[tuple[str, str]]

STYLES = {
    "comment": "bright_black",
    "string": "green",
    "number": "cyan",
    "keyword": "magenta",
    "definition": "bold",
}


def highlight(code: str, language: str) -> Pieces:
    """`code` cut into styled pieces whose texts, joined, are `code` itself."""
    pieces = _python(code) if language == "python" else _shell(code)
    return pieces if "".join(text for text, _ in pieces) == code else [(code, "")]


def _python(code: str) -> Pieces:
    lines = code.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    pieces: Pieces = []
    done = 0  # characters of `code` already in `pieces`
    defining = False
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            style = _style(token, defining)
            if token.type == tokenize.NAME:
                defining = token.string in ("def", "class")
            if not style:  # operators, names, line ends: left in the default colour
                continue
            start = offsets[token.start[0] - 1] + token.start[1]
            end = offsets[token.end[0] - 1] + token.end[1]
            if start < done or end <= start:
                continue
            pieces.append((code[done:start], ""))
            pieces.append((code[start:end], style))
            done = end
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # an unfinished snippet: what was read is styled, the rest stays plain
    pieces.append((code[done:], ""))
    return [(text, style) for text, style in pieces if text]


def _style(token: tokenize.TokenInfo, defining: bool) -> str:
    if token.type == tokenize.COMMENT:
        return STYLES["comment"]
    if token.type == tokenize.STRING:
        return STYLES["string"]
    if token.type == tokenize.NUMBER:
        return STYLES["number"]
    if token.type == tokenize.NAME:
        if keyword.iskeyword(token.string):
            return STYLES["keyword"]
        if defining:
            return STYLES["definition"]
    return ""


def _shell(code: str) -> Pieces:
    """Comments told apart from commands: a `#` that starts a word starts one."""
    pieces: Pieces = []
    for line in code.splitlines(keepends=True):
        at = _comment_start(line)
        if at is None:
            pieces.append((line, ""))
            continue
        body, newline = (line[:-1], "\n") if line.endswith("\n") else (line, "")
        pieces += [(body[:at], ""), (body[at:], STYLES["comment"]), (newline, "")]
    return [(text, style) for text, style in pieces if text]


def _comment_start(line: str) -> int | None:
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return i
    return None
