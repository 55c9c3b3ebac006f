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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..knowledge.kb import NAMED_MODULES, KnowledgeBase, RulesError, Text
from .module_names import module_names, name_rules, named_says

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
    reports_error: bool = False  # says an error happened and names a fix (lexicon error_report)
    # opens with an instruction that names a fix ("Set X for DDP"): read as asking how to apply
    # it; a post's other sentences may say more of what is asked, so it does not pick the sentence
    instruction: bool = False
    # the fixes the text names, asked about or not: a description that names one may also be
    # a question about it ("Set use_reentrant=False to avoid ..."), offered as a reading
    named: tuple[str, ...] = ()

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


class _Doc:
    """A text prepared for phrase search: lower-cased, and without spaces (with a map back).

    Phrases are found with `str.find` on the squeezed text, not with one big regex: compiling
    hundreds of alternatives cost ~1 s per process, a plain search costs nothing up front.
    """

    def __init__(self, text: str):
        self.text = text
        chars, index = [], []
        for position, char in enumerate(text):
            if char.isspace():
                continue
            low = char.lower()
            chars.append(low if len(low) == 1 else char)  # keep offsets one to one
            index.append(position)
        self.squeezed = "".join(chars)
        self.index = index


def _is_word(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char == "_")


@dataclass(frozen=True)
class _Phrase:
    squeezed: str  # lower-cased, spaces removed
    words: int  # how many words the entry has: "may be" is not the entry "maybe"
    word_start: bool  # begins with a Latin word character: needs a word boundary before
    word_end: bool
    plural: bool  # an `s` / `es` may follow

    def spans(self, doc: _Doc) -> list[tuple[int, int]]:
        out, text, size = [], doc.text, len(self.squeezed)
        found = doc.squeezed.find(self.squeezed)
        while found != -1:
            begin = doc.index[found]
            end = doc.index[found + size - 1] + 1
            if len(text[begin:end].split()) > self.words:
                pass  # the text has a space the entry has not
            elif not (self.word_start and begin > 0 and _is_word(text[begin - 1])):
                if self.word_end and self.plural:
                    for suffix in ("es", "s"):
                        after = end + len(suffix)
                        if text[end:after].lower() == suffix and not (
                            after < len(text) and _is_word(text[after])
                        ):
                            end = after
                            break
                if not (self.word_end and end < len(text) and _is_word(text[end])):
                    out.append((begin, end))
            found = doc.squeezed.find(self.squeezed, found + 1)
        return out


