"""Triage on whatever a terminal held: random text and bytes, cut errors, colours, ranks.

Properties, not examples: triage never raises; a cut error is still recognised while its
telling sentence survives; how the bytes arrive (one block or many small ones) changes
nothing; and the work is linear, checked structurally (every input byte is analysed at most
once) rather than with a clock.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ddp_doctor.knowledge.kb import load
from ddp_doctor.reading import analyser, triage
from ddp_doctor.reading.triage import Scanner, summarise, triage_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REAL = sorted(FIXTURES.rglob("*.txt"))
KB = load()

# the sentence that names each family, as the rules' first pattern spells it (literally)
TELLING = {
    "unfinished_reduction": "Expected to have finished reduction in the prior iteration",
}

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

ANSI = st.sampled_from(["\x1b[31m", "\x1b[0m", "\x1b[1;33m", "\x1b[2K", "\x1b]0;title\x07", ""])
PREFIX = st.sampled_from(
    ["", "[rank0]:", "[rank1]: ", "[default3]:", "2: ", "[1,0]<stderr>:", "INFO:root:"]
)
CHINESE = st.sampled_from(["", "训练第 3 轮：", "报错了！", "（多卡）", "梯度", "参数未使用"])


def _real_texts() -> list[str]:
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in REAL]
    assert texts, "tests/fixtures holds the real error texts"
    return texts


REAL_TEXTS = _real_texts()


def _scan(data: bytes, sizes: list[int]) -> triage.TriageResult:
    scanner = Scanner(KB, "<test>")
    at, i = 0, 0
    while at < len(data):
        size = sizes[i % len(sizes)] if sizes else len(data)
        scanner.feed(data[at : at + size])
        at += size
        i += 1
    return summarise(KB, [scanner])


def _digest(result: triage.TriageResult) -> list[tuple]:
    return [
        (f.family, f.line, f.ranks, f.unused_parameter_names, f.unused_parameter_indices, f.quote)
        for f in result.findings
    ]


@st.composite
def decorated(draw, text: str) -> str:
    """The text as a launcher and a terminal would show it: prefixes, colours, Chinese."""
    prefix = draw(PREFIX)
    out = []
    for line in text.splitlines():
        out.append(f"{draw(ANSI)}{prefix}{line}{draw(ANSI)}")
        if draw(st.integers(0, 9)) == 0:
            out.append(f"{prefix}{draw(CHINESE)}")
    return "\n".join(out) + draw(st.sampled_from(["", "\n", "\r\n"]))


@st.composite
def cut_error(draw) -> str:
    text = draw(st.sampled_from(REAL_TEXTS))
    start = draw(st.integers(0, len(text)))
    end = draw(st.integers(start, len(text)))
    return text[start:end]


# ---------------------------------------------------------------------------- never raises


@SETTINGS
@given(st.text(max_size=5000))
def test_random_text_never_raises(text):
    result = triage_text(KB, text)
    assert isinstance(result.findings, tuple)


@SETTINGS
@given(st.binary(max_size=5000), st.lists(st.integers(1, 700), min_size=1, max_size=8))
def test_random_bytes_never_raise(data, sizes):
    _scan(data, sizes)


@SETTINGS
@given(st.data())
def test_cut_decorated_errors_never_raise(data):
    text = data.draw(decorated(data.draw(cut_error())))
    noise = data.draw(st.binary(max_size=200))
    blob = noise + text.encode("utf-8") + noise
    _scan(blob, data.draw(st.lists(st.integers(1, 4096), min_size=1, max_size=4)))


# ---------------------------------------------------------------------------- still diagnosed


@SETTINGS
@given(st.data())
def test_cut_error_keeps_its_family_while_the_sentence_survives(data):
    text = data.draw(cut_error())
    family = next((f for f, sentence in TELLING.items() if sentence in text), None)
    shown = data.draw(decorated(text))
    result = triage_text(KB, shown)
    if family is not None:
        accepted = {family}
        if "This error indicates that your training graph" in text:
            # the static-graph form of the same sentence belongs to static_graph_changed
            accepted.add("static_graph_changed")
        assert accepted & {f.family for f in result.findings}, shown[:2000]


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_gbk_and_invalid_utf8_around_a_real_error(path):
    text = path.read_text(encoding="utf-8")
    clean = triage_text(KB, text)
    noisy = "训练日志：损失下降".encode("gbk") + b"\xff\xfe\xc3(" + text.encode() + b"\x80\xbf"
    result = _scan(noisy, [len(noisy)])
    assert [f.family for f in result.findings] == [f.family for f in clean.findings]


# ---------------------------------------------------------------------------- chunking


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_block_boundaries_change_nothing(data):
    """An anchor split across reads, or a window spanning many, gives the same findings."""
    text = data.draw(decorated(data.draw(st.sampled_from(REAL_TEXTS))))
    filler = "NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n" * data.draw(st.integers(0, 50))
    blob = (filler + text + filler + text).encode("utf-8")
    whole = _scan(blob, [len(blob)])
    sizes = data.draw(st.lists(st.integers(1, 3000), min_size=1, max_size=6))
    assert _digest(_scan(blob, sizes)) == _digest(whole)


# ---------------------------------------------------------------------------- linear work


def _analysed_chars(data: bytes) -> int:
    """Characters the regex stage saw while scanning `data`."""
    seen = 0
    original = analyser.Analyser.analyse

    def counting(self, text, first_line, *more):
        nonlocal seen
        seen += len(text)
        return original(self, text, first_line, *more)

    analyser.Analyser.analyse = counting
    try:
        _scan(data, [1 << 16])
    finally:
        analyser.Analyser.analyse = original
    return seen


@pytest.mark.parametrize(
    "unit",
    [
        b"RuntimeError: Expected to have finished reduction in the prior iteration\n",
        b"[rank1]:Expected to have finished reduction " * 3 + b"\n",
        b"Connection reset by peer Timed out waiting has been marked as ready twice\n",
    ],
)
def test_each_byte_is_analysed_at_most_once(unit):
    """Anchors on every line (the worst case) still cost one regex pass per byte."""
    for repeats in (1_000, 4_000):
        data = unit * repeats
        assert _analysed_chars(data) <= len(data)


def test_many_anchor_lines_stay_bounded():
    """An error repeated on every line is counted, not kept: findings stay few."""
    text = "".join(
        f"[rank{i % 8}]:RuntimeError: Expected to have finished reduction in the prior "
        f"iteration before starting a new one.\n"
        for i in range(3000)
    )
    result = triage_text(KB, text)
    assert 1 <= len(result.findings) <= triage.MAX_FINDINGS
    assert sum(f.occurrences for f in result.findings) >= 8


# ---------------------------------------------------------------------------- name lists

LIST_NAMES = [f"model.block{i}.layer.weight" for i in range(40)]
LIST_HEAD = (
    "RuntimeError: Expected to have finished reduction in the prior iteration before starting "
    "a new one.\nParameters which did not receive grad for rank 0: "
)


@settings(max_examples=150, deadline=None)
@given(
    cuts=st.lists(st.integers(0, 10_000), max_size=6),
    data=st.data(),
    width=st.sampled_from([0, 61, 80, 123]),
)
def test_a_damaged_name_list_never_yields_a_name_the_log_does_not_hold(cuts, data, width):
    """Control characters dropped anywhere into a list (hard-wrapped or not): whatever is read
    is a name the list holds, never two pieces glued into a new one. (A bare CR splits a line,
    so inside a hard-wrapped list it would make the wrapped line look short: a line break the
    hard-wrap reading cannot tell from the list's end; it is drawn only for unwrapped lists.)"""
    kinds = ["\x00", "\x08", "\x1b", "\x7f"] + ([] if width else ["\r"])
    controls = data.draw(st.lists(st.sampled_from(kinds), min_size=6, max_size=6))
    body = ", ".join(LIST_NAMES)
    if width:
        body = "\n".join(body[i : i + width] for i in range(0, len(body), width))
    for cut, control in zip(sorted(set(cuts), reverse=True), controls):
        at = cut % (len(body) + 1)
        body = body[:at] + control + body[at:]
    result = triage_text(KB, LIST_HEAD + body + "\n")
    for finding in result.findings:
        assert set(finding.unused_parameter_names) <= set(LIST_NAMES)


# ---------------------------------------------------------------------------- foreign text

HOSTILE_PIECES = st.sampled_from(
    ["`", "``", "```", "[x](http://e.example)", "<img src=x onerror=alert(1)>", "\u202e",
     "\u2066", "\u2069", "\u200b", "\u009b", "\x1b]0;t\x07", "\x1b[31m", "*", "_", "\\", "|",
     "中文", " "]
)  # fmt: skip
EXAMPLE_LOG = (
    Path(__file__).resolve().parent.parent / "examples" / "torchrun-unused-module.log"
).read_text()


@settings(max_examples=60, deadline=None)
@given(code=st.lists(HOSTILE_PIECES, max_size=8), path=st.lists(HOSTILE_PIECES, max_size=8))
def test_text_from_the_log_never_becomes_markup_or_control(code, path):
    """Backticks, links, HTML, bidi and control characters in a traceback's code line and
    file path: the markdown report renders none of them live, and neither it nor the
    terminal report holds a raw control or invisible character (issue 22, items 3-4)."""
    import io

    from ddp_doctor.common.foreign import escape_invisible
    from ddp_doctor.output.render import build_report, print_rich, to_markdown
    from ddp_doctor.reasoning.engine import diagnose
    from markdown_it import MarkdownIt
    from rich.console import Console

    log = EXAMPLE_LOG.replace("    main()", "    main()  # " + "".join(code), 1)
    log = log.replace("/home/me/project/train.py", "/home/" + "".join(path) + "/t.py", 1)
    result = triage_text(KB, log)
    assert result.findings
    for lang in ("en", "zh"):
        report = build_report(KB, diagnose(KB, result), lang)
        markdown = to_markdown(KB, report)
        html = MarkdownIt("commonmark").render(markdown)
        assert "<img" not in html and "<a " not in html
        screen = io.StringIO()
        print_rich(KB, report, Console(file=screen, width=100), full=True)
        for text in (markdown, screen.getvalue()):
            assert escape_invisible(text.replace("\n", "")) == text.replace("\n", "")


# ---------------------------------------------------------------------------- what a person types
# issue 22 (items 12-23): words typed without quotes, control and wide characters in them, and
# answers files naming the new questions with any value: a documented exit code and one JSON
# document, never a traceback


PIECES = list("abc xyz_=()[]'\"`\\/.-") + ["\x1b[31m", "\u202e", "\x00", "冻结", "解冻", "反向传播"]
WORDS = st.lists(
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=12).map("".join),
    min_size=1,
    max_size=6,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(words=WORDS)
def test_unquoted_words_for_ask_never_raise(words):
    import json

    from helpers import cli

    words = [w.replace("\x00", "") or "x" for w in words]  # argv cannot hold NUL
    result = cli("ask", "--json", "--lang", "en", *words)
    assert result.returncode in (0, 1, 2), result.err
    assert "Traceback" not in result.err
    if result.returncode in (0, 1):
        json.loads(result.out)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    key=st.sampled_from(
        ["module_never_called", "loss_uses_hidden_tensors", "static_graph_enabled", "step_pattern"]
    ),
    value=st.text(min_size=0, max_size=20),
)
def test_answers_for_the_new_questions_never_raise(tmp_path_factory, key, value):
    import json

    from helpers import cli

    path = tmp_path_factory.mktemp("answers") / "a.json"
    path.write_text(json.dumps({key: value}), encoding="utf-8")
    result = cli("--answers", str(path), "--json")
    assert result.returncode in (0, 2), result.err
    assert "Traceback" not in result.err
    json.loads(result.out)
