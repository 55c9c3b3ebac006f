"""How `ddp-doctor ask` reads a post: both readers, the questions it asks, "did you mean".

The lexicon (understand.py) and the nearest examples (retrieve.py) are combined by
`retrieve.decide`; a post is split into prose and quoted logs by post.py. This module puts
them together for the command and renders the choices offered when the reading is not
clear. Imported on the `ask` path, by the session's description and follow-ups, and by the
replay of a saved session's description.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..reading.post import Post, split_post

# a post, not a book: only its first sentences are looked at for questions (each is read by
# the lexicon; 20,000 one-line questions took 49 s), and at most this many are answered
MAX_SENTENCES = 40
MAX_ANSWERS = 5


def read_question(kb, text: str):
    """`retrieve.Reread` of `text`: `.understood` (what to act on) and `.candidates`."""
    from ..reading.retrieve import reread
    from ..reading.understand import understand

    return reread(kb, understand(kb, text))


def facts_with_leans(kb, facts: Mapping[str, Any], text: str) -> dict[str, Any]:
    """`facts` with how near `text` is to each cause's examples (`text_leans`, which the
    engine adds to the causes' log-odds; none for an empty text). The session's description,
    `ask` and a saved session's `said:` read a description this way; a detail typed later is
    read by the lexicon alone (it changes facts, it is no new story)."""
    from ..reading.retrieve import cause_leans, index_for, nearest
    from ..reasoning.engine import TEXT_LEANS

    facts = dict(facts)
    if text.strip():
        index, calibration = index_for(kb)
        leans = cause_leans(nearest(index, text), calibration)
        if leans:
            facts[TEXT_LEANS] = leans
    return facts


def beside_an_error(found_error: bool, facts: Mapping[str, Any]) -> dict[str, Any]:
    """What a description says, less the error it names in words when an error was pasted or
    quoted: the log says which error it is better than a sentence about it can."""
    facts = dict(facts)
    if found_error:
        facts.pop("family", None)
    return facts


def family_told(kb, result, facts: Mapping[str, Any]) -> str:
    """The error to diagnose: the one a paste or a quoted log shows, else the one the text
    tells in words ("PyTorch says it found no unused parameters": the warning, not the usual
    error), else the usual one (causes.yaml `engine: default_family`)."""
    if result is not None and result.findings:
        return result.facts["family"]
    return facts.get("family") or kb.engine["default_family"]


def read_post(kb, text: str) -> tuple[Post, list[str]]:
    """The post's parts and the sentences that ask (the lexicon's question cues), in order."""
    from ..reading.understand import understand

    post = split_post(text)
    if len(post.sentences) < 2:  # one sentence: read whole, as before (no second reading)
        return post, []
    asking = []
    for sentence in post.sentences[:MAX_SENTENCES]:
        read = understand(kb, sentence)
        if read.is_question and not read.instruction:
            asking.append(sentence)
    return post, asking


def raised_in(kb, post: Post, text: str) -> str | None:
    """The other error a text quotes: the exception line of its log or prose (`Post.raised`),
    else the line holding another error's own message (understand.other_error_quoted)."""
    from ..reading.understand import other_error_quoted

    return post.raised or other_error_quoted(kb, text)


def asked_sentence(kb, post: Post, asking: list[str]) -> str | None:
    """What to answer in a post that asks one question: the first asking sentence that names
    a fix (the lexicon's reading), those ending in a question mark first, with the asking
    sentences right after it that name no other fix; None for a one-sentence text or when no
    asking sentence names a fix (then the whole prose is read, as before)."""
    from ..reading.understand import understand

    if len(post.sentences) < 2:
        return None

    def fixes_named(sentence: str) -> tuple[str, ...]:
        intent = understand(kb, sentence).intent
        return intent.fixes if intent is not None else ()

    marked = [s for s in asking if s.rstrip().endswith(("?", "？"))]
    for sentence in marked + [s for s in asking if s not in marked]:
        named = fixes_named(sentence)
        if not named:
            continue
        # the questions right after it that name no other fix go on asking about it: "Can we
        # disable find_unused_parameters? How will this affect the training speed?"
        read = [sentence]
        # within the sentences looked at for questions: a post repeating one question 2,000
        # times would otherwise read every copy (all of them "in asking")
        looked_at = post.sentences[:MAX_SENTENCES]
        at = looked_at.index(sentence)
        if at and _compares_with_the_one_before(kb, sentence, looked_at[at - 1], named):
            read.insert(0, looked_at[at - 1])
        for after in looked_at[at + 1 :]:
            if after not in asking or fixes_named(after) not in ((), named):
                break
            read.append(after)
        return " ".join(read)
    return None