@dataclass(frozen=True)
class _Words:
    """A word list: phrases (found literally) and `re:` regexes (searched in the text)."""

    phrases: tuple[_Phrase, ...]
    regexes: tuple[re.Pattern, ...]

    def spans(self, doc: _Doc, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
        end = len(doc.text) if end is None else end
        found: set[tuple[int, int]] = set()
        for phrase in self.phrases:
            found.update(phrase.spans(doc))
        for regex in self.regexes:
            found.update((m.start(), m.end()) for m in regex.finditer(doc.text))
        return sorted(s for s in found if start <= s[0] and s[1] <= end and s[1] > s[0])

    def first(self, doc: _Doc, start: int = 0, end: int | None = None) -> int | None:
        spans = self.spans(doc, start, end)
        return spans[0][0] if spans else None


def _phrase(entry: str) -> _Phrase:
    low = entry.lower()
    return _Phrase(
        squeezed="".join(low.split()),
        words=len(low.split()),
        word_start=_is_word(low[0]) and not low.startswith("n't"),  # "doesn't" ends in n't
        word_end=_is_word(low[-1]),
        plural=len(low) >= 3 and low[-3:].isascii() and low[-3:].isalpha(),
    )


def _words(entries) -> _Words:
    entries = [e for e in entries if e.strip()]
    return _Words(
        phrases=tuple(_phrase(e) for e in entries if not e.startswith("re:")),
        regexes=tuple(re.compile(e[3:], re.IGNORECASE) for e in entries if e.startswith("re:")),
    )


def find_phrase(text: str, entry: str) -> list[tuple[int, int]]:
    """Where one lexicon entry occurs in `text`: case-insensitive; a space in the entry also
    matches no space (`两次 backward` finds `两次backward`); Latin words match whole words
    (`two` is not in `network`), with an optional plural `s`."""
    return _words([entry]).spans(_Doc(text))


@dataclass(frozen=True)
class _ReadingRule:
    id: str
    sets: Mapping[str, Any]
    negated: Mapping[str, Any] | None
    confidence: float
    window: float
    says: Text
    alternatives: tuple[tuple[str, ...], ...]
    unless: tuple[str, ...]  # terms that, inside a match, make it about something else


@dataclass(frozen=True)
class _Topic:
    """A fix as a text names it (lexicon.yaml `topics`)."""

    id: str
    fix: str
    implies: Mapping[str, Any]  # facts naming it implies when asked why it "still fails"
    words: _Words  # any of these names it
    spelled: _Words  # its option as written in code: a reading of these alone tells no set-up
    context: frozenset[str]  # readings a statement about it in general may hold besides
    turned_off: str | None = None  # the topic asked about where the text turns its option off
    alone: bool = False  # it counts only where the text names no other topic
    combines: tuple[str, ...] = ()  # the topics that, named together, are this fix


@dataclass(frozen=True)
class _Aspect:
    """What a question asks about a fix (lexicon.yaml `aspects`), and its cues by strength."""

    id: str
    strong: _Words  # `match`: names what is asked by itself
    weak: _Words  # counted only where no aspect has a strong cue
    opening: _Words  # a verb that counts only as the text's first word
    one_fix: _Words | None  # the cues that still count where the text names one fix (None: all)


@dataclass(frozen=True)
class _Lexicon:
    terms: Mapping[str, _Words]
    readings: tuple[_ReadingRule, ...]
    negation: _Words
    not_negation: _Words
    advice: _Words
    counterfactual: _Words
    hedge: _Words
    clause_break: _Words
    question: _Words
    question_start: _Words
    message_reference: _Words
    quoted_message: _Words
    error_report: _Words
    own_setup: _Words
    problem: _Words
    other_error: _Words
    it_off: _Words
    points_back: _Words
    topics: tuple[_Topic, ...]
    aspects: tuple[_Aspect, ...]


_COMPILED: dict[int, tuple[KnowledgeBase, _Lexicon]] = {}
# the word lists of `cues:` in lexicon.yaml, each a field of _Lexicon of the same name
_CUE_LISTS = (
    "negation",
    "not_negation",
    "advice",
    "counterfactual",
    "hedge",
    "clause_break",
    "question",
    "question_start",
    "message_reference",
    "quoted_message",
    "error_report",
    "own_setup",
    "problem",
    "other_error",
    "it_off",
    "points_back",
)


def _topics(kb: KnowledgeBase, raw: Mapping[str, Any], terms) -> tuple[_Topic, ...]:
    """lexicon.yaml `topics`, checked: each names a known fix, its `turned_off` a topic, and a
    topic with no words of its own is one some topic turns off to (else nothing could ask it)."""
    entries = raw.get("topics", [])
    by_name = {topic["id"]: topic for topic in entries}
    ids = set(by_name)
    turned_to = {topic.get("turned_off") for topic in entries}
    topics = []
    for topic in entries:
        name = topic["id"]
        if topic["fix"] not in kb.fixes:
            problem = f"unknown fix {topic['fix']!r}"
        elif topic.get("turned_off", name) not in ids:
            problem = f"turned_off names no topic: {topic['turned_off']!r}"
        elif name in turned_to and not topic.get("implies"):
            # the text turns to it by saying what it implies (_turned_off)
            problem = "a topic turns off to it, but it implies no fact to say so"
        elif set(topic.get("combines") or ()) - ids or len(topic.get("combines") or "ab") < 2:
            problem = (
                f"combines names fewer than two topics, or unknown ones: {topic['combines']!r}"
            )
        elif not topic.get("match") and name not in turned_to and not topic.get("combines"):
            problem = "no words to match, no topic turns off to it, and it combines none"
        else:
            problem = None
        if problem is not None:
            raise RulesError("lexicon.yaml", None, f"topic {name!r}: {problem}")
        # a fix that combines others is spelled as they are, and is for what they are for
        parts = [by_name[part] for part in topic.get("combines") or ()]
        spelled = [w for t in (topic, *parts) for w in t.get("spelled") or ()]
        context = {c for t in (topic, *parts) for c in t.get("context") or ()}
        topics.append(
            _Topic(
                id=name,
                fix=topic["fix"],
                implies=dict(topic.get("implies") or {}),
                words=_words(_expanded(raw, terms, topic.get("match") or [])),
                spelled=_words(_expanded(raw, terms, spelled)),
                context=frozenset(context),
                turned_off=topic.get("turned_off"),
                alone=bool(topic.get("alone")),
                combines=tuple(topic.get("combines") or ()),
            )
        )
    return tuple(topics)


def _compile(kb: KnowledgeBase) -> _Lexicon:
    cached = _COMPILED.get(id(kb))
    if cached is not None and cached[0] is kb:
        return cached[1]
    raw = kb.lexicon
    terms = {t["id"]: _words(t["match"]) for t in raw.get("terms", [])}
    readings = []
    for item in raw.get("readings", []):
        alternatives = tuple(tuple(alt) for alt in item["match"])
        unless = tuple(item.get("unless") or ())
        for alt in (*alternatives, unless):
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
                unless=unless,
            )
        )
    cues = raw.get("cues", {})
    topics = _topics(kb, raw, terms)
    lexicon = _Lexicon(
        terms=terms,
        readings=tuple(readings),
        **{name: _words(cues.get(name, [])) for name in _CUE_LISTS},
        topics=topics,
        aspects=tuple(
            _Aspect(
                id=a["id"],
                strong=_words(a["match"]),
                weak=_words(a.get("weak", [])),
                opening=_words(a.get("opening", [])),
                one_fix=_words(a["one_fix"]) if "one_fix" in a else None,
            )
            for a in raw.get("aspects", [])
        ),
    )
    _COMPILED[id(kb)] = (kb, lexicon)
    return lexicon


