"""The byte scanner: the compiled multi-pattern matcher (Hyperscan, where its wheel is
installed) finds exactly what the pure-Python search finds, wherever chunk boundaries fall;
binary input is refused from its first block."""

from __future__ import annotations

import os

import pytest
from ddp_doctor.knowledge.kb import load
from ddp_doctor.reading import scanner as scanner_module
from ddp_doctor.reading.triage import Scanner, scan_stream, summarise
from helpers import cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

KB = load()
KEYS = scanner_module._search_keys(KB)
SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def accelerated():
    finder = scanner_module._accelerated_finder(KEYS)
    if finder is None:
        pytest.skip("the hyperscan wheel is not installed here")
    return finder


# pieces that make anchors, half anchors, overlapping anchors and plain noise
PIECES = st.one_of(
    st.sampled_from(KEYS),
    st.sampled_from(KEYS).map(lambda k: k[: len(k) // 2]),
    st.sampled_from(KEYS).map(lambda k: k[len(k) // 3 :]),
    st.binary(max_size=40),
    st.sampled_from([b"\n", b"\r", b"[rank1]: ", "训练".encode(), b"\x00\xff"]),
)


@SETTINGS
@given(st.lists(PIECES, max_size=60))
def test_accelerated_finder_finds_what_the_pure_one_finds(pieces):
    data = b"".join(pieces)
    pure = scanner_module._pure_finder(KEYS)
    assert sorted(accelerated()(data)) == sorted(pure(data))


def _findings(data: bytes, sizes: list[int], accelerate: bool, counter=None) -> list[tuple]:
    scanner = Scanner(KB, "<test>", accelerate=accelerate)
    at, i = 0, 0
    while at < len(data):
        size = sizes[i % len(sizes)]
        scanner.feed(data[at : at + size], counter)
        at, i = at + size, i + 1
    result = summarise(KB, [scanner])
    return [
        (f.family, f.line, f.ranks, f.unused_parameter_names, f.occurrences)
        for f in result.findings
    ]


# a log made of anchors, random bytes and line breaks, fed in chunks of these sizes
LOG_PIECES = st.lists(st.sampled_from(KEYS) | st.binary(max_size=30) | st.just(b"\n"), max_size=80)
CHUNK_SIZES = st.lists(st.integers(1, 97), min_size=1, max_size=8)


@SETTINGS
@given(LOG_PIECES, CHUNK_SIZES)
def test_both_matchers_give_identical_findings_over_any_chunk_boundaries(pieces, sizes):
    accelerated()
    data = b"".join(pieces) + b"\n"
    assert _findings(data, sizes, True) == _findings(data, sizes, False)


@SETTINGS
@given(LOG_PIECES, CHUNK_SIZES)
def test_counting_newlines_in_a_second_thread_changes_no_finding(pieces, sizes):
    accelerated()
    data = b"".join(pieces) + b"\n"
    counter = scanner_module.NewlineCounter()
    try:
        assert _findings(data, sizes, True, counter) == _findings(data, sizes, False)
    finally:
        counter.close()


def test_scan_stream_counts_in_a_second_thread_for_a_big_file(tmp_path, monkeypatch):
    accelerated()
    fixture = os.path.join(os.path.dirname(__file__), "fixtures", "real")
    name = sorted(n for n in os.listdir(fixture) if n.endswith(".txt"))[0]
    with open(os.path.join(fixture, name), "rb") as handle:
        error = handle.read()
    noise = b"[rank3]: NCCL INFO Channel 07/0 : 3[3] -> 4[4] via P2P/IPC\n" * 40_000
    data = noise * 4 + error + noise  # 12 MB: past ACCELERATE_FROM, the error at 9.6 MB
    path = tmp_path / "big.log"
    path.write_bytes(data)
    counters = []

    class Counter(scanner_module.NewlineCounter):
        def __init__(self, read_ahead=None):
            counters.append(self)
            super().__init__(read_ahead)

    monkeypatch.setattr(scanner_module, "NewlineCounter", Counter)
    monkeypatch.setattr(scanner_module, "_several_cpus", lambda: True)
    with open(path, "rb") as stream:
        threaded = scan_stream(KB, stream, "big.log", size=len(data))
    assert len(counters) == 1 and not counters[0]._thread.is_alive()
    assert counters[0].read_ahead is not None  # a regular file: read a block ahead
    block = scanner_module.BLOCK_SIZE
    pieces = [data[at : at + block] for at in range(0, len(data), block)]
    plain = Scanner(KB, "big.log", accelerate=False)
    for piece in pieces:
        plain.feed(piece)
    assert threaded.windows.newlines == plain.windows.newlines == data.count(b"\n")
    assert threaded.finish() == plain.finish()
    assert threaded.finish()


def test_both_matchers_agree_on_the_real_fixtures():
    accelerated()
    fixtures = os.path.join(os.path.dirname(__file__), "fixtures", "real")
    for name in sorted(os.listdir(fixtures)):
        if not name.endswith(".txt"):
            continue
        with open(os.path.join(fixtures, name), "rb") as handle:
            data = handle.read()
        for sizes in ([len(data)], [4093], [131, 977]):
            assert _findings(data, sizes, True) == _findings(data, sizes, False), name


# ---------------------------------------------------------------------------- binary


class _EndlessRandom:
    """A stream that never ends (like /dev/urandom), counting what was read from it."""

    def __init__(self):
        self.read_bytes = 0

    def read(self, size: int) -> bytes:
        self.read_bytes += size
        return os.urandom(size)


def test_binary_input_is_decided_from_the_first_block():
    stream = _EndlessRandom()
    scanner = scan_stream(KB, stream, "random", max_bytes=None)
    assert summarise(KB, [scanner]).looks_binary
    assert stream.read_bytes <= scanner_module.BLOCK_SIZE


def test_triage_dev_urandom_is_refused_at_once():
    if not os.path.exists("/dev/urandom"):
        pytest.skip("no /dev/urandom")
    result = cli("triage", "/dev/urandom", timeout=20)
    assert result.returncode == 3
    assert "binary" in result.err