def _compares_with_the_one_before(kb, sentence: str, before: str, named) -> bool:
    """ "Move the projector call into forward. How does this compare with just turning on
    find_unused_parameters?": a comparison naming one fix and opening by pointing back compares
    it with a fix the sentence before names."""
    from ..reading.understand import points_back, understand

    # the cheap tests first: most asked sentences name one fix and point nowhere
    if len(named) != 1 or not points_back(kb, sentence):
        return False
    intent = understand(kb, sentence).intent
    if intent is None or intent.aspect != "difference":
        return False
    earlier = understand(kb, before).intent
    return earlier is not None and bool(set(earlier.fixes) - set(named))


def with_context(got, told: Mapping[str, Any]):
    """`got` (the reading of the asked sentence) with the facts the rest of the post tells (the
    framework, what is set), bar those the fix asked about implies unless it "still fails":
    "how do I set find_unused_parameters?" does not say it is set."""
    from dataclasses import replace

    intent = got.understood.intent
    implied = (
        set(intent.on_facts) if intent is not None and intent.aspect != "still_fails" else set()
    )
    facts = {k: v for k, v in told.items() if k not in implied}
    return replace(got, understood=replace(got.understood, facts={**facts, **got.understood.facts}))


def read_asked(kb, text: str, post: Post | None = None, asking: list[str] | None = None):
    """`retrieve.Reread` of a post as `ask` answers it when it asks one question (or several
    with one answer): the sentence `asked_sentence` picks, read alone, with the facts the rest
    of the prose tells; else the whole prose, as before. A story around a question ("I read I
    can pass find_unused_parameters=True. ... Does it make training slower?") otherwise decides
    what is asked ("still fails", from the story), and a description after the question turns
    the question into a description."""
    from ..reading.understand import understand

    if post is None or asking is None:
        post, asking = read_post(kb, text)
    prose = post.prose if post.log and post.prose else text
    sentence = asked_sentence(kb, post, asking)
    if sentence is None:
        return about_a_quoted_warning(kb, read_question(kb, prose), text)
    got = with_context(read_question(kb, sentence), understand(kb, prose).facts)
    return about_a_quoted_warning(kb, got, text)


def about_a_quoted_warning(kb, got, text: str):
    """A question that quotes a known warning (a family of severity `warning` in
    signatures.yaml: "find_unused_parameters=True was specified in DDP constructor, but did not
    find any unused parameters ... Is it normal?"), or tells it in words (a lexicon reading that
    sets the family), asks about what the warning advises, not about the option its words name:
    the fix asked about becomes the first fix of the likeliest cause of the warning's diagnosis
    (there, turning the flag back off), with the aspect asked. The answer explains that fix;
    whether it is right for the model is the diagnosis's job."""
    from dataclasses import replace

    intent = got.understood.intent
    # two fixes named ("must I keep it?") are answered as asked: no need to read the warning
    if intent is None or not intent.fixes or len(intent.fixes) > 1:
        return got
    from ..reading.triage import triage_text

    found = triage_text(kb, text, "<ask>")
    facts = found.facts
    families = [kb.family(f.family) for f in found.findings]
    told = got.understood.facts.get("family")
    if not families and told is not None:
        # the warning told in words ("the warning says it found no unused parameters")
        families, facts = [kb.family(told)], got.understood.facts
    if not families or any(f is None or f.severity != "warning" for f in families):
        return got
    from ..reasoning.engine import rank_causes

    causes = rank_causes(kb, facts)  # the likeliest cause only: no decision table
    fixes = causes[0].cause.fixes if causes else ()
    if not fixes or fixes[0] == intent.fixes[0]:
        return got
    fix = fixes[0]
    about = replace(intent, topics=(fix,), fixes=(fix,), on_facts={})
    # the warning says which fix is asked about: no "did you mean" between the option's readings
    return replace(got, understood=replace(got.understood, intent=about), candidates=())