def _expanded(raw: Mapping[str, Any], terms, entries) -> list[str]:
    out: list[str] = []
    for entry in entries:  # a term id stands for its whole list
        out += _term_entries(raw, entry) if entry in terms else [entry]
    return out


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


def understand(kb: KnowledgeBase, text: str, instructions: bool = True) -> Understanding:
    """What the text says, as facts with confidence; and whether it asks about a fix.
    `instructions=False`: the text is known to describe the user's set-up (the session's
    "describe it" prompt), so "set find_unused_parameters=True in the Trainer" is what was done,
    not an instruction asking how to do it."""
    text = text[:MAX_CHARS]
    lexicon = _compile(kb)
    units = _Units(text)
    doc = _Doc(text)
    sentences = _sentences(text)
    quoted = _quoted_message(lexicon, doc, sentences)
    found = _readings(lexicon, doc, sentences, units, quoted)
    asked = _what_is_asked(lexicon, doc, sentences, found, quoted, instructions)
    intent = asked.intent
    affirmed = [r for r in found if not r.negated]
    said = _resolve(affirmed)  # what it says, bar what it denies
    fixes_named = _turned_off(lexicon, doc, asked.named, affirmed).fixes if asked.named else ()
    if intent is not None and intent.aspect != "still_fails":
        intent = _turned_off(lexicon, doc, intent, affirmed)
        # "how do I set find_unused_parameters?" names the flag without saying it is on; what
        # else a reading says stays ("the warning says it found nothing unused": the warning)
        found = _without(found, set(intent.on_facts))
    facts = _resolve(found)
    if (
        intent is not None
        and intent.aspect == "still_fails"
        and _says_otherwise(said, intent.on_facts)
    ):
        # "I set find_unused_parameters=False and still get the error" names the fix, but the
        # fix was not applied: the text describes a set-up, and gets the diagnosis for it. (A
        # negated reading does not count: in "I can't make it work even with static_graph"
        # the "can't" is about the working.)
        intent = None
    named = _named_modules(kb, text)
    if named is not None:  # after the question is told from the description: a name is no set-up
        found = sorted([*found, named], key=lambda r: -r.confidence)
        facts = {**facts, **named.facts}
    guesses = tuple(r for r in found if r.confidence < USE_THRESHOLD)
    return Understanding(
        text=text,
        lang=text_lang(text),
        readings=tuple(found),
        facts=facts,
        guesses=guesses,
        is_question=asked.is_question,
        intent=intent,
        reports_error=asked.reports_error,
        instruction=asked.instruction,
        named=fixes_named,
    )


def _readings(lexicon: _Lexicon, doc: _Doc, sentences, units: _Units, quoted) -> list[Reading]:
    """Every reading of every sentence, outside quoted messages, strongest first."""
    everywhere = {
        name: [s for s in words.spans(doc) if not _overlaps(s, quoted)]
        for name, words in lexicon.terms.items()
    }
    found: list[Reading] = []
    for start, end in sentences:
        hits = {}
        for name, spans in everywhere.items():
            inside = [s for s in spans if start <= s[0] and s[1] <= end]
            if inside:
                hits[name] = inside[:50]  # a pathological sentence cannot make this quadratic
        found += _read_sentence(lexicon, doc, start, end, units, hits)
    found.sort(key=lambda r: -r.confidence)
    return found


