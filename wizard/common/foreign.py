"""Foreign text made safe to show: what a log, a file name, an answer or a module name holds.

Text ddp-doctor did not write itself reaches the reader in three ways, each with its own
dangers:

- a terminal runs escape sequences (ESC, the C1 control CSI U+009B) and shows bidi overrides
  (U+202E, U+2066-2069) and zero-width characters as nothing, so a line can recolour the
  screen, retitle the window, or read differently from what it holds;
- markdown (the report pasted into an issue or a wiki) turns a backtick, a `[link](...)` or
  raw `<img onerror=...>` into live markup;
- JSON is read by programs: its values stay exactly what the log held, but the document
  itself never carries a raw control or invisible character, so printing it is harmless.

`shown(text, output)` is the one function that makes foreign text safe for an output;
`code_span` quotes it as markdown inline code. Invisible and control characters become
visible escapes (`\\x1b`, `\\u202e`), as Python's `repr` spells them, so nothing is dropped.
Long text is cut in the middle (`shorten`) where the reader needs only to recognise it.
"""

from __future__ import annotations

import re

from .lazy_regex import LazyRegex

# Control characters (C0 but tab, DEL, C1), line and paragraph separators, and the format
# characters (Unicode category Cf: bidi marks, embeddings, overrides and isolates,
# zero-width space/joiners, word joiner, BOM, soft hyphen, tag characters, ...). A test
# checks this class against `unicodedata` for every code point.
_UNSAFE_CLASS = (
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    "\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f]"
)
# characters `json.dumps(ensure_ascii=False)` leaves raw that a terminal would act on
_JSON_UNSAFE_CLASS = _UNSAFE_CLASS.replace("\x00-\x08\x0a-\x1f", "")

# Each class takes ~0.5 ms to compile (its ranges reach past the BMP) and a report needs
# one of them (the JSON document or the text ones): compiled on first use.
_COMPILED: dict[str, re.Pattern] = {}


def _compiled(pattern: str) -> re.Pattern:
    found = _COMPILED.get(pattern)
    if found is None:
        found = _COMPILED[pattern] = re.compile(pattern)
    return found


OUTPUTS = ("terminal", "markdown", "text", "json")
ELLIPSIS = "…"


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def escape_invisible(text: str) -> str:
    """Every control, separator and invisible format character as a visible escape."""
    if text.isprintable():  # none of the class's characters is printable (a test checks)
        return text
    return _compiled(_UNSAFE_CLASS).sub(_escape, text)


def shown(text: object, output: str = "terminal") -> str:
    """`text` from outside (a log, a file name, an answer, a module) safe for `output`.

    terminal, markdown, text: invisible and control characters become visible escapes (the
    markdown quoting itself is `code_span`'s job). json: unchanged (`dumps` escapes).
    """
    value = str(text)
    if output == "json":
        return value
    return escape_invisible(value)


def shown_fields(fields: dict, output: str = "terminal") -> dict:
    """The string values of a message's fields made safe; numbers stay numbers."""
    return {k: shown(v, output) if isinstance(v, str) else v for k, v in fields.items()}


_BACKTICKS = LazyRegex(r"`+")  # compiled only for text that holds a backtick


def code_span(text: object) -> str:
    """Markdown inline code holding `text` exactly, whatever backticks it contains.

    CommonMark closes a code span only with a backtick run as long as the one that opened
    it, so a fence one longer than the longest run inside can never be closed early; a
    space pads text that starts or ends with a backtick (CommonMark strips one each side).
    """
    value = escape_invisible(str(text))
    longest = max((len(run) for run in _BACKTICKS.findall(value)), default=0) if "`" in value else 0
    fence = "`" * (longest + 1)
    spaced = value[:1] == value[-1:] == " " and value.strip(" ")
    pad = " " if not value or value[0] == "`" or value[-1] == "`" or spaced else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def shorten(text: str, limit: int) -> str:
    """`text` cut in the middle to at most `limit` characters, both ends kept, so that a
    256 KiB name costs the reader a line, not a screen (nor the renderer minutes)."""
    if len(text) <= limit:
        return text
    head = (limit - 1) // 2 + (limit - 1) % 2
    tail = limit - 1 - head
    return text[:head] + ELLIPSIS + (text[-tail:] if tail else "")


def _json_escape(match: re.Match) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # outside the BMP: a surrogate pair, as JSON spells it
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def dumps(data: object) -> str:
    """JSON as ddp-doctor prints it: readable (UTF-8, indented) and safe to print.

    Outside strings JSON holds only ASCII punctuation, so every unsafe character found is
    inside a string, where `\\uXXXX` is the same character to a parser.
    """
    from .json_text import Unwritten, indented

    try:
        document = indented(data)  # json.dumps's text without importing json (json_text.py)
    except Unwritten:
        import json  # here: a terminal report never needs it

        document = json.dumps(data, ensure_ascii=False, indent=2)
    if document.replace("\n", "").isprintable():
        # every character of the class is one `isprintable` refuses (a test checks each), so
        # a document whose lines are printable holds none: the class (~0.3 ms to compile)
        # is not compiled for it
        return document
    return _compiled(_JSON_UNSAFE_CLASS).sub(_json_escape, document)