def several_answers(kb, post: Post, asking: list[str], lang: str, facts=None) -> list[tuple]:
    """(question, Answer, Reread) for each asking sentence that gets an answer, when two or
    more do; else []: one question is read with the whole prose around it, as before.

    A question that names no fix, right after one that did, asks about that fix when it says
    what it asks ("Does find_unused_parameters=True slow training? Where do I set it in the
    Trainer?"); else it is read together with the sentences before it, which usually name the
    option."""
    out = _answers(kb, post, asking, lang, facts, read_with_story=True)
    return out if len(out) >= 2 else []


def answers_beside_an_error(kb, post: Post, lang: str) -> tuple[list[tuple], set[str]]:
    """(question, Answer, Reread) for each question a post asks about a fix beside the error it
    quotes, and every sentence read as such a question (one asking again what an earlier one
    asked is answered once): the error is diagnosed, and "will find_unused_parameters=True slow
    training down?" is answered too. A sentence asks about a fix when the lexicon reads it so (a
    question, an instruction, or a statement saying only the fix and what is asked: "the flag
    made training slower"), or when it is a question right after one that did and says what it
    asks ("where do I set it?"). A question about the error itself ("how do I fix this?") names
    no fix: the diagnosis is its answer."""
    from ..reading.understand import understand

    asking = [
        sentence
        for sentence in post.sentences[:MAX_SENTENCES]
        if (read := understand(kb, sentence)).intent is not None or read.is_question
    ]
    about_a_fix: set[str] = set()
    answers = _answers(kb, post, asking, lang, None, False, about_a_fix)
    return answers, about_a_fix


def _answers(  # noqa: PLR0913
    kb, post: Post, asking: list[str], lang: str, facts, read_with_story: bool, about_a_fix=None
) -> list:
    """The answers of `several_answers` and `answers_beside_an_error`: a question naming no fix
    right after one about a fix, and saying what it asks ("1. Will X slow training down? 2.
    Where do I set it?"), goes on asking about that fix. Further away, "it" may be anything (an
    issue template's "What version are you seeing the problem on?"), and a question that says
    nothing of what it asks ("any better way?") asks for what the diagnosis gives: with
    `read_with_story` such a question is read with the sentences before it, else it is left to
    the diagnosis. `about_a_fix` (a set) gets every question read as asking about a fix."""
    from ..reading.retrieve import reread
    from ..reading.understand import aspect_asked, understand
    from .ask import build_answer

    out: list[tuple] = []
    chain = None  # (the last question about a fix, the intent it asked with)
    for question in asking:
        if len(out) == MAX_ANSWERS:
            break
        read = understand(kb, question)  # the lexicon's reading, once: it says if a fix is named
        got = reread(kb, read)
        at = post.sentences.index(question)
        if read.intent is not None:
            chain = (question, got.understood.intent)
        elif (
            chain is not None
            and at
            and post.sentences[at - 1] == chain[0]
            and (aspect := aspect_asked(kb, question, len(chain[1].fixes))) is not None
        ):
            got = _about_the_fix_before(got, chain[1], aspect)
            chain = (question, chain[1])
        elif read_with_story:
            got = read_question(kb, " ".join(post.sentences[: at + 1]))
        else:
            continue
        answer = build_answer(kb, got.understood, lang, facts)
        if answer is not None and about_a_fix is not None:
            about_a_fix.add(question)
        if answer is not None and all(
            (a.fixes, a.aspect) != (answer.fixes, answer.aspect) for _, a, _ in out
        ):
            out.append((question, answer, got))
    return out


