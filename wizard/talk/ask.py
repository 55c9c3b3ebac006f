"""`ddp-doctor ask` and the session's follow-ups: a sentence -> an answer or a diagnosis.

Pure where it decides (which language, what to answer, from which entries); the printing
helpers at the end take a stream. Answers are assembled only from the knowledge base: a fix's
`why`, `cost`, `warning`, its snippets per framework, measured `outcomes` when the rules have
them, and the engine's own ranking for "why does it still fail with ...?". Each part names the
entry it came from, so a reader can check it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..knowledge.kb import KnowledgeBase, Text
from ..reading.understand import Understanding, text_lang

# ---------------------------------------------------------------------------- language


def choose_lang(requested: str | None, text: str, environ: Mapping[str, str] | None = None) -> str:
    """`--lang` (or DDP_DOCTOR_LANG) wins; else a sentence with Chinese in it is answered in
    Chinese; else the locale decides (README: "Language")."""
    import os

    from ..common.i18n import LANG_ENV, SUPPORTED, detect_lang

    env = os.environ if environ is None else environ
    if requested in SUPPORTED:
        return requested
    explicit = env.get(LANG_ENV, "").strip().lower()
    if explicit in SUPPORTED:
        return explicit
    if text_lang(text) == "zh":
        return "zh"
    return detect_lang(env)


# ---------------------------------------------------------------------------- answers


@dataclass(frozen=True)
class Part:
    """One piece of an answer and the knowledge-base entry it came from."""

    heading: str
    text: str
    source: str  # for scripts (--json), e.g. "fixes.yaml › find_unused_parameters › cost"
    code: str | None = None
    language: str | None = None
    fix_id: str | None = None  # the stable fix id the reader is shown as the source
    measured: bool = False  # from the measurements on real DDP, not from the fix's prose


@dataclass(frozen=True)
class Answer:
    question: str
    fixes: tuple[str, ...]
    aspect: str | None
    parts: tuple[Part, ...]
    framework: str | None = None
    causes: tuple[Any, ...] = field(default_factory=tuple)  # RankedCause, for "still fails"


def build_answer(
    kb: KnowledgeBase,
    understood: Understanding,
    lang: str,
    facts: Mapping[str, Any] | None = None,
) -> Answer | None:
    """The answer to a question about a fix, or None when the text asks about none."""
    intent = understood.intent
    if intent is None or not intent.fixes:
        return None
    facts = {**(facts or {}), **understood.facts}
    framework = facts.get("framework")
    aspect = intent.aspect
    parts: list[Part] = []
    causes: tuple[Any, ...] = ()
    for fix_id in intent.fixes:
        fix = kb.fixes[fix_id]
        title = fix.title.get(lang)
        if aspect == "cost":
            parts += _texts(kb, fix, lang, title, ("cost", "why"))
        elif aspect == "safe":
            verdict = _safety_verdict(kb, fix, lang)
            if verdict is not None:  # the answer first, then its price and the failures
                parts += [verdict, *_texts(kb, fix, lang, title, ("cost",))]
                parts += _outcomes(kb, fix, lang, failures_only=True)
            else:
                parts += _texts(kb, fix, lang, title, ("warning", "cost"))
        elif aspect == "framework":
            parts += _snippet(kb, fix, lang, framework, facts)
        elif aspect == "still_fails":
            parts += _texts(kb, fix, lang, title, ("warning", "why"))
            parts += _outcomes(kb, fix, lang, failures_only=True)
        else:  # why, difference, or nothing more specific: what it does and what it costs
            parts += _texts(kb, fix, lang, title, ("why", "cost"))
    if aspect == "still_fails":
        from ..reasoning.engine import rank_causes, settings

        ranked = rank_causes(
            kb, {"family": settings(kb)["default_family"], **facts, **intent.on_facts}
        )
        causes = ranked[: settings(kb)["shown_causes"]]
    return Answer(understood.text, intent.fixes, aspect, tuple(parts), framework, causes)


_FIELD_HEADINGS = {
    "why": "answer_why",
    "cost": "answer_cost",
    "warning": "answer_warning",
}


def _texts(kb, fix, lang: str, title: str, fields: tuple[str, ...]) -> list[Part]:
    from ..common.i18n import tr
    from ..output.render import fill_quietly

    parts = []
    for name in fields:
        text: Text | None = getattr(fix, name, None)
        if text is None:
            continue
        heading = tr(kb, _FIELD_HEADINGS[name], lang, title=title)
        source = f"fixes.yaml › {fix.id} › {name}"
        # a warning about what the user said ("{said} the module is used: ...") becomes a
        # condition here: a question tells nothing about the user's model
        body = fill_quietly(text.get(lang), {"said": tr(kb, "said_if", lang)})
        parts.append(Part(heading, body, source, fix_id=fix.id))
    return parts


def _safety_verdict(kb, fix, lang: str) -> Part | None:
    """ "Is it safe?" answered in a few lines from the measured outcomes: the causes it
    works for, those it trains wrongly for (no error), those it still fails for. None when
    the fix has no measurements."""
    from ..common.i18n import tr

    results: dict[str, set[str]] = {}
    for outcome in fix.outcomes:
        if kb.cause(outcome.cause) is not None:
            results.setdefault(outcome.cause, set()).add(outcome.result)
    if not results:
        return None
    separator = tr(kb, "list_separator", lang)

    def titles(wanted) -> str:
        return separator.join(
            kb.cause(c).title.get(lang) for c, found in results.items() if wanted(found)
        )

    lines = []
    for key, wanted in (
        ("answer_safe_works", lambda found: found == {"works"}),
        ("answer_safe_depends", lambda found: "works" in found and len(found) > 1),
        ("answer_safe_wrong", lambda found: "works" not in found and "wrong" in found),
        ("answer_safe_error", lambda found: found == {"error"}),
    ):
        if causes := titles(wanted):
            lines.append(tr(kb, key, lang, causes=causes))
    heading = tr(kb, "answer_safe_heading", lang, title=fix.title.get(lang))
    source = f"fixes.yaml › {fix.id} › outcomes"
    return Part(heading, "\n".join(lines), source, fix_id=fix.id, measured=True)


def _outcomes(kb, fix, lang: str, failures_only: bool = False) -> list[Part]:
    """Measured outcomes of the fix per cause (fixes.yaml `outcomes`, from tests/ddp): failures
    first, each naming its scenario; only the failures when the user says it still fails."""
    from ..common.i18n import tr

    order = {"error": 0, "wrong": 1, "works": 2}
    lines = []
    for outcome in sorted(fix.outcomes, key=lambda o: order.get(o.result, 3)):
        cause = kb.cause(outcome.cause)
        if cause is None or outcome.result not in order:
            continue
        if failures_only and outcome.result == "works":
            continue
        said = tr(kb, f"answer_outcome_{outcome.result}", lang, cause=cause.title.get(lang))
        if outcome.note is not None:
            line = tr(
                kb,
                "answer_outcome_line_note",
                lang,
                outcome=said,
                note=outcome.note.get(lang),
                scenario=outcome.scenario,
            )
        else:
            line = tr(kb, "answer_outcome_line", lang, outcome=said, scenario=outcome.scenario)
        if line not in lines:
            lines.append(line)
    if not lines:
        return []
    heading = tr(kb, "answer_measured", lang, title=fix.title.get(lang))
    source = f"fixes.yaml › {fix.id} › outcomes"
    return [Part(heading, "\n".join(lines), source, fix_id=fix.id, measured=True)]


def _snippet(kb, fix, lang: str, framework: str | None, facts: Mapping[str, Any]) -> list[Part]:
    from ..common.i18n import tr
    from ..output.render import fields_for, fill_quietly

    chosen = framework if framework in fix.snippets else "pytorch"
    snippet = fix.snippets.get(chosen)
    if snippet is None:
        return []
    label = _framework_label(kb, chosen, lang)
    others = [_framework_label(kb, name, lang) for name in fix.snippets if name != chosen]
    joined = ("、" if lang == "zh" else ", ").join(others)
    text = tr(kb, "answer_frameworks_available", lang, frameworks=joined) if others else ""
    heading = tr(kb, "answer_snippet", lang, title=fix.title.get(lang), framework=label)
    return [
        Part(
            heading,
            text,
            f"fixes.yaml › {fix.id} › snippets › {chosen}",
            # {device_ids}, {wrap}, {module}...: filled from what the question told
            code=fill_quietly(snippet.code.get(lang), fields_for(kb, lang, facts)).rstrip("\n"),
            language=snippet.language,
            fix_id=fix.id,
        )
    ]


def _framework_label(kb, framework: str, lang: str) -> str:
    question = kb.question("framework")
    if question is not None:
        for option in question.options:
            if option.value == framework:
                return option.label.get(lang)
    return framework


# ---------------------------------------------------------------------------- what was read


def understood_lines(kb, understood: Understanding, lang: str) -> list[str]:
    """ "I read: ..." lines: each fact with the words it came from; guesses marked as unused."""
    from ..common.i18n import tr

    lines, said = [], set()
    for reading in understood.used:
        key = "ask_negated_item" if reading.negated else "ask_understood_item"
        # the same fact read twice ("加了 find_unused_parameters" ... "find_unused_parameters=
        # True") is said once, with the first words it came from
        if (key, reading.says.get(lang)) not in said:
            said.add((key, reading.says.get(lang)))
            lines.append(tr(kb, key, lang, says=reading.says.get(lang), quote=reading.quote))
    for reading in understood.guesses:
        lines.append(
            tr(kb, "ask_guess_item", lang, says=reading.says.get(lang), quote=reading.quote)
        )
    return lines


def understood_json(understood: Understanding) -> list[dict[str, Any]]:
    used = {id(r) for r in understood.used}
    return [
        {
            "reading": r.id,
            "facts": dict(r.facts),
            "confidence": r.confidence,
            "span": list(r.span),
            "quote": r.quote,
            "negated": r.negated,
            "used": id(r) in used,
            "says": {"en": r.says.en, "zh": r.says.zh},
        }
        for r in sorted(understood.readings, key=lambda r: r.span)
    ]


def answer_json(answer: Answer, lang: str, understood: Understanding) -> dict[str, Any]:
    from ..output.render import SCHEMA_VERSION

    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "answer",
        "status": "answered",
        "lang": lang,
        "question": answer.question,
        "fixes": list(answer.fixes),
        "aspect": answer.aspect,
        "framework": answer.framework,
        "parts": [
            {
                "heading": p.heading,
                "text": p.text,
                "source": p.source,
                "code": p.code,
                "language": p.language,
            }
            for p in answer.parts
        ],
        "causes": [
            {"id": c.id, "score": round(c.probability, 4), "title": c.cause.title.get(lang)}
            for c in answer.causes
        ],
        "understood": understood_json(understood),
    }


def nothing_understood_key(kb, understood: Understanding) -> str:
    """The message for a text nothing was understood from: ask for the error or warning it
    points at, or for what the training step does."""
    from ..reading.understand import points_at_a_message

    if points_at_a_message(kb, understood.text):
        return "ask_paste_the_message"
    return "ask_nothing_understood"


def not_understood_json(kb, lang: str, understood: Understanding) -> dict[str, Any]:
    from ..common.i18n import tr
    from ..output.render import SCHEMA_VERSION

    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "not_understood",
        "status": "not_understood",
        "lang": lang,
        "hint": tr(kb, nothing_understood_key(kb, understood), lang),
        "understood": understood_json(understood),
    }


def answer_markdown(kb, answer: Answer, lang: str) -> str:
    from ..common.i18n import tr

    out = [f"# {tr(kb, 'answer_heading', lang)}", ""]
    for part in answer.parts:
        out += [f"## {part.heading}", ""]
        if part.text:
            out += [part.text, ""]
        if part.code:
            out += [f"```{part.language or ''}", part.code, "```", ""]
        out += [f"*{_source_line(kb, part, lang)}*", ""]
    if answer.causes:
        out += [f"## {tr(kb, 'answer_still_fails', lang)}", ""]
        for number, ranked in enumerate(answer.causes, 1):
            reason = ranked.reasons[0].get(lang) if ranked.reasons else ""
            share = (
                f"（{ranked.probability:.0%}）" if lang == "zh" else f" ({ranked.probability:.0%}) "
            )
            out.append(f"{number}. **{ranked.cause.title.get(lang)}**{share}{reason}")
        out += ["", f"*{tr(kb, 'answer_source_causes', lang)}*", ""]
    return "\n".join(out)


def _source_line(kb, part: Part, lang: str) -> str:
    """Where a part comes from, in the reader's words: the fix's stable id (README), not the
    rules file's internal path, which stays in --json for scripts."""
    from ..common.i18n import tr

    key = "answer_source_measured" if part.measured else "answer_source_fix"
    return tr(kb, key, lang, fix=part.fix_id)
