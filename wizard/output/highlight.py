"""Colours for the code snippets of the terminal report, from the standard library.

rich's `Syntax` highlights through Pygments, whose import and Python lexer cost more start-up
time (~80 ms measured here) than the whole rest of a terminal report. Snippets are short Python
or shell, and a reader needs only comments, strings, numbers and keywords told apart. Python's
own `tokenize` tells them apart too, but importing it and compiling its token regex on first
use cost ~2.5 ms of every terminal report; one small regex does the same for the snippets
(tests/test_highlight.py compares the two on every snippet the rules hold). The text is never
changed, only styled, so what is copied from the screen runs as printed.
"""

from __future__ import annotations

import keyword
import re

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


# One token at a time, as `tokenize` reads them: a comment, a string (any prefix, triple
# quotes included), a name (a keyword, or the name after `def`/`class`), a number. Whatever
# else (operators, spaces) is left in the default colour.
_TOKEN = re.compile(
    r"(?P<comment>#[^\r\n]*)"
    r"|(?P<string>(?:[rRbBuUfF]|[rR][bBfF]|[bBfF][rR])?"
    r"(?:'''[\s\S]*?'''|\"\"\"[\s\S]*?\"\"\"|'(?:\\[\s\S]|[^'\\\n])*'"
    r"|\"(?:\\[\s\S]|[^\"\\\n])*\"))"
    r"|(?P<name>[^\W\d]\w*)"
    r"|(?P<number>(?:0[xXoObB][0-9a-fA-F_]+|(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)"
    r"(?:[eE][+-]?\d[\d_]*)?)[jJ]?)"
)


def _python(code: str) -> Pieces:
    pieces: Pieces = []
    done = 0  # characters of `code` already in `pieces`
    defining = False
    for match in _TOKEN.finditer(code):
        kind, text = match.lastgroup, match.group()
        style = STYLES[kind] if kind in ("comment", "string", "number") else ""
        if kind == "name":
            if keyword.iskeyword(text):
                style = STYLES["keyword"]
            elif defining:
                style = STYLES["definition"]
            defining = text in ("def", "class")
        if style:
            pieces.append((code[done : match.start()], ""))
            pieces.append((text, style))
            done = match.end()
    pieces.append((code[done:], ""))
    return [(text, style) for text, style in pieces if text]


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