@dataclass(frozen=True)
class _Asked:
    intent: Intent | None
    is_question: bool
    instruction: bool
    reports_error: bool
    named: Intent | None = None  # the fixes it names, whether or not it asks about them


def _what_is_asked(  # noqa: PLR0913
    lexicon: _Lexicon,
    doc: _Doc,
    sentences,
    found: list[Reading],
    quoted: list[tuple[int, int]],
    instructions: bool = True,
) -> _Asked:
    """Whether the text asks about a fix, and what (`found`: the readings of its facts;
    `quoted`: the spans of a message it quotes, whose words say nothing of what is asked)."""
    opening = _opening_aspect(lexicon, doc, sentences) if instructions else None
    intent = _intent(lexicon, doc, quoted=quoted)
    named = intent
    # the set-up told besides the fix, and the same without the fix's own words (see below)
    besides = _told_besides(lexicon, doc, found, intent, naming_too=True)
    # An instruction that names a fix ("Set X=True in the Trainer") asks how to apply it, unless
    # it says an error happened or tells the set-up besides the framework it names ("use
    # gradient checkpointing with LoRA on 2 GPUs" describes a model in a fix's words).
    instruction = (
        opening is not None
        and intent is not None
        and not besides - _WHERE_A_FIX_GOES
        and not lexicon.error_report.spans(doc)
    )
    if instruction:  # what it asks, unless a strong cue says otherwise: where the fix goes
        intent = _intent(lexicon, doc, opening, quoted)
    is_question = _is_question(lexicon, doc.text) or instruction
    reports_error = not is_question and _reports_an_error(lexicon, doc, intent)
    # A fix named in a description is no question about it, unless the text says only the fix
    # and what is asked about it (an aspect's strong cue: "…已设置，多卡还是报错", "it made
    # training slower"); a description telling the set-up besides is diagnosed. The words that
    # name the fix tell nothing besides here ("comparing the memory cost of use_reentrant=False
    # and True"): a statement needs that strong cue, where an instruction needs only its verb.
    # Two statements are about the fix without a cue: one that reads as nothing at all but the
    # fix's name and reports no error ("to_ddp() now accepts a broadcast_buffers parameter"),
    # and one that speaks of the fix in general, prose with no first person and no problem
    # told ("PyTorch now recommends use_reentrant=False for gradient checkpointing"), where
    # what the fix is for (its topic's `context`) tells no set-up of the writer's. A text known
    # to describe the set-up (the session's "describe it") speaks of no fix in general. What the
    # fix is for tells no set-up besides it in either ("the memory cost of use_reentrant=False
    # and True with gradient checkpointing").
    if not is_question and intent is not None:  # (a question keeps its intent: no work here)
        context = _context(lexicon, doc, intent)
        # a fix that "still fails" in a framework ("flag on in `DDP(...)`, still dies at step 2"):
        # the framework says where the fix went, no set-up besides it
        besides = _told_besides(lexicon, doc, [r for r in found if r.id not in context], intent)
        if intent.aspect == "still_fails":
            besides -= _WHERE_A_FIX_GOES
        about_the_fix = not besides and (
            _says_what_is_asked(lexicon, doc, quoted)
            or (not found and not lexicon.error_report.spans(doc))  # the fix's name alone
        )
        in_general = instructions and _in_general(lexicon, doc, found, quoted, intent, context)
        if not about_the_fix and not in_general:
            intent = None
    return _Asked(intent, is_question, instruction, reports_error, named)


# a statement in general is prose: this many words at least, not counting code
# ("--ddp_find_unused_parameters True", "find_unused_parameters defaults to False" are a set-up)
# and a CJK character as half a word, as proximity counts it (Chinese prose is prose too)
GENERAL_MIN_WORDS = 6
_PROSE_WORD = re.compile(r"(?<![\w./='`-])[A-Za-z][a-z]*(?:'[a-z]+)?(?![\w./=(`-])")


def _prose_words(text: str) -> float:
    return len(_PROSE_WORD.findall(text)) + len(_HAN.findall(text)) / 2


