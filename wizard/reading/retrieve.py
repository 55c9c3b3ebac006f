"""The second reader of `ddp-doctor ask`: the nearest labelled examples of rules/examples.yaml.

The lexicon (wizard/reading/understand.py) reads what a sentence says: facts, negation, an option
turned off. It recognises a question only by the words it knows, so a question phrased in a
way nobody wrote into the lexicon is missed. This reader compares the whole text with the
examples written beside each knowledge-base entry (a fix and what is asked about it, a cause,
an error family) by character 3-4-gram TF-IDF: no word lists, no tokenizer, no dependency,
and Chinese works as English does. `combine` decides between the two readers with thresholds
fitted on the corpus's `dev` half (`calibration` in examples.yaml), and says when neither is
clear enough to answer: then `ask` offers the best readings as choices ("did you mean").

A description is read by it too: its similarity to each cause's examples becomes that cause's
lean in the engine's ranking (`cause_leans`).

Pure: text + examples in, similarities out. Imported only where free text is read (`ask`, the
session's description and follow-ups, a saved session's replay), never by `triage`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

NGRAMS = (3, 4)
ASPECTS = ("why", "cost", "safe", "framework", "still_fails", "difference")
MAX_CHARS = 2_000  # a question, not a log: the rest of a long text adds only noise
_SPACES = re.compile(r"[\s_]+")  # `find_unused_parameters` reads as `find unused parameters`
# What is asked (cost, safety...) is said in words around the names of options, which would
# otherwise decide the likeness: the aspect index reads the text without code, option names
# (`find_unused_parameters=True`, `no_sync()`) and environment variables.
_CODE = re.compile(r"`[^`\n]*`|\b\w*(?:_\w*)+\b(?:\s*=\s*\w+)?|\b\w+\(\)|\b[A-Z]{2,}\w*")
_SCALE = 10_000  # posting weights are stored as integers in units of 1/_SCALE
TOP = 3  # a label's score: the mean of its best TOP similarities (steadier than the best one)


# ---------------------------------------------------------------------------- the index


def _grams(text: str) -> dict[str, int]:
    padded = " " + _SPACES.sub(" ", text[:MAX_CHARS].lower()).strip() + " "
    counts: dict[str, int] = {}
    for size in NGRAMS:
        for start in range(len(padded) - size + 1):
            gram = padded[start : start + size]
            counts[gram] = counts.get(gram, 0) + 1
    return counts


@dataclass(frozen=True)
class Label:
    """What an example is an example of: (`question`, fix, aspect), (`aspect`, None, aspect),
    (`cause`, cause id, None) or (`family`, family id, None)."""

    kind: str
    id: str | None
    aspect: str | None = None


@dataclass(frozen=True)
class Index:
    """The examples' TF-IDF vectors, stored inverted: gram -> "IDF EXAMPLE:WEIGHT ...".

    A posting list stays text until a query needs its gram: the cached index (one JSON object
    of short strings) then loads in a few milliseconds, where building it, or decoding every
    list, would cost tens (`ask` start-up matters; bench/run.py)."""

    texts: tuple[str, ...]
    labels: tuple[Label, ...]
    table: Mapping[str, str]


def _weights(counts: Mapping[str, int], idf) -> dict[str, float]:
    """Sublinear TF times IDF, unit length (so a dot product is the cosine)."""
    weights = {}
    for gram, count in counts.items():
        factor = idf(gram)
        if factor:
            weights[gram] = (1.0 + math.log(count)) * factor
    norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
    return {g: w / norm for g, w in weights.items()}


def build_index(examples: list[tuple[str, Label]]) -> Index:
    counted = [_grams(text) for text, _ in examples]
    frequency: dict[str, int] = {}
    for counts in counted:
        for gram in counts:
            frequency[gram] = frequency.get(gram, 0) + 1
    total = len(examples)
    idf = {g: math.log((1 + total) / (1 + n)) + 1.0 for g, n in frequency.items()}
    postings: dict[str, list[str]] = {g: [f"{idf[g]:.4f}"] for g in idf}
    for number, counts in enumerate(counted):
        for gram, weight in _weights(counts, idf.get).items():
            # weights in units of 1e-4, as integers: a third less to read from the cache
            postings[gram].append(f"{number}:{round(weight * _SCALE)}")
    return Index(
        texts=tuple(text for text, _ in examples),
        labels=tuple(label for _, label in examples),
        table={g: " ".join(p) for g, p in postings.items()},
    )


def _idf(table: Mapping[str, str]):
    def idf(gram: str) -> float:
        entry = table.get(gram)
        return float(entry[: entry.index(" ")]) if entry else 0.0

    return idf


def similarities(index: Index, text: str, exclude: str | None = None) -> list[float]:
    """The cosine of `text` with every example (`exclude`: an example text to leave out, for
    leave-one-out measurement on the examples' own corpus items)."""
    scores = [0.0] * len(index.texts)
    for gram, weight in _weights(_grams(text), _idf(index.table)).items():
        weight /= _SCALE
        for posting in index.table[gram].split(" ")[1:]:
            number, _, other = posting.partition(":")
            scores[int(number)] += weight * int(other)
    if exclude is not None:
        for number, example in enumerate(index.texts):
            if example == exclude:
                scores[number] = 0.0
    return scores


def index_json(index: Index) -> dict[str, Any]:
    return {
        "texts": list(index.texts),
        "labels": [[la.kind, la.id, la.aspect] for la in index.labels],
        "table": dict(index.table),
    }


def index_from_json(data: Any) -> Index | None:
    """The index a cache holds, or None when it is not of the shape `index_json` writes."""
    try:
        texts, labels, table = data["texts"], data["labels"], data["table"]
        if not (isinstance(table, dict) and len(texts) == len(labels)):
            return None
        return Index(tuple(map(str, texts)), tuple(Label(*la) for la in labels), table)
    except (KeyError, TypeError, ValueError):
        return None


def without_code(text: str) -> str:
    return _CODE.sub(" ", text)


def best_by(index: Index, scores: list[float], key) -> list[tuple[Any, float]]:
    """The score per `key(label)` (None keys skipped): the mean of its TOP best similarities
    (fewer examples count as zeros), best first."""
    found: dict[Any, list[float]] = {}
    for label, score in zip(index.labels, scores, strict=True):
        name = key(label)
        if name is not None:
            found.setdefault(name, []).append(score)
    means = {name: sum(sorted(values)[-TOP:]) / TOP for name, values in found.items()}
    return sorted(means.items(), key=lambda item: -item[1])


# ---------------------------------------------------------------------------- examples


def examples_of(data: Mapping[str, Any]) -> list[tuple[str, Label]]:
    """The (text, label) pairs of examples.yaml's data, both languages."""
    out: list[tuple[str, Label]] = []

    def add(entry, label):
        for lang in ("en", "zh"):
            out.extend((text, label) for text in entry.get(lang) or ())

    for entry in data.get("questions") or ():
        add(entry, Label("question", entry["fix"], entry["aspect"]))
    for entry in data.get("aspects") or ():
        add(entry, Label("aspect", None, entry["aspect"]))
    for entry in data.get("causes") or ():
        add(entry, Label("cause", entry["cause"], None))
    for entry in data.get("families") or ():
        add(entry, Label("family", entry["family"], None))
    return out


def check_references(kb, labels) -> str | None:
    """The first example label naming an unknown fix, cause or family, as a message (checked
    on every load: the rules may change while the cached index stays)."""
    known = {
        "question": set(kb.fixes),
        "aspect": {None},
        "cause": {c.id for c in kb.causes},
        "family": {f.id for f in kb.families},
    }
    for label in labels:
        if label.id not in known.get(label.kind, ()):
            return f"{label.kind} example: unknown id {label.id!r}"
        if label.aspect is not None and label.aspect not in ASPECTS:
            return f"{label.kind} example: unknown aspect {label.aspect!r}"
    return None


INDEX_FORMAT = 3  # bump when index_json changes


@dataclass(frozen=True)
class Indexes:
    whole: Index  # every example as written: fixes, causes, families
    asked: Index  # the questions and aspect phrasings without code: what is asked


def build_indexes(examples: list[tuple[str, Label]]) -> Indexes:
    asked = [(without_code(t), la) for t, la in examples if la.kind in ("question", "aspect")]
    return Indexes(build_index(examples), build_index(asked))


_INDEXES: dict[int, tuple[Any, Indexes, Mapping[str, Any]]] = {}


def index_for(kb) -> tuple[Indexes, Mapping[str, Any]]:
    """The index of the knowledge base's examples and their calibration: from the cache
    (rules_cache.py, keyed by the examples files' bytes) or built and cached, once a process."""
    import os

    from ..knowledge import rules_cache
    from ..knowledge.kb import RulesError, example_cache_key, example_paths, load_examples

    cached = _INDEXES.get(id(kb))
    if cached is not None and cached[0] is kb:
        return cached[1], cached[2]
    paths = example_paths(kb)
    name = f"examples-{example_cache_key(paths)}.json"
    use_cache = not os.environ.get("DDP_DOCTOR_NO_CACHE")
    stored = rules_cache.read(name, INDEX_FORMAT) if use_cache else None
    index = None
    if isinstance(stored, dict) and isinstance(stored.get("calibration"), dict):
        whole, asked = index_from_json(stored.get("whole")), index_from_json(stored.get("asked"))
        if whole is not None and asked is not None:
            index, calibration = Indexes(whole, asked), stored["calibration"]
    if index is None:
        data = load_examples(paths)
        index = build_indexes(examples_of(data))
        calibration = dict(data.get("calibration") or {})
        if use_cache:
            payload = {"whole": index_json(index.whole), "asked": index_json(index.asked)}
            rules_cache.write(name, INDEX_FORMAT, {**payload, "calibration": calibration})
    problem = check_references(kb, index.whole.labels)
    if problem is not None:
        raise RulesError(paths[-1] if paths else "examples.yaml", None, problem)
    _INDEXES[id(kb)] = (kb, index, calibration)
    return index, calibration


# ---------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class Choice:
    """One reading of a question: the fix it is about and what it asks, with a score."""

    fix: str
    aspect: str | None
    score: float


@dataclass(frozen=True)
class Nearest:
    """What the nearest examples say about a text."""

    fixes: tuple[tuple[str, float], ...]  # best similarity per fix, best first
    aspects: tuple[tuple[str, float], ...]  # per aspect (fix questions and generic phrasings)
    causes: tuple[tuple[str, float], ...]
    families: tuple[tuple[str, float], ...]
    # per (fix, aspect) of the fix questions, as written (with the option names): the nearest
    # readings themselves, not a fix and an aspect ranked apart
    pairs: tuple[tuple[tuple[str, str], float], ...] = ()

    def top(self, which: str) -> tuple[str | None, float, float]:
        """The best id of `which`, its similarity and its margin over the second."""
        ranked = getattr(self, which)
        if not ranked:
            return None, 0.0, 0.0
        second = ranked[1][1] if len(ranked) > 1 else 0.0
        return ranked[0][0], ranked[0][1], ranked[0][1] - second


def nearest(indexes: Indexes, text: str, exclude: str | None = None) -> Nearest:
    scores = similarities(indexes.whole, text, exclude)
    asked = similarities(
        indexes.asked, without_code(text), None if exclude is None else without_code(exclude)
    )

    def of(kind):
        return lambda label: label.id if label.kind == kind else None

    return Nearest(
        fixes=tuple(best_by(indexes.whole, scores, of("question"))),
        aspects=tuple(best_by(indexes.asked, asked, lambda label: label.aspect)),
        causes=tuple(best_by(indexes.whole, scores, of("cause"))),
        families=tuple(best_by(indexes.whole, scores, of("family"))),
        pairs=tuple(
            best_by(
                indexes.whole,
                scores,
                lambda label: (label.id, label.aspect) if label.kind == "question" else None,
            )
        ),
    )


@dataclass(frozen=True)
class Reread:
    """The two readers combined: the understanding `ask` acts on, the readings offered as
    choices when the best one is not clear (empty when it is; for a description, the readings
    of a fix it names, offered besides its diagnosis), and where each part came from."""

    understood: Any  # understand.Understanding, its intent possibly set or changed here
    candidates: tuple[Choice, ...]
    fix_from: str | None  # "lexicon" | "examples" | None
    aspect_from: str | None


def _setting(calibration: Mapping[str, Any], name: str) -> float:
    value = calibration.get(name)
    return float(value) if isinstance(value, (int, float)) else math.inf  # unset: never


def decide(
    understood,
    near: Nearest,
    calibration: Mapping[str, Any],
    implies: Mapping[str, Mapping[str, Any]] | None = None,
) -> Reread:
    """Combine the lexicon's reading with the nearest examples (pure; see the module doc).

    The lexicon keeps a fix it recognised by name, and its job for descriptions: a text it
    reads facts from and that asks nothing is diagnosed, never answered. The examples give
    the fix when the lexicon found none and their best similarity reaches `fix_alone`
    (`fix_statement` for a text that does not look like a question), and the aspect when their
    best aspect reaches `aspect_over` (over the lexicon's) or `aspect_alone` (none found).
    `implies`: the facts a fix's lexicon topic implies (for "why does it still fail with ...")."""
    from .understand import Intent

    intent = understood.intent
    fix, fix_sim, _ = near.top("fixes")
    aspect, aspect_sim, _ = near.top("aspects")
    fix_from = aspect_from = None
    # a statement of a set-up, or that an error happened, is diagnosed: naming a fix does not
    # make it a question about the fix
    describes = not understood.is_question and (bool(understood.facts) or understood.reports_error)
    if intent is not None and intent.fixes:
        fixes, fix_from = intent.fixes, "lexicon"
    elif describes or fix is None:
        fixes = ()
    elif fix_sim >= _setting(
        calibration, "fix_alone" if understood.is_question else "fix_statement"
    ):
        fixes, fix_from = (fix,), "examples"
    else:
        fixes = ()
    chosen_aspect = intent.aspect if intent is not None else None
    if chosen_aspect is not None:
        aspect_from = "lexicon"
    if fixes and aspect is not None:
        threshold = "aspect_over" if chosen_aspect is not None else "aspect_alone"
        if aspect != chosen_aspect and aspect_sim >= _setting(calibration, threshold):
            chosen_aspect, aspect_from = aspect, "examples"
    if fixes and (intent is None or fixes != intent.fixes or chosen_aspect != intent.aspect):
        same = intent is not None and fixes == intent.fixes
        on = intent.on_facts if same else dict((implies or {}).get(fixes[0]) or {})
        topics = intent.topics if same else fixes
        intent = Intent(topics=topics, fixes=fixes, aspect=chosen_aspect, on_facts=on)
        understood = replace(understood, intent=intent)
    if describes:
        # diagnosed; but a statement that names a fix and tells no error may be about the fix
        # after all ("Set use_reentrant=False to avoid duplicate allgather when gradient
        # checkpointing is enabled" reads as a set-up): its readings are offered besides
        named = () if understood.reports_error else understood.named
        candidates = _candidates(near, named[:1], None, "lexicon", calibration) if named else ()
    else:
        candidates = _candidates(near, fixes, chosen_aspect, fix_from, calibration)
    return Reread(understood, candidates, fix_from, aspect_from)


def _candidates(near: Nearest, fixes, aspect, fix_from, calibration) -> tuple[Choice, ...]:
    """The two or three best readings when the chosen one is not clear, the chosen first.

    The fix is clear when the text names it (the lexicon found it) or when the examples' best
    fix leads the next by `clear_margin`. The aspect is clear when the examples' best one leads
    by `clear_margin` and agrees with the lexicon's (if any), or, for a fix the text names,
    when the lexicon's aspect is among the examples' best two."""
    if not near.fixes or not near.aspects:
        return ()
    margin = _setting(calibration, "clear_margin")
    best_fix, _, fix_lead = near.top("fixes")
    best_aspect, _, aspect_lead = near.top("aspects")
    fix_clear = bool(fixes) and (fix_from == "lexicon" or fix_lead >= margin)
    aspect_clear = aspect is not None and aspect == best_aspect and aspect_lead >= margin
    if fix_from == "lexicon" and aspect is not None:
        # the text names the fix and the lexicon a cue of the aspect: clear unless the
        # examples see it nowhere near the top
        aspect_clear = aspect in [a for a, _ in near.aspects[:2]]
    if fix_clear and aspect_clear:
        return ()
    fix_options = [*fixes[:1], *(f for f, _ in near.fixes if f not in fixes[:1])]
    fix_options = fix_options[: 1 if fix_clear else 2]
    aspect_options = [aspect] if aspect is not None else []
    aspect_options += [a for a, _ in near.aspects if a not in aspect_options]
    aspect_options = aspect_options[: 1 if aspect_clear else 2]
    fix_score, aspect_score = dict(near.fixes), dict(near.aspects)
    pairs = [
        Choice(f, a, round(fix_score.get(f, 0.0) * aspect_score.get(a, 0.0), 4))
        for f in fix_options
        for a in aspect_options
    ]
    first = [c for c in pairs if fixes and (c.fix, c.aspect) == (fixes[0], aspect)]
    rest = sorted((c for c in pairs if c not in first), key=lambda c: -c.score)
    wanted = int(calibration.get("choices", 3))
    chosen = (first + rest)[:wanted]
    if len(chosen) > 1:
        # a place left (the fix is clear, two aspects offered): the nearest (fix, aspect)
        # reading not offered yet, its examples matched as a whole rather than the fix and the
        # aspect ranked apart (it never takes the place of one, nor makes a clear reading
        # offer choices)
        offered = {(c.fix, c.aspect) for c in chosen}
        extra = [
            Choice(f, a, round(score, 4)) for (f, a), score in near.pairs if (f, a) not in offered
        ]
        chosen += extra[: wanted - len(chosen)]
    return tuple(chosen) if len(chosen) > 1 else ()


def reread(kb, understood) -> Reread:
    """The `ask` path's reading: the lexicon's, with the nearest examples (see `decide`)."""
    index, calibration = index_for(kb)
    implies = {t["fix"]: t.get("implies") or {} for t in kb.lexicon.get("topics", ())}
    return decide(understood, nearest(index, understood.text), calibration, implies)


def cause_leans(near: Nearest, calibration: Mapping[str, Any]) -> tuple[tuple[str, float], ...]:
    """How far the nearest examples lean toward each cause, in log-odds for the engine (the
    fact `text_leans`): how far each cause's similarity passes `cause_floor`, times
    `cause_lean`; both fitted together (`bench/text_accuracy.py --fit`) on the `dev`
    descriptions and on sentences that tell nothing (tests/fixtures/chatter.yaml: "Hi, I'm
    training with DDP on 4 GPUs"), which share words with every cause's examples and must
    leave the ranking as the error alone gives it. () when the weight is unset."""
    weight = calibration.get("cause_lean")
    if not isinstance(weight, (int, float)) or weight <= 0:
        return ()
    floor = calibration.get("cause_floor")
    floor = float(floor) if isinstance(floor, (int, float)) else 0.0
    # rounded: hypothetical answers reuse the same rankings (engine memo) and reports stay stable
    return tuple(
        (cause, round(weight * (score - floor), 3)) for cause, score in near.causes if score > floor
    )
