"""Free text -> facts, with a confidence and the words that said it.

Pure: a sentence and the knowledge base in, `Understanding` out; no terminal, no I/O. What
the words mean is data (rules/lexicon.yaml): named term lists (English, Chinese, code
spellings) and readings, each an alternative of terms that must occur close together in
one sentence. A negation just before a reading, in the same clause, turns it into its
`negated` facts ("I don't call backward twice" -> one backward); a hedge ("maybe") halves
its confidence. Proximity is counted in words, a CJK character as half a word, so the same
window fits "loss only uses the first output" and "loss 只用了第一个输出".

The same terms recognise questions about the knowledge base: a topic (a fix, by its names)
and an aspect (cost, difference, safety, framework spelling, "still fails").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .kb import KnowledgeBase, RulesError, Text

USE_THRESHOLD = 0.5  # a fact read with less confidence is shown as a guess, not used
MAX_CHARS = 20_000  # a description, not a log: longer text is read up to here
HEDGE_FACTOR = 0.5
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_HAN = re.compile(f"[{_CJK}]")
_ASCII_WORD = re.compile(r"[A-Za-z0-9_]+")
# sentence ends: 。！？；!?; and a full stop followed by a space or the end (not `loss.backward`)
_SENTENCE_END = re.compile(r"[。！？；!?;\n]|\.(?=\s|$)")
_CLAUSE_PUNCT = re.compile(r"[，,、：:（）()]")


@dataclass(frozen=True)
class Reading:
    """One thing the text says: the facts, how sure, and where it says it."""

    id: str
    facts: Mapping[str, Any]
    confidence: float
    span: tuple[int, int]  # character offsets in the text
    quote: str
    negated: bool
    says: Text


@dataclass(frozen=True)
class Intent:
    """A question about the knowledge base: which entries, and what about them."""

    topics: tuple[str, ...]  # topic ids (rules/lexicon.yaml topics), in text order
    fixes: tuple[str, ...]  # the fixes they name
    aspect: str | None  # cost | difference | safe | still_fails | framework | why
    on_facts: Mapping[str, Any]  # facts a topic implies when asked why it "still fails"


@dataclass(frozen=True)
class Understanding:
    text: str
    lang: str  # the language the text is written in: zh when it holds Chinese
    readings: tuple[Reading, ...]  # every reading found, strongest first
    facts: Mapping[str, Any]  # the facts to use: confident readings, conflicts resolved
    guesses: tuple[Reading, ...]  # readings below the threshold (shown, not used)
    is_question: bool
    intent: Intent | None  # set when the text asks about a knowledge-base entry

    @property
    def used(self) -> tuple[Reading, ...]:
        """The readings whose facts are used, in text order."""
        kept = [
            r
            for r in self.readings
            if r.confidence >= USE_THRESHOLD
            and all(self.facts.get(k) == v for k, v in r.facts.items())
        ]
        return tuple(sorted(kept, key=lambda r: r.span))


# ---------------------------------------------------------------------------- compiling


@dataclass(frozen=True)
class _Term:
    id: str
    regex: re.Pattern


@dataclass(frozen=True)
class _ReadingRule:
    id: str
    sets: Mapping[str, Any]
    negated: Mapping[str, Any] | None
    confidence: float
    window: float
    says: Text
    alternatives: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class _Lexicon:
    terms: Mapping[str, _Term]
    readings: tuple[_ReadingRule, ...]
    negation: re.Pattern
    hedge: re.Pattern
    clause_break: re.Pattern
    question: re.Pattern
    question_start: re.Pattern
    topics: tuple[tuple[str, str, Mapping[str, Any], re.Pattern], ...]
    aspects: tuple[tuple[str, re.Pattern], ...]


_COMPILED: dict[int, tuple[KnowledgeBase, _Lexicon]] = {}


def phrase_regex(entry: str) -> str:
    """The regex source of one lexicon entry: `re:` + a regex, or a phrase.

    A phrase matches case-insensitively; a space in it also matches no space (users type
    `两次backward` and `两次 backward`); Latin words match whole words (`two` is not in
    `network`), with an optional plural `s`.
    """
    if entry.startswith("re:"):
        return entry[3:]
    words = [re.escape(w) for w in entry.lower().split()]
    body = r"\s*".join(words)
    if re.match(r"[a-z0-9_]", entry.lower()):
        body = r"(?<![A-Za-z0-9_])" + body
    if re.search(r"[a-z0-9_]$", entry.lower()):
        plural = "(?:s|es)?" if re.search(r"[a-z]{3}$", entry.lower()) else ""
        body = body + plural + r"(?![A-Za-z0-9_])"
    return body


def _alternation(entries) -> re.Pattern:
    # longest first, so "never called" wins over "never" at the same place
    sources = sorted((phrase_regex(e) for e in entries), key=len, reverse=True)
    return re.compile("|".join(f"(?:{s})" for s in sources) or "(?!)", re.IGNORECASE)


def _compile(kb: KnowledgeBase) -> _Lexicon:
    cached = _COMPILED.get(id(kb))
    if cached is not None and cached[0] is kb:
        return cached[1]
    raw = kb.lexicon
    terms = {t["id"]: _Term(t["id"], _alternation(t["match"])) for t in raw.get("terms", [])}
    readings = []
    for item in raw.get("readings", []):
        alternatives = tuple(tuple(alt) for alt in item["match"])
        for alt in alternatives:
            for name in alt:
                if name not in terms:
                    raise RulesError(
                        "lexicon.yaml", None, f"reading {item['id']!r}: unknown term {name!r}"
                    )
        says = item["says"]
        readings.append(
            _ReadingRule(
                id=item["id"],
                sets=dict(item["sets"]),
                negated=dict(item["negated"]) if item.get("negated") else None,
                confidence=float(item.get("confidence", 0.8)),
                window=float(item.get("window", 4)),
                says=Text(says["en"], says["zh"]),
                alternatives=alternatives,
            )
        )
    cues = raw.get("cues", {})
    topics = []
    for topic in raw.get("topics", []):
        if topic["fix"] not in kb.fixes:
            raise RulesError(
                "lexicon.yaml", None, f"topic {topic['id']!r}: unknown fix {topic['fix']!r}"
            )
        entries = []
        for entry in topic["match"]:  # a term id stands for its whole list
            entries += _term_entries(raw, entry) if entry in terms else [entry]
        topics.append(
            (topic["id"], topic["fix"], dict(topic.get("implies") or {}), _alternation(entries))
        )
    lexicon = _Lexicon(
        terms=terms,
        readings=tuple(readings),
        negation=_alternation(cues.get("negation", [])),
        hedge=_alternation(cues.get("hedge", [])),
        clause_break=_alternation(cues.get("clause_break", [])),
        question=_alternation(cues.get("question", [])),
        question_start=_alternation(cues.get("question_start", [])),
        topics=tuple(topics),
        aspects=tuple((a["id"], _alternation(a["match"])) for a in raw.get("aspects", [])),
    )
    _COMPILED[id(kb)] = (kb, lexicon)
    return lexicon


def _term_entries(raw: Mapping[str, Any], term_id: str) -> list[str]:
    return next(list(t["match"]) for t in raw.get("terms", []) if t["id"] == term_id)


# ---------------------------------------------------------------------------- reading


def text_lang(text: str) -> str:
    """`zh` when the text holds Chinese (two Han characters or more), else `en`."""
    return "zh" if len(_HAN.findall(text[:MAX_CHARS])) >= 2 else "en"


class _Units:
    """Word positions: a prefix sum where a Latin word counts 1 and a CJK character 1/2."""

    def __init__(self, text: str):
        weights = [0.0] * (len(text) + 1)
        for match in _ASCII_WORD.finditer(text):
            weights[match.start()] = 1.0
        for match in _HAN.finditer(text):
            weights[match.start()] = 0.5
        total, self.prefix = 0.0, [0.0]
        for weight in weights[:-1]:
            total += weight
            self.prefix.append(total)

    def between(self, start: int, end: int) -> float:
        return self.prefix[end] - self.prefix[start] if end > start else 0.0


def _sentences(text: str) -> list[tuple[int, int]]:
    bounds, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        bounds.append((start, match.end()))
        start = match.end()
    bounds.append((start, len(text)))
    return [(s, e) for s, e in bounds if text[s:e].strip()]


def understand(kb: KnowledgeBase, text: str) -> Understanding:
    """What the text says, as facts with confidence; and whether it asks about a fix."""
    text = text[:MAX_CHARS]
    lexicon = _compile(kb)
    units = _Units(text)
    found: list[Reading] = []
    for start, end in _sentences(text):
        found += _read_sentence(lexicon, text, start, end, units)
    found.sort(key=lambda r: -r.confidence)
    is_question = _is_question(lexicon, text)
    intent = _intent(lexicon, text) if is_question else None
    if intent is not None and intent.aspect != "still_fails":
        # "how do I set find_unused_parameters?" names the flag without saying it is on
        found = [r for r in found if not set(r.facts) & set(intent.on_facts)]
    facts = _resolve(found)
    guesses = tuple(r for r in found if r.confidence < USE_THRESHOLD)
    return Understanding(
        text=text,
        lang=text_lang(text),
        readings=tuple(found),
        facts=facts,
        guesses=guesses,
        is_question=is_question,
        intent=intent,
    )


def facts_from_text(kb: KnowledgeBase, text: str) -> dict[str, Any]:
    """Only the facts (the engine's old entry point)."""
    return dict(understand(kb, text).facts)


def _read_sentence(lexicon: _Lexicon, text: str, start: int, end: int, units: _Units):
    sentence = text[start:end]
    hits: dict[str, list[tuple[int, int]]] = {}
    for term in lexicon.terms.values():
        spans = [(m.start() + start, m.end() + start) for m in term.regex.finditer(sentence)]
        spans = [s for s in spans if s[1] > s[0]]
        if spans:
            hits[term.id] = spans[:50]  # a pathological sentence cannot make this quadratic
    out = []
    for rule in lexicon.readings:
        for alternative in rule.alternatives:
            best = _closest(alternative, hits, units, rule.window)
            if best is None:
                continue
            span, gap = best
            clause = _clause(lexicon, text, start, end, span)
            negated = _negated(lexicon, text, clause[0], span[0], units)
            facts = rule.negated if negated else rule.sets
            if not facts:
                break
            confidence = rule.confidence * (1.0 - 0.02 * gap)  # closer words, surer reading
            if lexicon.hedge.search(text, clause[0], clause[1]):
                confidence *= HEDGE_FACTOR
            out.append(
                Reading(
                    id=rule.id,
                    facts=dict(facts),
                    confidence=round(max(0.05, confidence), 3),
                    span=span,
                    quote=text[span[0] : span[1]],
                    negated=negated,
                    says=rule.says,
                )
            )
            break
    return out


def _closest(alternative, hits, units: _Units, window: float):
    """The tightest span holding one hit of every term, if its gaps fit the window."""
    if any(name not in hits for name in alternative):
        return None
    anchor_name, others = alternative[0], alternative[1:]
    best = None
    for anchor in hits[anchor_name]:
        chosen = [anchor]
        for name in others:
            candidates = [s for s in hits[name] if not _overlaps(s, chosen)]
            if not candidates:
                break
            chosen.append(min(candidates, key=lambda s: _gap(anchor, s, units)))
        else:
            gap = max((_gap(a, b, units) for a in chosen for b in chosen), default=0.0)
            if gap <= window and (best is None or gap < best[1]):
                span = (min(s[0] for s in chosen), max(s[1] for s in chosen))
                best = (span, gap)
    return best


def _overlaps(span, chosen) -> bool:
    return any(span[0] < c[1] and c[0] < span[1] for c in chosen)


def _gap(a, b, units: _Units) -> float:
    first, second = (a, b) if a[0] <= b[0] else (b, a)
    return units.between(first[1], second[0])


def _clause(lexicon: _Lexicon, text: str, start: int, end: int, span) -> tuple[int, int]:
    """The clause around `span`: from the last break before it to the first one after."""
    clause_start, clause_end = start, end
    for pattern in (_CLAUSE_PUNCT, lexicon.clause_break):
        for match in pattern.finditer(text, start, end):
            if match.end() <= span[0]:
                clause_start = max(clause_start, match.end())
            elif match.start() >= span[1]:
                clause_end = min(clause_end, match.start())
    return clause_start, clause_end


def _negated(lexicon: _Lexicon, text: str, clause_start: int, at: int, units: _Units) -> bool:
    """A negation word within three words before `at`, in the same clause."""
    for match in lexicon.negation.finditer(text, clause_start, at):
        if units.between(match.end(), at) <= 3.0:
            return True
    return False


def _resolve(readings: list[Reading]) -> dict[str, Any]:
    """One value per fact: the most confident reading wins; a tie between values drops it."""
    best: dict[str, tuple[float, Any]] = {}
    contested: set[str] = set()
    for reading in readings:
        if reading.confidence < USE_THRESHOLD:
            continue
        for key, value in reading.facts.items():
            if key not in best:
                best[key] = (reading.confidence, value)
            elif best[key][1] != value and best[key][0] - reading.confidence < 0.01:
                contested.add(key)
    return {k: v for k, (_, v) in best.items() if k not in contested}


# ---------------------------------------------------------------------------- questions


def _is_question(lexicon: _Lexicon, text: str) -> bool:
    stripped = text.strip()
    if stripped.endswith(("?", "？")):
        return True
    if len(stripped) > 300:  # a paragraph about a setup, not a question
        return False
    return bool(lexicon.question_start.match(stripped) or lexicon.question.search(stripped))


def _intent(lexicon: _Lexicon, text: str) -> Intent | None:
    topics: list[tuple[int, str, str, Mapping[str, Any]]] = []
    for topic_id, fix_id, on, regex in lexicon.topics:
        match = regex.search(text)
        if match:
            topics.append((match.start(), topic_id, fix_id, on))
    if not topics:
        return None
    topics.sort()
    aspect = None
    for aspect_id, regex in lexicon.aspects:
        if regex.search(text):
            aspect = aspect_id
            break
    if aspect == "difference" and len(topics) < 2:
        aspect = None  # "which is better" about one fix: fall back to what it does
        for aspect_id, regex in lexicon.aspects:
            if aspect_id != "difference" and regex.search(text):
                aspect = aspect_id
                break
    on: dict[str, Any] = {}
    for _, _, _, facts in topics:
        on.update(facts)
    return Intent(
        topics=tuple(t[1] for t in topics),
        fixes=tuple(dict.fromkeys(t[2] for t in topics)),
        aspect=aspect,
        on_facts=on,
    )
