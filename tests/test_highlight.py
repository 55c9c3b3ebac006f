"""The terminal report colours code without Pygments (wizard/output/highlight.py): the text must
come out exactly as written, since users copy it from the screen and run it."""

from __future__ import annotations

import pytest
from ddp_doctor.knowledge.kb import load
from ddp_doctor.output.highlight import STYLES, highlight

KB = load()
SNIPPETS = [
    (f"{fix.id}/{name}/{lang}", snippet.code.get(lang), snippet.language)
    for fix in KB.fixes.values()
    for name, snippet in fix.snippets.items()
    for lang in ("en", "zh")
]


@pytest.mark.parametrize(("where", "code", "language"), SNIPPETS, ids=[s[0] for s in SNIPPETS])
def test_every_snippet_comes_out_as_written_and_coloured(where, code, language):
    pieces = highlight(code, language)
    assert "".join(text for text, _ in pieces) == code
    if "#" in code:  # every snippet says something in a comment
        assert any(style == STYLES["comment"] for _, style in pieces), where


def test_python_parts_are_told_apart():
    pieces = dict(highlight('def f(x):\n    return x + 1  # one\nf("a")\n', "python"))
    assert pieces["def"] == pieces["return"] == STYLES["keyword"]
    assert pieces["f"] == STYLES["definition"]
    assert pieces["1"] == STYLES["number"]
    assert pieces["# one"] == STYLES["comment"]
    assert pieces['"a"'] == STYLES["string"]


@pytest.mark.parametrize(
    "code",
    [
        "if x:\n    y = (1,\n",  # unfinished: tokenize gives up part way
        "  x = 1\n",  # an indented fragment
        'print("中文 # 不是注释")  # 这才是注释\n',
        "",
    ],
)
def test_broken_or_odd_code_is_still_printed_whole(code):
    assert "".join(text for text, _ in highlight(code, "python")) == code


def test_shell_comments_start_a_word_and_not_inside_quotes():
    pieces = highlight("echo 'a # b' x#y  # note\n# whole line\n", "bash")
    comments = [text for text, style in pieces if style == STYLES["comment"]]
    assert comments == ["# note", "# whole line"]


def _tokenize_styles(code: str) -> list[tuple[str, str]]:
    """What Python's own `tokenize` calls each styled token of `code` (the reference the
    small scanner replaced, to save its import and regex compile at start-up)."""
    import io
    import keyword
    import tokenize

    kinds = {tokenize.COMMENT: "comment", tokenize.STRING: "string", tokenize.NUMBER: "number"}
    out, defining = [], False
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        kind = kinds.get(token.type)
        if token.type == tokenize.NAME:
            if keyword.iskeyword(token.string):
                kind = "keyword"
            elif defining:
                kind = "definition"
            defining = token.string in ("def", "class")
        if kind:
            out.append((token.string, STYLES[kind]))
    return out


PYTHON = [s for s in SNIPPETS if s[2] == "python"]


@pytest.mark.parametrize(("where", "code", "language"), PYTHON, ids=[s[0] for s in PYTHON])
def test_snippets_are_coloured_as_python_itself_reads_them(where, code, language):
    """Every piece the report colours is a token `tokenize` gives that style, and every
    token it styles is coloured: the same colours as before the scanner replaced it."""
    coloured = [(text, style) for text, style in highlight(code, language) if style]
    assert coloured == _tokenize_styles(code), where
