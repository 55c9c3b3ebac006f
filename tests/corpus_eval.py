"""Run triage over the corpus of real pastes and score it against the expectations.

Shared by `tests/test_corpus.py` (which enforces the thresholds) and `bench/corpus.py`
(which writes `bench/CORPUS.md`). The expectations were written by reading each source
thread, never from the tool's output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml
from ddp_doctor.knowledge import kb as kb_module
from ddp_doctor.reading import triage
from ddp_doctor.reasoning import engine

CORPUS = Path(__file__).resolve().parent / "fixtures" / "real" / "corpus"
NONE = "none"
# `split: held_out` in a paste's .yaml: collected after the rules were written and never used
# to change them, so the figures on it are out of sample; every other paste is the development
# set the rules were tuned on.
DEVELOPMENT = "development"
HELD_OUT = "held_out"
SPLITS = (DEVELOPMENT, HELD_OUT)


@dataclass(frozen=True)
class Expected:
    ident: str
    url: str
    family: str
    names: frozenset[str]
    indices: frozenset[int]
    cause: str | None
    evidence: bool
    text_path: Path
    split: str = DEVELOPMENT


@dataclass(frozen=True)
class Outcome:
    expected: Expected
    family: str
    names: frozenset[str]
    indices: frozenset[int]
    causes: tuple[str, ...]
    fixes: tuple[str, ...]

    @property
    def family_ok(self) -> bool:
        return self.family == self.expected.family

    @property
    def carries_names(self) -> bool:
        return bool(self.expected.names or self.expected.indices)

    @property
    def names_ok(self) -> bool:
        return self.names == self.expected.names and self.indices == self.expected.indices

    @property
    def cause_top2(self) -> bool:
        return self.expected.cause in self.causes[:2]


def _indices(value) -> frozenset[int]:
    if value is None:
        return frozenset()
    if isinstance(value, str):  # "A-B": a run, as PyTorch prints every index from A to B
        low, high = (int(v) for v in value.split("-"))
        return frozenset(range(low, high + 1))
    return frozenset(int(v) for v in value)


def _split(value, meta: Path) -> str:
    if value is None:
        return DEVELOPMENT
    if value not in SPLITS:
        raise ValueError(f"{meta.name}: split must be one of {SPLITS}, not {value!r}")
    return value


def load_corpus() -> list[Expected]:
    entries = []
    for meta in sorted(CORPUS.glob("*.yaml")):
        raw = yaml.safe_load(meta.read_text("utf-8"))
        entries.append(
            Expected(
                ident=meta.stem,
                url=raw["url"],
                family=raw["family"],
                names=frozenset(raw.get("names") or ()),
                indices=_indices(raw.get("indices")),
                cause=raw.get("cause"),
                evidence=bool(raw.get("evidence")),
                text_path=meta.with_suffix(".txt"),
                split=_split(raw.get("split"), meta),
            )
        )
    return entries


def run_one(kb, expected: Expected) -> Outcome:
    scanner = triage.Scanner(kb, expected.ident)
    scanner.feed(expected.text_path.read_bytes())
    result = triage.summarise(kb, [scanner])
    diagnosis = engine.diagnose(kb, result)
    family = result.facts.get("family", NONE) if result.findings else NONE
    names = frozenset(n for f in result.findings for n in f.unused_parameter_names)
    indices = frozenset(i for f in result.findings for i in f.unused_parameter_indices)
    return Outcome(
        expected=expected,
        family=family,
        names=names,
        indices=indices,
        causes=tuple(c.id for c in diagnosis.causes) if result.findings else (),
        fixes=tuple(f.id for f in diagnosis.fixes) if result.findings else (),
    )


@dataclass
class Score:
    outcomes: list[Outcome] = field(default_factory=list)

    def _ratio(self, selected: list[Outcome], ok) -> tuple[int, int]:
        return sum(1 for o in selected if ok(o)), len(selected)

    @property
    def family(self) -> tuple[int, int]:
        return self._ratio(self.outcomes, lambda o: o.family_ok)

    @property
    def names(self) -> tuple[int, int]:
        return self._ratio([o for o in self.outcomes if o.carries_names], lambda o: o.names_ok)

    def cause(self, evidence: bool) -> tuple[int, int]:
        selected = [
            o for o in self.outcomes if o.expected.cause and o.expected.evidence is evidence
        ]
        return self._ratio(selected, lambda o: o.cause_top2)

    @property
    def negatives(self) -> tuple[int, int]:
        negatives = [o for o in self.outcomes if o.expected.family == NONE]
        return self._ratio(negatives, lambda o: o.family == NONE)

    def only(self, split: str) -> Score:
        """The same measures on one split (development or held_out)."""
        return Score([o for o in self.outcomes if o.expected.split == split])


def score(kb=None) -> Score:
    kb = kb or kb_module.load()
    return Score([run_one(kb, e) for e in load_corpus()])