def _about_the_fix_before(got, before, aspect: str):
    """`got` asking about `aspect` ("where do I set it?") of the fix(es) of the question before
    it (`before`, an Intent): no "did you mean" between other fixes."""
    from dataclasses import replace

    intent = replace(before, aspect=aspect)
    return replace(got, understood=replace(got.understood, intent=intent), candidates=())


def story_read(kb, post: Post, answered: list[tuple], asked: set[str]):
    """The Understanding to diagnose a post with: its sentences bar those `asked` about a fix
    (both from `answers_beside_an_error`), with the facts the questions `answered` tell besides
    the fix they ask about (the framework they name). "Will find_unused_parameters=True slow
    down training?" says nothing of whether the flag is on."""
    from dataclasses import replace

    from ..reading.understand import understand

    story = understand(kb, " ".join(s for s in post.sentences if s not in asked))
    if not asked:
        return story
    facts: dict[str, Any] = {}
    readings = list(story.readings)
    for _, _, got in answered:
        facts.update(got.understood.facts)
        readings += got.understood.readings
    return replace(story, readings=tuple(readings), facts={**facts, **story.facts})


# ---------------------------------------------------------------------------- did you mean


def choice_label(kb, choice, lang: str) -> str:
    """ "Pass `find_unused_parameters=True` ...: what it costs (speed, memory)"."""
    from ..common.i18n import tr

    fix = kb.fixes[choice.fix].title.get(lang)
    aspect = tr(kb, f"aspect_{choice.aspect or 'none'}", lang)
    return tr(kb, "choice_label", lang, fix=fix, aspect=aspect)


def choices_markdown(kb, candidates, lang: str, answered: bool = True) -> str:
    """The readings offered, numbered, and that the first is answered below (`answered`)."""
    from ..common.i18n import tr

    if not candidates:
        return ""
    lines = [tr(kb, "choices_heading", lang), "", *_numbered(kb, candidates, lang)]
    if answered:
        lines += ["", tr(kb, "choices_answering", lang, number=1)]
    return "\n".join(lines) + "\n\n"


def offered_besides_markdown(kb, candidates, lang: str) -> str:
    """After a diagnosis: the readings of the fix the text names, in case it asked about it."""
    from ..common.i18n import tr

    lines = [tr(kb, "choices_besides_diagnosis", lang), "", *_numbered(kb, candidates, lang)]
    return "\n" + "\n".join([*lines, "", tr(kb, "choices_ask_it", lang)]) + "\n"


def _numbered(kb, candidates, lang: str) -> list[str]:
    return [f"{n}. {choice_label(kb, c, lang)}" for n, c in enumerate(candidates, 1)]


def candidates_json(kb, candidates, lang: str) -> list[dict[str, Any]]:
    return [
        {
            "fix": c.fix,
            "aspect": c.aspect,
            "score": c.score,
            "label": choice_label(kb, c, lang),
        }
        for c in candidates
    ]


def choose(understood, choice):
    """The understanding with its question set to `choice` (a reading the user picked)."""
    from dataclasses import replace

    from ..reading.understand import Intent

    keep = understood.intent if understood.intent is not None else None
    same = keep is not None and keep.fixes == (choice.fix,)
    intent = Intent(
        topics=keep.topics if same else (choice.fix,),
        fixes=(choice.fix,),
        aspect=choice.aspect,
        on_facts=keep.on_facts if same else {},
    )
    return replace(understood, intent=intent)


def post_json(answers, lang: str, kb, render) -> dict[str, Any]:
    """Several questions in one post: one answer document each, under `answers`."""
    from ..output.render import SCHEMA_VERSION

    documents = []
    for question, answer, got in answers:
        data: Mapping[str, Any] = render(answer, lang, got.understood)
        documents.append(
            {**data, "question": question, "candidates": candidates_json(kb, got.candidates, lang)}
        )
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "answers",
        "status": "answered",
        "lang": lang,
        "answers": documents,
    }