def _in_general(  # noqa: PLR0913
    lexicon: _Lexicon, doc: _Doc, found, quoted, intent: Intent, context: frozenset[str]
) -> bool:
    """Whether a statement speaks of the fix it names in general: prose quoting no message (a
    warning quoted is PyTorch speaking, and read as such), with no word of the writer's own
    set-up (`own_setup`), no error, failure or problem told (`error_report`, `problem`, the
    still-fails aspect's cues), and no reading but what the fix is for (`context`) or what
    naming it implies: here the fix's own words tell the set-up too ("with use_reentrant=True")."""
    still_fails = next((a.strong for a in lexicon.aspects if a.id == "still_fails"), None)
    if (
        quoted
        or _prose_words(doc.text) < GENERAL_MIN_WORDS
        or lexicon.own_setup.spans(doc)
        or lexicon.error_report.spans(doc)
        or lexicon.problem.spans(doc)
        or (still_fails is not None and _cued(still_fails, doc, quoted))
    ):
        return False
    implied = set(intent.on_facts)
    return all(
        r.confidence < USE_THRESHOLD or r.id in context or set(r.facts) <= implied for r in found
    )


def _context(lexicon: _Lexicon, doc: _Doc, intent: Intent) -> frozenset[str]:
    """The readings of what the fixes a statement names are for (`context`): "use_reentrant=
    False for gradient checkpointing" tells no set-up. A topic that has an option to spell counts
    only where the text spells it: "gradient_checkpointing" alone names the set-up, not the fix."""
    return frozenset().union(
        *(
            t.context
            for t in lexicon.topics
            if t.id in intent.topics
            and (not (t.spelled.phrases or t.spelled.regexes) or t.spelled.spans(doc))
        )
    )


def _told_besides(
    lexicon: _Lexicon,
    doc: _Doc,
    found: list[Reading],
    intent: Intent | None,
    naming_too: bool = False,
) -> set[str]:
    """The set-up the text tells besides the fix it names: the facts of its confident readings,
    except those the fix implies and, unless `naming_too`, those read from the very words that
    name the fix and nothing more: the topic's `spelled` words, its option as written in code
    ("use_reentrant=False" names the fix and reads as non-reentrant checkpointing). A plain word
    of the topic tells the set-up ("the checkpointing technique to save memory"), and so do the
    words around the option ("the error goes away with find_unused_parameters=True")."""
    if intent is None:
        return set()
    topics = () if naming_too else [t for t in lexicon.topics if t.id in intent.topics]
    naming = [span for topic in topics for span in topic.spelled.spans(doc)]
    told = {
        k
        for r in found
        if r.confidence >= USE_THRESHOLD and not _within(r.span, naming)
        for k in r.facts
    }
    return told - set(intent.on_facts)


def _named_modules(kb: KnowledgeBase, text: str) -> Reading | None:
    """The modules the text names, as one reading (fact `named_modules`: their attribute
    paths under the unwrapped model), for the snippets' {module}; None when it names none."""
    rules = name_rules(kb)
    names = module_names(rules, text) if rules is not None else []
    if not names:
        return None
    start, end = names[0][1]
    return Reading(
        id=NAMED_MODULES,
        facts={NAMED_MODULES: tuple(name for name, _ in names)},
        confidence=1.0,
        span=(start, end),
        quote=text[start:end],
        negated=False,
        says=named_says(rules, (name for name, _ in names)),
    )


