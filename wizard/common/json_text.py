"""JSON text as `json.dumps(data, ensure_ascii=False, indent=2)` writes it, without `json`.

A report in JSON is ~20 KB of plain dicts, lists, strings and numbers. `json.dumps` with an
indent runs the standard library's pure-Python encoder (its C encoder has no indent), a
generator per nested value, and importing `json` compiles its decoder's regexes that a
report never uses: together ~1.5 ms of a `triage --json` run. `indented` writes the same
characters with one recursive function; anything it does not know (a key that is not a
string, a type `json` would reject) raises `Unwritten`, and the caller falls back to `json`
itself, so the output is `json`'s in every case. A test compares the two on every report.
"""

from __future__ import annotations

_ESCAPES = {i: f"\\u{i:04x}" for i in range(0x20)}
_ESCAPES.update(
    {ord('"'): '\\"', ord("\\"): "\\\\", ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"}
)
_ESCAPES.update({ord("\b"): "\\b", ord("\f"): "\\f"})
_INFINITY = float("inf")


class Unwritten(Exception):
    """A value this writer leaves to `json` (which may write it or raise its own error)."""


def quoted(text: str) -> str:
    """A JSON string, as `json.encoder.encode_basestring` writes it. Most strings need no
    escape (no quote, no backslash, no control character, all of which `isprintable`
    refuses): three scans in C instead of a lookup per character."""
    if '"' in text or "\\" in text or not text.isprintable():
        return '"' + text.translate(_ESCAPES) + '"'
    return '"' + text + '"'


def _number(value: float) -> str:
    if value != value:
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return float.__repr__(value)


def indented(data: object) -> str:
    """`json.dumps(data, ensure_ascii=False, indent=2)`, or `Unwritten`."""
    out: list[str] = []
    _write(data, out, "\n")
    return "".join(out)


def _write(value: object, out: list[str], newline: str) -> None:
    """`value` appended to `out`; `newline`: a line break and the current indent. The type
    tests come in the order of `json.encoder`'s, so a subclass is written as it writes it."""
    if isinstance(value, str):
        out.append(quoted(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(_number(value))
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner = newline + "  "
        out.append("[")
        separator = inner
        for item in value:
            out.append(separator)
            _write(item, out, inner)
            separator = "," + inner
        out.append(newline + "]")
    elif isinstance(value, dict):
        _write_dict(value, out, newline)
    else:
        raise Unwritten(type(value).__name__)


def _write_dict(value: dict, out: list[str], newline: str) -> None:
    if not value:
        out.append("{}")
        return
    inner = newline + "  "
    out.append("{")
    separator = inner
    for key, item in value.items():
        if not isinstance(key, str):  # json's own rules for other keys
            raise Unwritten(type(key).__name__)
        out.append(separator + quoted(key) + ": ")
        _write(item, out, inner)
        separator = "," + inner
    out.append(newline + "}")
