"""Windows never cut a message (issue 15.5): wherever an error falls among megabytes of
other anchored lines, relative to the scanner's block, window and look-behind boundaries,
it is found once, with every name it carries, none of them cut.

The boundaries are shrunk for the property tests (the same code runs, on kilobytes instead
of megabytes) so that every offset around each of them can be tried; one test per reported
case keeps the real sizes.
"""

from __future__ import annotations

import pytest
from ddp_doctor.knowledge.kb import load
from ddp_doctor.reading import windows as windows_module
from ddp_doctor.reading.triage import Scanner, summarise

KB = load()

NOISE = b"[rank3]:[E pair.cc:589] Read error [10.0.0.3]:43210: Connection reset by peer\n"
CHATTER = b"[rank0]:step 1200 loss 0.4312 lr 3e-4 | " + "训练中".encode() + b" " * 20 + b"\n"
NAMES = [f"backbone.blocks.{i}.aux_head.weight" for i in range(1200)]


def error_message(names: list[str]) -> bytes:
    """rank 1's DDP error as PyTorch prints it under TORCH_DISTRIBUTED_DEBUG=INFO."""
    return (
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/home/me/train.py", line 88, in <module>\n'
        "[rank1]:     loss = model(x).sum()\n"
        "[rank1]: RuntimeError: Expected to have finished reduction in the prior iteration "
        "before starting a new one. This error indicates that your module has parameters "
        "that were not used in producing loss.\n"
        f"[rank1]: Parameters which did not receive grad for rank 1: {', '.join(names)}\n"
        f"[rank1]: Parameter indices which did not receive grad for rank 1: "
        f"{' '.join(str(i) for i in range(len(names)))}\n"
    ).encode()


def scan(data: bytes, block: int) -> list:
    scanner = Scanner(KB, "<test>")
    for at in range(0, len(data), block):
        scanner.feed(data[at : at + block])
    return list(summarise(KB, [scanner]).findings)


def the_error(findings: list):
    errors = [f for f in findings if f.family == "unfinished_reduction"]
    assert len(errors) == 1, [(f.family, f.line, f.occurrences) for f in findings]
    return errors[0]


def noise_count(findings: list) -> int:
    return sum(f.occurrences for f in findings if f.family != "unfinished_reduction")


def check(data: bytes, block: int, names: list[str], noise_lines: int) -> None:
    findings = scan(data, block)
    error = the_error(findings)
    assert error.occurrences == 1
    assert error.ranks == (1,)
    assert list(error.unused_parameter_names) == names
    assert len(error.unused_parameter_indices) == len(names)
    line = data[: data.index(b"RuntimeError: Expected")].count(b"\n") + 1
    assert error.line == line
    assert noise_count(findings) == noise_lines


# ---------------------------------------------------------------------------- as reported


def test_error_just_before_a_window_cut_after_megabytes_of_noise_is_found():
    """The issue's case: megabytes of lines with an anchor every few KB (so that one window
    keeps growing past MAX_REGION), the error ~50 bytes before the old cut."""
    names = NAMES[:2]
    unit = (b"[rank0]:" + b"=" * 1000 + b"\n") * 4 + NOISE
    message = error_message(names)
    anchor = message.index(b"RuntimeError")
    for cut in (windows_module.MAX_REGION, 8 << 20):
        units, rest = divmod(cut - 50 - anchor, len(unit))
        data = unit * units + b"y" * (rest - 1) + b"\n" + message + unit * 40
        check(data, 4 << 20, names, units + 40)


def test_names_far_after_the_error_line_are_all_kept_and_none_is_cut():
    """1200 names on one 40 KB line: every one of them, the last one whole."""
    data = NOISE * 50 + error_message(NAMES) + CHATTER * 200
    check(data, 1 << 16, NAMES, 50)


def test_repeat_counts_are_exact():
    """5000 copies of a line (5 MB with the lines between them) are counted 5000 times,
    whatever the blocks."""
    data = (NOISE + b"[rank0]:" + b"-" * 1000 + b"\n") * 5000
    for block in (4 << 20, 1 << 16):
        findings = scan(data, block)
        assert noise_count(findings) == 5000


# ---------------------------------------------------------------------------- every offset


@pytest.fixture
def small_windows(monkeypatch):
    """The scanner's boundaries in kilobytes: the same code, every offset reachable."""
    monkeypatch.setattr(windows_module, "CONTEXT_BEFORE", 2048)
    monkeypatch.setattr(windows_module, "MAX_REGION", 6000)
    monkeypatch.setattr(windows_module, "MAX_AFTER", 64 << 10)


BLOCK = 1500  # bytes fed at a time in the property tests


def test_error_at_every_offset_around_every_boundary(small_windows):
    """The error's anchor at each byte offset around the block, look-behind and window
    boundaries, after anchored noise: found once, with both names, every noise line
    counted once."""
    names = NAMES[:2]
    message = error_message(names)
    anchor = message.index(b"RuntimeError")
    after = NOISE * 3 + CHATTER * 170
    boundaries = [BLOCK * 5, 2048 * 3, 6000, 6000 * 2, 6000 + 2048]
    checked = set()
    for boundary in boundaries:
        for delta in range(-100, 101, 5):
            lines, rest = divmod(boundary + delta - anchor, len(NOISE))
            if lines < 1 or (lines, rest) in checked:
                continue
            checked.add((lines, rest))
            filler = b"y" * max(0, rest - 1) + b"\n" if rest else b""
            data = NOISE * lines + filler + message + after
            check(data, BLOCK, names, lines + 3)


def test_long_name_lists_at_every_offset_around_a_block_boundary(small_windows):
    """A 40 KB line of names crossing block and window boundaries at every offset: no name
    is lost, none is cut into an invented module."""
    names = NAMES[:300]
    message = error_message(names)
    for shift in range(0, 1500, 37):
        data = b"z" * shift + b"\n" + NOISE * 20 + message + NOISE * 20
        check(data, BLOCK, names, 40)