def _quoted_message(
    lexicon: _Lexicon, doc: _Doc, sentences: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    """The spans of an error or warning quoted in the text, from a wording of PyTorch's or a
    framework's own message (`cues: quoted_message`) to the end of its sentence: "You can
    enable unused parameter detection by passing find_unused_parameters=True" is the message
    talking, not the user saying the flag is on (the triage of the message reads what it
    does say)."""
    spans = []
    for begin, end in lexicon.quoted_message.spans(doc):
        closing = next((e for s, e in sentences if s <= begin < e), end)
        spans.append((begin, max(end, closing)))
    return spans


def points_at_a_message(kb: KnowledgeBase, text: str) -> bool:
    """Whether the text speaks of an error or warning it does not hold ("the warning
    appears", "报错如下"): then the message itself is what to ask for."""
    return bool(_compile(kb).message_reference.spans(_Doc(text)))


def other_error_quoted(kb: KnowledgeBase, text: str) -> str | None:
    """The line of `text` that quotes another error's own message (`other_error`: "Default
    process group has not been initialized, ...", "DDP expects same model across all ranks"),
    as `ask` and the session name it; None when it quotes none."""
    text = text[:MAX_CHARS]
    found = _compile(kb).other_error.first(_Doc(text))
    if found is None:
        return None
    start = text.rfind("\n", 0, found) + 1
    end = text.find("\n", found)
    return text[start : len(text) if end < 0 else end].strip()


def facts_from_text(kb: KnowledgeBase, text: str) -> dict[str, Any]:
    """Only the facts of a text that describes the set-up (the engine's old entry point: the
    session's description, a saved session's `said:` lines)."""
    return dict(understand(kb, text, instructions=False).facts)


def _read_sentence(lexicon: _Lexicon, doc: _Doc, start: int, end: int, units: _Units, hits):
    text = doc.text
    out = []
    for rule in lexicon.readings:
        chosen = None
        for alternative in rule.alternatives:
            best = _closest(alternative, hits, units, rule.window)
            if best is None:
                continue
            span, gap = best
            if _overlaps(span, [s for name in rule.unless for s in hits.get(name, ())]):
                continue  # "forward twice before a backward": the count is the forward's
            clause = _clause(lexicon, doc, start, end, span)
            if _cue_before(lexicon.advice, doc, clause[0], span[0], units):
                continue  # "please set X=True" is what someone suggests, not the user's set-up
            if lexicon.counterfactual.spans(doc, clause[0], span[0]):
                continue  # "otherwise I have to use X=True": what they would do, not do
            negated = _negated(lexicon, doc, clause[0], span[0], units)
            if chosen is None or (chosen[2] and not negated):
                chosen = (span, gap, negated, clause)
            if not negated:
                # one affirmative wording is enough: "I call backward twice without
                # retain_graph" still calls it twice, whatever the negated mention says
                break
        if chosen is None:
            continue
        span, gap, negated, clause = chosen
        facts = rule.negated if negated else rule.sets
        if not facts:
            continue
        confidence = rule.confidence * (1.0 - 0.02 * gap)  # closer words, surer reading
        if lexicon.hedge.spans(doc, clause[0], clause[1]):
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


def _within(span, spans) -> bool:
    return any(c[0] <= span[0] and span[1] <= c[1] for c in spans)


def _gap(a, b, units: _Units) -> float:
    first, second = (a, b) if a[0] <= b[0] else (b, a)
    return units.between(first[1], second[0])


def _clause(lexicon: _Lexicon, doc: _Doc, start: int, end: int, span) -> tuple[int, int]:
    """The clause around `span`: from the last break before it to the first one after."""
    clause_start, clause_end = start, end
    breaks = [(m.start(), m.end()) for m in _CLAUSE_PUNCT.finditer(doc.text, start, end)]
    breaks += lexicon.clause_break.spans(doc, start, end)
    for begin, finish in breaks:
        if finish <= span[0]:
            clause_start = max(clause_start, finish)
        elif begin >= span[1]:
            clause_end = min(clause_end, begin)
    return clause_start, clause_end


def _negated(lexicon: _Lexicon, doc: _Doc, clause_start: int, at: int, units: _Units) -> bool:
    """A negation word within three words before `at`, in the same clause.

    "does not work with checkpointing" negates the working, not the checkpointing: a negation
    inside a `not_negation` phrase does not count.
    """
    blocked = lexicon.not_negation.spans(doc, clause_start, at)
    return _cue_before(lexicon.negation, doc, clause_start, at, units, blocked)


def _cue_before(  # noqa: PLR0913
    cue: _Words, doc: _Doc, clause_start: int, at: int, units: _Units, blocked=()
) -> bool:
    """A word of `cue` within three words before `at`, in the same clause, and not inside a
    `blocked` span. Advice ("please", "you should", "建议") so placed makes a reading what
    someone suggests ("Please set find_unused_parameters=True", quoted from an error), not
    what the user has done; a negation negates it."""
    for span in cue.spans(doc, clause_start, at):
        if not _overlaps(span, blocked) and units.between(span[1], at) <= 3.0:
            return True
    return False


def _resolve(readings: Iterable[Reading]) -> dict[str, Any]:
    """One value per fact: the most confident reading wins (readings come strongest first)."""
    facts: dict[str, Any] = {}
    for reading in readings:
        if reading.confidence < USE_THRESHOLD:
            continue
        for key, value in reading.facts.items():
            facts.setdefault(key, value)
    return facts


# ---------------------------------------------------------------------------- questions


def _is_question(lexicon: _Lexicon, text: str) -> bool:
    stripped = text.strip()
    if stripped.endswith(("?", "？")):
        return True
    if len(stripped) > 300:  # a paragraph about a setup, not a question
        return False
    if _ASKED_MIDWAY.search(stripped):  # "did I put it in the wrong spot? we use torchrun"
        return True
    doc = _Doc(stripped)
    return lexicon.question_start.first(doc) == 0 or bool(lexicon.question.spans(doc))


# a question mark that ends a sentence inside the text (not `?a=b` in a URL)
_ASKED_MIDWAY = re.compile(r"[?？](?=\s|$)")


def points_back(kb: KnowledgeBase, sentence: str) -> bool:
    """Whether a sentence opens by pointing back at the one before it ("这和直接开 X 比有啥区别？",
    "How does that compare with X?"): lexicon.yaml `points_back`."""
    return _compile(kb).points_back.first(_Doc(sentence.strip())) == 0


def _turned_off(lexicon: _Lexicon, doc: _Doc, intent: Intent, affirmed: list[Reading]) -> Intent:
    """ "Can I set find_unused_parameters=False?" names the flag's fix but asks about turning
    the flag off: a topic stands for its `turned_off` topic where a reading of the text (not
    negated: "can't I use it with ..." is about something else) says what that topic implies,
    the option off, and nothing else. "加了 find_unused_parameters=True 就能跑了，会影响精度吗"
    reads that the flag was off before it rescued the job, and asks about the flag itself. (A
    text that says the fix was not applied and that it still fails is a description: see
    `understand`.)"""
    by_id = {topic.id: topic for topic in lexicon.topics}
    # "I set find_unused_parameters=True. Can I turn it off?": "it" is the one fix named
    pronoun = len(intent.topics) == 1 and _cued(lexicon.it_off, doc, ())
    topics = tuple(
        by_id[t].turned_off
        if by_id[t].turned_off
        and (pronoun or _says_only(affirmed, by_id[by_id[t].turned_off].implies))
        else t
        for t in intent.topics
    )
    if topics == intent.topics:
        return intent
    on: dict[str, Any] = {}
    for topic in topics:
        on.update(by_id[topic].implies)
    return replace(
        intent,
        topics=topics,
        fixes=tuple(dict.fromkeys(by_id[t].fix for t in topics)),
        on_facts=on,
    )


def _without(readings: list[Reading], keys: set[str]) -> list[Reading]:
    """The readings with the facts `keys` taken out, those left saying nothing dropped."""
    out = []
    for r in readings:
        kept = {k: v for k, v in r.facts.items() if k not in keys}
        if len(kept) == len(r.facts):
            out.append(r)
        elif kept:
            out.append(replace(r, facts=kept))
    return out


_UNSAID = object()  # a fact the reading does not hold (None could be a value)


def _says_only(readings: list[Reading], implied: Mapping[str, Any]) -> bool:
    """Whether a confident reading says some of the facts a topic implies and nothing else."""
    return any(
        r.confidence >= USE_THRESHOLD
        and r.facts
        and all(implied.get(key, _UNSAID) == value for key, value in r.facts.items())
        for r in readings
    )


def _says_otherwise(facts: Mapping[str, Any], implied: Mapping[str, Any]) -> bool:
    """Whether the text says otherwise of a fact a fix it names implies."""
    return any(key in facts and facts[key] != value for key, value in implied.items())


def _reports_an_error(lexicon: _Lexicon, doc: _Doc, intent: Intent | None) -> bool:
    """An error that happened, a fix named in it ("训练时出现 Please set
    find_unused_parameters=True 错误"): diagnosed, not answered as a question about the fix."""
    return intent is not None and bool(lexicon.error_report.spans(doc))


def _says_what_is_asked(lexicon: _Lexicon, doc: _Doc, quoted=()) -> bool:
    """A strong cue of any aspect ("slow", "still get the error", "side effects")."""
    return any(_cued(aspect.strong, doc, quoted) for aspect in lexicon.aspects)


def _cued(words: _Words, doc: _Doc, quoted) -> bool:
    """Whether the text holds one of `words` outside the message it quotes: "which can adversely
    affect performance" in a quoted warning does not make "what does it mean?" a cost question."""
    return any(not _within(span, quoted) for span in words.spans(doc))


_WHERE_A_FIX_GOES = frozenset({"framework"})  # a fact an instruction may name: no set-up
_OPENING_SKIP = " \t\n\r-*>•\"'`(["  # what may stand before a sentence's first word


def _opening_aspect(lexicon: _Lexicon, doc: _Doc, sentences) -> str | None:
    """The aspect whose `opening` cue is the text's first word ("Set X for DDP"), if any. Only
    the first sentence's: later in a story, "Set X=True and it trains now" tells what was done."""
    if not sentences:
        return None
    first, end = sentences[0]
    while first < end and doc.text[first] in _OPENING_SKIP:
        first += 1
    for aspect in lexicon.aspects:
        if aspect.opening.first(doc, first, end) == first:
            return aspect.id
    return None


def aspect_asked(kb: KnowledgeBase, text: str, fixes: int = 1) -> str | None:
    """What `text` asks about a fix it does not name ("Where do I set it?" after a question that
    names the flag): the aspect its cues say, as if it named `fixes` fixes."""
    text = text[:MAX_CHARS]
    return _aspect(_compile(kb), _Doc(text), fixes > 1)


def _aspect(
    lexicon: _Lexicon, doc: _Doc, several: bool, opening: str | None = None, quoted=()
) -> str | None:
    # A strong cue ("slow down", "still get the error") names what is asked by itself; a weak
    # one ("still", "or", "problem") often means something else, so it counts only where no
    # aspect has a strong cue: "does it still slow training down?" asks about the cost.
    # Where the text names one fix, an aspect with `one_fix` cues counts only through them:
    # "which is better?" about one fix is no comparison, "X 和分别 backward 有什么区别" is.
    aspects = [
        a for a in lexicon.aspects if several or a.one_fix is None or _cued(a.one_fix, doc, quoted)
    ]
    strong = [a.id for a in aspects if _cued(a.strong, doc, quoted)]
    weak = [a.id for a in aspects if _cued(a.weak, doc, quoted)]
    found = strong or ([opening] if opening else weak)
    return found[0] if found else None


def _combined(lexicon: _Lexicon, doc: _Doc, topics: list) -> list:
    """Two fixes named together and not compared ("find_unused_parameters=True and also
    non-reentrant checkpointing: where do I set each?") are the fix that does both (a topic's
    `combines`). Where two such fixes have the same parts, the one whose first part the text
    names first: 检查点改成 use_reentrant=False、同时打开 find_unused_parameters is the switch
    of checkpointing with the flag back on. A combining topic's own words must be there too:
    "gradient checkpointing and find_unused_parameters=True" tells a set-up, not the fix that
    makes the checkpointing non-reentrant."""
    named = {t[1]: t for t in topics}
    fitting = [
        t
        for t in lexicon.topics
        if t.combines
        and all(p in named for p in t.combines)
        and (not (t.words.phrases or t.words.regexes) or t.words.first(doc) is not None)
    ]
    if not fitting:
        return topics
    best = min(fitting, key=lambda t: named[t.combines[0]][0])
    parts = [named[p] for p in best.combines]
    implies: dict[str, Any] = {}
    for part in parts:
        implies.update(part[3])
    kept = [t for t in topics if t[1] not in best.combines]
    return sorted([*kept, (min(p[0] for p in parts), best.id, best.fix, best.implies or implies)])


def _intent(lexicon: _Lexicon, doc: _Doc, opening: str | None = None, quoted=()) -> Intent | None:
    topics: list[tuple[int, str, str, Mapping[str, Any]]] = []
    for topic in lexicon.topics:
        at = None if topic.combines else topic.words.first(doc)
        if at is not None:
            topics.append((at, topic.id, topic.fix, topic.implies))
    # "this option" is the fix the text names, where it names one (`alone` topics)
    by_id = {topic.id: topic for topic in lexicon.topics}
    named = [t for t in topics if not by_id[t[1]].alone]
    topics = named or topics
    if not topics:
        return None
    topics.sort()
    aspect = _aspect(lexicon, doc, len(topics) > 1, opening, quoted)
    if aspect != "difference":
        topics = _combined(lexicon, doc, topics)
    on: dict[str, Any] = {}
    for _, _, _, facts in topics:
        on.update(facts)
    return Intent(
        topics=tuple(t[1] for t in topics),
        fixes=tuple(dict.fromkeys(t[2] for t in topics)),
        aspect=aspect,
        on_facts=on,
    )
