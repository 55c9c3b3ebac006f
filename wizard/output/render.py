"""Diagnosis -> what the user reads: a rich terminal report, markdown, or JSON.

All three are built from the same `Report` view so they never disagree. rich is imported
only for the terminal report; JSON and markdown (the default when stdout is not a
terminal) need nothing but the standard library, which keeps `triage --json` fast.
"""

from __future__ import annotations

import re

from ..common.foreign import code_span, dumps, shorten, shown
from ..common.i18n import tr
from ..common.record import record
from ..common.version import __version__
from ..knowledge.kb import NAMED_MODULES, KnowledgeBase, Text
from ..reasoning.engine import (
    UNSURE,
    AskedQuestion,
    ConditionalFix,
    Diagnosis,
    RankedFix,
    condition_holds,
    settings,
)

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

SCHEMA_VERSION = 2  # 2: conditional_fixes, splitting_question, plausible_causes
# when the paste names no module, the snippet marks where the user's own name goes (the
# same identifier in both languages: the code is the same, only comments are translated;
# the parameter-names comment says how to learn the names) instead of inventing one
UNNAMED_MODULE = "model.YOUR_MODULE"


# ---------------------------------------------------------------------------- view model


@record
class FixView:
    id: str
    kind: str
    title: str
    why: str
    cost: str | None
    warning: str | None
    framework: str  # the framework whose snippet is shown
    framework_fallback: bool  # the user's framework has no own spelling: plain PyTorch shown
    language: str
    code: str
    score: float


@record
class ConditionalView:
    """A row of the decision table: "if <answers>, then <fix>"."""

    fix: FixView
    condition: str  # the answers, as the user reads them
    sentence: str  # "If <condition>, then: <fix title>"
    question: str | None  # the id of the question to ask now (`id` or `id:module`)
    answers: tuple[tuple[str, str], ...]  # (question id, answer value), in order
    facts: dict[str, Any]
    cause: str | None = None  # a row for one cause: its id (no question, no answers)
    score: float = 0.0  # how likely its fix is the one (the engine's fix score)
    first: str = ""  # the first answer alone, as the user reads it (the compact table)
    then: str = ""  # the question that comes after the first answer, by its short label


@record
class CauseView:
    id: str
    title: str
    probability: float
    log_odds: float
    reason: str
    explanation: str


@record
class Report:
    lang: str
    diagnosis: Diagnosis
    family_title: str | None
    family_summary: str | None
    causes: tuple[CauseView, ...]
    fixes: tuple[FixView, ...]
    diagnostics: tuple[FixView, ...]
    warnings: tuple[FixView, ...]
    notes: tuple[str, ...]
    conditional: tuple[ConditionalView, ...] = ()
    splitting_question: str | None = None  # its text
    splitting_help: str | None = None  # how to find out, when the user answered "I don't know"


def module_expression(module: str) -> str:
    """`layers.3.attn` -> `model.layers[3].attn`: how the user's code refers to it."""
    parts = [f"[{p}]" if p.isdigit() else f".{p}" for p in module.split(".") if p]
    return "model" + "".join(parts)


def snippet_fields(
    diagnosis: Diagnosis, kb: KnowledgeBase | None = None, lang: str = "en"
) -> dict[str, str]:
    """Values of the {placeholders} in rule texts and snippet code, for this diagnosis."""
    if kb is None:
        from ..knowledge.kb import load

        kb = load()
    names = [n for f in diagnosis.findings for n in f.unused_parameter_names]
    return fields_for(kb, lang, diagnosis.facts, diagnosis.unused_modules, names)


def fields_for(
    kb: KnowledgeBase,
    lang: str,
    facts: Mapping[str, Any],
    modules: Sequence[str] = (),
    names: Sequence[str] = (),
) -> dict[str, str]:
    """The {placeholders} filled from what is known: facts, module and parameter names (the
    modules the error names, else those the user's own words named: `named_modules`)."""
    unnamed = UNNAMED_MODULE
    modules = tuple(modules) or tuple(facts.get(NAMED_MODULES) or ())
    fields = {
        "module": module_expression(modules[0]) if modules else unnamed,
        "modules": ", ".join(module_expression(m) for m in modules) or unnamed,
        "param_names": _names_comment(names) or tr(kb, "snippet_unnamed_params", lang),
    }
    # rules placeholders (fixes.yaml): the first value whose `when` holds; a value may use
    # another placeholder ({wrap} uses {device_ids}), so fill until nothing changes
    for name, entries in kb.placeholders.items():
        value = next((v for when, v in entries if condition_holds(when, facts)), "")
        fields[name] = value.get(lang) if isinstance(value, Text) else value
    for _ in range(3):
        fields = {k: fill_quietly(v, fields) for k, v in fields.items()}
    return fields


def _names_comment(names: Sequence[str], limit: int = 12) -> str:
    """The parameter names for a comment in code: the first `limit`, each cut in the middle
    when very long, and how many more (100,000 names make no comment anyone reads)."""
    unique = list(dict.fromkeys(names))
    shown = ", ".join(shorten(n, SHOWN_NAME_CHARS) for n in unique[:limit])
    more = len(unique) - limit
    return shown + (f", … (+{more})" if more > 0 else "")


def prose_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The fields for sentences (titles, reasons, questions): a name from the log cut in the
    middle when very long. Code keeps the whole name: it must run."""
    return {k: shorten(v, SHOWN_PATH_CHARS) if isinstance(v, str) else v for k, v in fields.items()}


def fill_quietly(template: str, fields: Mapping[str, str]) -> str:
    """`template` with its {placeholders} filled; as it is when they do not fit."""
    try:
        return template.format(**fields) if "{" in template else template
    except (KeyError, IndexError, ValueError):
        return template


def _fill(text: Text | None, lang: str, fields: dict[str, Any]) -> str | None:
    if text is None:
        return None
    template = text.get(lang)
    try:
        return template.format(**fields)
    except (KeyError, IndexError, ValueError):  # rules tests keep placeholders valid
        return template


def fix_view(
    entry: RankedFix,
    diagnosis: Diagnosis,
    lang: str,
    said: str = "",
    kb: KnowledgeBase | None = None,
) -> FixView:
    fix = entry.fix
    code_fields = {**snippet_fields(diagnosis, kb, lang), "said": said}
    fields = prose_fields(code_fields)
    framework = diagnosis.framework
    snippet = fix.snippets.get(framework)
    if snippet is None and fix.snippets["pytorch"].any_framework:
        snippet = fix.snippets["pytorch"]  # its placeholders spell it for every framework
        framework = diagnosis.framework
    fallback = snippet is None
    if snippet is None:
        snippet = fix.snippets["pytorch"]
    return FixView(
        id=fix.id,
        kind=fix.kind,
        title=_fill(fix.title, lang, fields) or fix.id,
        why=_fill(fix.why, lang, fields) or "",
        cost=_fill(fix.cost, lang, fields),
        warning=_warning_text(kb, entry, diagnosis, lang, fields),
        framework="pytorch" if fallback else framework,  # the snippet's own spelling
        framework_fallback=fallback and framework != "pytorch",
        language=snippet.language,
        code=(_fill(snippet.code, lang, code_fields) or "").rstrip(),
        score=round(entry.score, 3),
    )


def _warning_text(
    kb: KnowledgeBase | None, entry: RankedFix, diagnosis: Diagnosis, lang: str, fields: dict
) -> str | None:
    """A measured failure names the cause it fails for; `avoid_when` keeps the fix's warning."""
    reason = _fill(entry.reason or entry.fix.warning, lang, fields)
    cause = next((c.cause for c in diagnosis.causes if c.id == entry.failing_cause), None)
    if kb is None or cause is None or reason is None:
        return reason
    return tr(kb, "warning_for_cause", lang, cause=cause.title.get(lang), reason=reason)


def question_text(asked: AskedQuestion, lang: str) -> str:
    template = asked.question.text.get(lang)
    try:
        return template.format(**prose_fields(asked.fields))
    except (KeyError, IndexError, ValueError):
        return template


def _answer_clause(kb: KnowledgeBase, answered, lang: str) -> str:
    """ "“Lightning” for the framework": the question's short label where it has one (the
    whole question inside a sentence reads as a translation), else the question itself."""
    short = answered.asked.question.short
    answer = answered.option.label.get(lang)
    if short is None:
        question = question_text(answered.asked, lang)
        return tr(kb, "conditional_answer", lang, question=question, answer=answer)
    label = fill_quietly(short.get(lang), prose_fields(answered.asked.fields))
    return tr(kb, "conditional_answer_short", lang, short=label, answer=answer)


def conditional_view(
    kb: KnowledgeBase, row: ConditionalFix, diagnosis: Diagnosis, lang: str
) -> ConditionalView:
    view = fix_view(row.fix, diagnosis, lang, kb=kb)
    if not row.answers:  # a row for one cause the question does not settle
        cause = kb.cause(row.cause)
        condition = tr(kb, "conditional_cause", lang, cause=cause.title.get(lang))
        return ConditionalView(
            fix=view,
            condition=condition,
            sentence=tr(kb, "conditional_row", lang, condition=condition, fix=view.title),
            question=None,
            answers=(),
            facts=row.facts,
            cause=row.cause,
            score=row.fix.score,
        )
    # the first question is shown above the table: its answer alone is enough there
    first = row.answers[0]
    parts = [tr(kb, "conditional_first_answer", lang, answer=first.option.label.get(lang))]
    parts += [_answer_clause(kb, a, lang) for a in row.answers[1:]]
    condition = tr(kb, "conditional_and", lang).join(parts)
    then = ""
    if len(row.answers) > 1:
        second = row.answers[1].asked
        short = second.question.short or second.question.text
        then = fill_quietly(short.get(lang), prose_fields(second.fields))
    return ConditionalView(
        fix=view,
        condition=condition,
        sentence=tr(kb, "conditional_row", lang, condition=condition, fix=view.title),
        question=row.answers[0].asked.key,
        answers=tuple((a.asked.key, a.option.value) for a in row.answers),
        facts=row.facts,
        score=row.fix.score,
        first=parts[0],
        then=then,
    )


def build_report(kb: KnowledgeBase, diagnosis: Diagnosis, lang: str) -> Report:
    fields = prose_fields(snippet_fields(diagnosis, kb, lang))
    family = kb.family(diagnosis.family) if diagnosis.family else None
    conf = settings(kb)
    shown = conf["shown_causes"]
    causes = tuple(
        CauseView(
            id=rc.id,
            title=rc.cause.title.get(lang),
            probability=round(rc.probability, 3),
            log_odds=round(rc.score, 3),
            reason=_fill(rc.reasons[0], lang, {**fields, "said": _said(kb, rc, diagnosis, lang)})
            if rc.reasons
            else _first_sentence(rc.cause.explanation.get(lang)),
            explanation=rc.cause.explanation.get(lang),
        )
        for number, rc in enumerate(diagnosis.causes[:shown])
        # after the first, only causes something in this error or these answers points at: a
        # crash with no unused-parameter story gets no "module never used (6%)" filler
        if number == 0 or rc.reasons
    )
    shown_fixes = conf["shown_fixes"]
    shown_diagnostics = conf["shown_diagnostics"]
    return Report(
        lang=lang,
        diagnosis=diagnosis,
        family_title=family.title.get(lang) if family else None,
        family_summary=family.summary.get(lang) if family else None,
        causes=causes,
        fixes=tuple(fix_view(f, diagnosis, lang, kb=kb) for f in diagnosis.fixes[:shown_fixes]),
        diagnostics=tuple(
            fix_view(f, diagnosis, lang, kb=kb) for f in diagnosis.diagnostics[:shown_diagnostics]
        ),
        warnings=tuple(
            fix_view(f, diagnosis, lang, said_for(kb, f.fix.avoid_when, diagnosis, lang), kb)
            for f in diagnosis.avoided
        ),
        notes=tuple(_notes(kb, diagnosis, lang)),
        conditional=tuple(conditional_view(kb, r, diagnosis, lang) for r in diagnosis.conditional),
        splitting_question=question_text(diagnosis.splitting_question, lang)
        if diagnosis.splitting_question and diagnosis.conditional
        else None,
        splitting_help=_help_if_unsure(diagnosis, lang),
    )


def _help_if_unsure(diagnosis: Diagnosis, lang: str) -> str | None:
    """The deciding question's hint on where to look, when the user already answered it "I
    don't know": asking it again would lead nowhere, the hint tells what to check."""
    asked = diagnosis.splitting_question
    if asked is None or not diagnosis.conditional or asked.question.help is None:
        return None
    if diagnosis.answers.get(asked.key) != UNSURE:
        return None
    return fill_quietly(asked.question.help.get(lang), prose_fields(asked.fields))


def fact_sources(kb: KnowledgeBase, diagnosis: Diagnosis) -> dict[str, str]:
    """Where each fact came from: `answer` (the user chose it), `paste` (the error text
    shows it) or `description` (read from the user's sentence)."""
    from ..reading.triage import facts_from_findings

    sources = {key: "paste" for key in facts_from_findings(list(diagnosis.findings))}
    for key, value in diagnosis.answers.items():
        question = kb.question(key.split(":", 1)[0])
        if question is None:
            continue
        for option in question.options:
            if option.value == str(value):
                sources.update({fact: "answer" for fact in option.sets})
        if question.fact:
            sources[question.fact] = "answer"
    for key in diagnosis.facts:
        sources.setdefault(key, "description")
    return sources


def _said(kb: KnowledgeBase, ranked, diagnosis: Diagnosis, lang: str) -> str:
    reason = ranked.reasons[0]
    evidence = next((e for e in ranked.cause.evidence if e.reason is reason), None)
    return said_for(kb, evidence.when if evidence else None, diagnosis, lang)


def said_for(kb: KnowledgeBase, condition, diagnosis: Diagnosis, lang: str) -> str:
    """`{said}` in a text about `condition`: "You said" only for what the user answered,
    "The error shows" for what the paste revealed, "Your description says" for what a
    sentence implied."""
    keys = [k for k in (condition or {}) if k not in ("family", "any")]
    sources = fact_sources(kb, diagnosis)
    found = {sources.get(k, "description") for k in keys}
    kind = "answer" if "answer" in found else "paste" if found == {"paste"} else "description"
    return tr(kb, f"said_{kind}", lang)


# ASCII punctuation ends a sentence only before a space: "../gloo/x.cc" and
# "torch.multiprocessing.spawn" are not sentence ends; CJK punctuation needs no space.
# (The regex a test holds `_first_sentence` to; the function finds the end without it,
# whose lookbehinds cost ~0.3 ms to compile on every report.)
SENTENCE_END = r"(?<=[.!?])\s+|(?<=[。！？])\s*"


def _first_sentence(text: str) -> str:
    """`re.split(SENTENCE_END, text.strip(), maxsplit=1)[0]`: the text up to the first mark
    that ends a sentence (an ASCII one only before a space, `isspace` being `\\s`)."""
    text = text.strip()
    cut = len(text)
    for mark in "。！？":
        i = text.find(mark, 0, cut)
        if i != -1:
            cut = i + 1
    for mark in ".!?":
        i = text.find(mark, 0, cut)
        while i != -1 and i + 1 < cut:
            if text[i + 1].isspace():
                cut = i + 1
                break
            i = text.find(mark, i + 1, cut)
    return text[:cut]


def _notes(kb: KnowledgeBase, diagnosis: Diagnosis, lang: str) -> list[str]:
    """Observations about the text itself (rules: `notes` in signatures.yaml), and that the
    answers fit no known cause when none is plausible any more."""
    notes = []
    if diagnosis.answers and not diagnosis.plausible and diagnosis.diagnostics:
        notes.append(tr(kb, "note_no_cause_fits", lang))
    if diagnosis.findings:
        notes += [n.text.get(lang) for n in kb.notes if condition_holds(n.when, diagnosis.facts)]
    return notes


# ---------------------------------------------------------------------------- JSON


def to_json_data(report: Report) -> dict[str, Any]:
    d = report.diagnosis
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "ddp-doctor", "version": __version__},
        "lang": report.lang,
        "status": "diagnosed" if d.findings or d.answers else "no_known_error",
        "family": d.family,
        "family_title": report.family_title,
        "findings": [_finding_json(f) for f in d.findings],
        "facts": dict(d.facts),
        "answers": dict(d.answers),
        "confident": d.confident,
        "framework": d.framework,
        "causes": [
            {
                "id": c.id,
                "score": c.probability,
                "log_odds": c.log_odds,
                "title": c.title,
                "reason": c.reason,
            }
            for c in report.causes
        ],
        "plausible_causes": list(d.plausible),
        "fixes": [_fix_json(f) for f in report.fixes],
        "conditional_fixes": [
            {
                **_fix_json(row.fix),
                "when": {
                    "facts": dict(row.facts),
                    "cause": row.cause,
                    "question": row.question,
                    "answers": [{"question": q, "answer": a} for q, a in row.answers],
                    "text": row.condition,
                },
            }
            for row in report.conditional
        ],
        "splitting_question": _question_json(d.splitting_question, report)
        if report.conditional
        else None,
        "diagnostics": [_fix_json(f) for f in report.diagnostics],
        "warnings": [_warning_json(f, entry) for f, entry in zip(report.warnings, d.avoided)],
        "notes": list(report.notes),
    }


def _finding_json(f) -> dict[str, Any]:
    return {
        "family": f.family,
        "source": f.source,
        "line": f.line,
        "ranks": list(f.ranks),
        "unused_parameter_indices": list(f.unused_parameter_indices),
        "unused_parameter_names": list(f.unused_parameter_names),
        "unused_parameter_names_cut": f.names_cut,
        "unused_modules": list(f.unused_modules),
        "torch_version": f.torch_version,
        "find_unused_parameters_enabled": f.find_unused_parameters_enabled,
        "user_frames": [
            {"file": u.file, "line": u.line, "function": u.function, "code": u.code}
            for u in f.user_frames
        ],
        "quote": f.quote,
        "occurrences": f.occurrences,
        "other_rank_error": (
            {
                "rank": f.other_rank_error.rank,
                "line": f.other_rank_error.line,
                "text": f.other_rank_error.text,
            }
            if f.other_rank_error
            else None
        ),
    }


def _question_json(asked: AskedQuestion | None, report: Report) -> dict[str, Any] | None:
    if asked is None:
        return None
    return {
        "id": asked.key,
        "text": question_text(asked, report.lang),
        "options": [{"value": o.value, "label": o.label.get(report.lang)} for o in asked.options],
    }


def _warning_json(view: FixView, entry: RankedFix) -> dict[str, Any]:
    outcome = entry.failing_outcome
    return {
        "id": view.id,
        "title": view.title,
        "warning": view.warning,
        "cause": entry.failing_cause,  # null: the fix's own `avoid_when` matched
        "result": outcome.result if outcome else None,
        "scenario": outcome.scenario if outcome else None,
    }


def _fix_json(view: FixView) -> dict[str, Any]:
    return {
        "id": view.id,
        "kind": view.kind,
        "title": view.title,
        "why": view.why,
        "cost": view.cost,
        "score": view.score,
        "framework": view.framework,
        "language": view.language,
        "snippet": view.code,
    }


def to_json(report: Report) -> str:
    return dumps(to_json_data(report))


# ---------------------------------------------------------------------------- markdown


def to_markdown(kb: KnowledgeBase, report: Report) -> str:
    lang = report.lang
    out: list[str] = [f"# {tr(kb, 'report_heading', lang)}", ""]
    if report.family_title:
        out += [f"## {report.family_title}", "", report.family_summary or "", ""]
    out += _findings_markdown(kb, report)
    if report.causes:
        out += [f"## {tr(kb, 'causes_heading', lang)}", ""]
        for i, cause in enumerate(report.causes, 1):
            percent = tr(kb, "percent", lang, percent=f"{cause.probability * 100:.0f}")
            line = tr(
                kb, "cause_line", lang, title=cause.title, percent=percent, reason=cause.reason
            )
            out.append(f"{i}. {line}")
        out.append("")
    for heading, views in (
        ("fixes_heading", report.fixes),
        ("conditional_heading", ()),
        ("diagnostics_heading", report.diagnostics),
    ):
        if heading == "conditional_heading":
            out += _conditional_markdown(kb, report)  # the decision table, before diagnostics
        if not views:
            continue
        out += [f"## {tr(kb, heading, lang)}", ""]
        for i, view in enumerate(views, 1):
            out += [f"### {i}. {view.title}", "", view.why, ""]
            if view.cost:
                label = tr(kb, "label_value", lang, label=tr(kb, "cost_label", lang), value="")
                out += [f"*{label.strip()}* {view.cost}".replace("：* ", "：*"), ""]
            if view.framework_fallback:
                out += [framework_fallback(kb, report, lang), ""]
            out += [f"```{view.language}", view.code, "```", ""]
    if report.warnings:
        out += [f"## {tr(kb, 'warnings_heading', lang)}", ""]
        for view in report.warnings:
            line = tr(kb, "label_value", lang, label=f"**{view.title}**", value=view.warning)
            out += [f"- {line}", ""]
    if report.notes:
        out += [f"## {tr(kb, 'notes_heading', lang)}", ""]
        out += [f"- {note}" for note in report.notes] + [""]
    return "\n".join(out).rstrip() + "\n"


def _conditional_markdown(kb: KnowledgeBase, report: Report) -> list[str]:
    if not report.conditional:
        return []
    lang = report.lang
    heading, intro = _conditional_texts(report)
    out = [f"## {tr(kb, heading, lang)}", ""]
    if intro:
        question = f"**{report.splitting_question}**"
        out += [tr(kb, intro, lang, question=question, help=report.splitting_help), ""]
    out += [f"- {sentence}" for sentence in conditional_sentences(kb, report)]
    out.append("")
    shown, others = conditional_code(report)
    for view in shown:  # the code of the likeliest, for when you know
        out += [f"**{view.title}**", "", f"```{view.language}", view.code, "```", ""]
    if others:  # markdown holds everything: the rest further down, under their own heading
        out += [f"### {tr(kb, 'conditional_other_code', lang)}", ""]
        for row in others:
            view = row.fix
            out += [f"**{view.title}**", "", f"```{view.language}", view.code, "```", ""]
    return out


def _conditional_texts(report: Report) -> tuple[str, str | None]:
    """The table's heading and the line naming its question (message keys). Below an advised
    fix the table is about other fixes, and its question is one the user was not asked: the
    rows name only its answers, so the line names it."""
    after_fix = bool(report.fixes)
    heading = "conditional_heading_after_fix" if after_fix else "conditional_heading"
    if not report.splitting_question:
        return heading, None
    if report.splitting_help:
        return heading, "conditional_intro_unsure"
    return heading, "conditional_intro_after_fix" if after_fix else "conditional_intro"


SHOWN_CONDITIONAL_CODE = 2  # the decision table prints the code of this many fixes


def conditional_code(report: Report) -> tuple[list[FixView], list[ConditionalView]]:
    """The code to print under the decision table: each fix once, the likeliest first, at
    most SHOWN_CONDITIONAL_CODE of them; and the rows of the others (the terminal's short
    report names the one command that asks the deciding question: `_interview_command`)."""
    rows = [view for _, view in sorted(enumerate(report.conditional), key=_likeliest(report))]
    shown: dict[str, FixView] = {}
    others: dict[str, ConditionalView] = {}
    for row in rows:
        if row.fix.id in shown or row.fix.id in others:
            continue
        if len(shown) < SHOWN_CONDITIONAL_CODE:
            shown[row.fix.id] = row.fix
        else:
            others[row.fix.id] = row
    return list(shown.values()), list(others.values())


def _likeliest(report: Report):
    """Sort key for the table's rows: how likely the causes its fix is for are now (a row
    for a cause nobody has pointed at yet comes last, however sure its fix is once its
    condition holds), then the fix's own score."""
    probability = {c.id: c.probability for c in report.diagnosis.causes}
    engine_rows = report.diagnosis.conditional

    def key(item: tuple[int, ConditionalView]) -> tuple[float, float]:
        index, view = item
        causes = engine_rows[index].fix.for_causes if index < len(engine_rows) else ()
        return (-sum(probability.get(c, 0.0) for c in causes), -view.score)

    return key


def conditional_sentences(kb: KnowledgeBase, report: Report) -> list[str]:
    """One "If ..., then: A; or: B" line per condition (rows arrive grouped by condition)."""
    grouped: dict[str, list[str]] = {}
    for row in report.conditional:
        grouped.setdefault(row.condition, []).append(row.fix.title)
    joiner = tr(kb, "conditional_or", report.lang)
    return [
        tr(kb, "conditional_row", report.lang, condition=condition, fix=joiner.join(titles))
        for condition, titles in grouped.items()
    ]


def grouped_findings(findings) -> list:
    """Findings that differ only by rank shown once with all their ranks (humans read
    "ranks 0, 1", scripts get one JSON entry per rank)."""
    from ..common.record import replace

    groups: dict[tuple, Any] = {}
    for f in findings:
        key = (
            f.family,
            f.source,
            f.unused_parameter_names,
            f.unused_parameter_indices,
            f.find_unused_parameters_enabled,
            f.user_frames,
        )
        if key in groups:
            old = groups[key]
            ranks = tuple(sorted(set(old.ranks) | set(f.ranks)))
            count = max(old.occurrences, f.occurrences)
            groups[key] = replace(old, ranks=ranks, occurrences=count)
        else:
            groups[key] = f
    return list(groups.values())


def short_quote(quote: str, limit: int = 140) -> str:
    """The first sentence of the error line: enough to recognise it."""
    first = _first_sentence(quote)
    return first if len(first) <= limit else first[: limit - 1] + "…"


def _findings_markdown(kb: KnowledgeBase, report: Report) -> list[str]:
    lang = report.lang
    out: list[str] = []
    for f in grouped_findings(report.diagnosis.findings):
        family = kb.family(f.family)
        title = family.title.get(lang) if family else f.family
        out.append(f"- **{title}** — {code_span(_place(f.source, f.line))}")
        out.append(f"  > {code_span(short_quote(f.quote))}")
        for label, value in _finding_facts(kb, f, lang):
            out.append("  - " + tr(kb, "label_value", lang, label=label, value=value))
    return out + [""] if out else out


def other_rank_error_row(kb: KnowledgeBase, f, lang: str) -> tuple[str, str]:
    """(label, value) of the error another rank printed first (the finding has one)."""
    first = f.other_rank_error
    text = code_span(shorten(first.text, SHOWN_PATH_CHARS))
    value = tr(kb, "value_rank_error", lang, rank=first.rank, line=first.line, text=text)
    return tr(kb, "label_other_rank_error", lang), value


def _finding_facts(kb: KnowledgeBase, f, lang: str, full: bool = True) -> list[tuple[str, str]]:
    """Label/value rows of one finding; the short report keeps what locates the problem."""
    rows = []
    if f.ranks:
        rows.append((tr(kb, "label_ranks", lang), ", ".join(map(str, f.ranks))))
    if f.other_rank_error:
        rows.append(other_rank_error_row(kb, f, lang))
    limit = 12 if full else 6
    if f.unused_modules:
        rows.append((tr(kb, "label_modules", lang), _name_row(f.unused_modules, limit)))
    if f.unused_parameter_names:
        row = _name_row(f.unused_parameter_names, limit)
        if f.names_cut:  # where the list was cut, so no one takes it for the whole list
            row += tr(kb, "names_cut", lang, count=len(f.unused_parameter_names))
        rows.append((tr(kb, "label_names", lang), row))
    if f.unused_parameter_indices and (full or not f.unused_parameter_names):
        indices = " ".join(map(str, f.unused_parameter_indices[:30]))
        rows.append((tr(kb, "label_indices", lang), indices))
    if not full:
        return rows
    if f.find_unused_parameters_enabled is not None:
        key = "value_yes" if f.find_unused_parameters_enabled else "value_no"
        rows.append((tr(kb, "label_flag", lang), tr(kb, key, lang)))
    if f.torch_version:
        rows.append((tr(kb, "label_torch", lang), shown(f.torch_version)))
    for frame in f.user_frames[-2:]:
        code = f" — {code_span(shorten(frame.code, SHOWN_PATH_CHARS))}" if frame.code else ""
        rows.append(
            (tr(kb, "label_user_code", lang), code_span(_place(frame.file, frame.line)) + code)
        )
    if f.occurrences > 1:
        rows.append((tr(kb, "label_occurrences", lang), str(f.occurrences)))
    return rows


# what a finding's row shows of names from the log: enough to recognise each, never all of
# a 256 KiB name or of 100,000 names (the terminal's wrapping is quadratic in a line's length)
SHOWN_NAME_CHARS = 120
SHOWN_PATH_CHARS = 240
SHOWN_RAISED_CHARS = 160  # the exception line of a paste no family knows


def shown_raised(line: str) -> str:
    """The exception line of a text no family knows, as `ask` and the session show it."""
    return shorten(line, SHOWN_RAISED_CHARS)


def known_families(kb: KnowledgeBase, lang: str) -> str:
    """The titles of the errors ddp-doctor knows, as one list within a sentence."""
    return tr(kb, "list_separator", lang).join(f.title.get(lang) for f in kb.families)


def _place(source: str, line: int) -> str:
    """`file:line` of a log or a frame, its path cut in the middle when very long."""
    return f"{shorten(source, SHOWN_PATH_CHARS)}:{line}"


def _name_row(names: Sequence[str], limit: int) -> str:
    """The first `limit` names as code, each cut in the middle if long, and how many more."""
    row = ", ".join(code_span(shorten(n, SHOWN_NAME_CHARS)) for n in names[:limit])
    more = len(names) - limit
    return row + (f" (+{more})" if more > 0 else "")


# ---------------------------------------------------------------------------- terminal


@record
class _Out:
    """Print helpers bound to one console: paragraphs wrapped by `wrap.line_spans` (so
    Chinese breaks between characters, not only at spaces) and code never wrapped."""

    kb: KnowledgeBase
    lang: str
    console: Any

    def t(self, key: str, **fields: Any) -> str:
        return tr(self.kb, key, self.lang, **fields)

    def inline(self, text: str, base: str = ""):
        """`code` spans become cyan (closed by a backtick run as long as the one that opened
        them, as in markdown: `code_span` quotes log text that holds backticks); everything
        else stays literal."""
        from rich.text import Text as RichText

        rich_text = RichText()
        done = 0
        for span in re.finditer(_CODE_SPAN, text, re.S):
            rich_text.append(text[done : span.start()], style=base)
            body = span.group("body")
            if body[:1] == body[-1:] == " " and body.strip(" "):
                body = body[1:-1]
            rich_text.append(body, style=f"{base} cyan".strip())
            done = span.end()
        rich_text.append(text[done:], style=base)
        return rich_text

    def para(self, text, indent: int = 0, style: str = "") -> None:
        """One paragraph (a str with `code` spans, or a rich Text), wrapped at our breaks."""
        from rich.text import Text as RichText

        from ..common.wrap import line_spans

        rich_text = self.inline(text, style) if isinstance(text, str) else text
        width = max(self.console.width - indent, 10)
        # the lines joined and printed at once: rich renders each `print` apart (~0.1 ms
        # each), and it breaks a joined text at its newlines as it would the lines one by one
        lines = RichText("\n").join(
            RichText(" " * indent) + rich_text[start:end]
            for start, end in line_spans(rich_text.plain, width) or [(0, 0)]
        )
        self.console.print(lines, overflow="fold", highlight=False)

    def heading(self, text: str, style: str) -> None:
        self.para(self.inline(text, f"bold {style}"))

    def code(self, code: str, language: str) -> None:
        """Code flush left, outside any box and never broken by us: what is copied from the
        screen runs as it is. A line wider than the terminal continues on the next screen
        line (the terminal's own soft wrap, which copies as one line)."""
        from rich.text import Text as RichText

        from ..common.wrap import text_width
        from .highlight import highlight

        highlighted = RichText()
        for text, style in highlight(code, language):
            highlighted.append(text, style=style or None)
        highlighted.rstrip()
        self.console.print(highlighted, soft_wrap=True, highlight=False)
        if max((text_width(line) for line in code.splitlines()), default=0) > self.console.width:
            self.para(self.t("code_too_wide"), style="dim")

    def blank(self) -> None:
        self.console.print()


# a markdown code span: a backtick run, then the shortest text up to a run of the same length
# only the terminal report reads it: a pattern string, compiled by `re` on first use
_CODE_SPAN = r"(?<!`)(?P<fence>`+)(?!`)(?P<body>.+?)(?<!`)(?P=fence)(?!`)"

# the inline marks of the markdown ddp-doctor writes: `code`, **bold**, *italic*; compiled
# by `re`'s own cache when `ask` first prints in a terminal, not when a report is imported
_MARKS = r"`[^`]+`|\*\*[^*]+\*\*|\*[^*\s][^*]*\*"
_LIST_ITEM = r"^(?:[-*]|\d{1,3}\.)\s+"


def print_markdown(kb: KnowledgeBase, text: str, lang: str, console) -> None:
    """ddp-doctor's own markdown (answers, what `ask` read) in a terminal, without a markdown
    parser: rich's (markdown-it, and Pygments for code) costs ~70 ms of start-up, and this
    text only holds headings, paragraphs, list items and fenced code. Marks are dropped,
    never the text they mark."""
    out = _Out(kb, lang, console)
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line.startswith("```"):
            code = []
            while i < len(lines) and not lines[i].startswith("```"):
                code.append(lines[i])
                i += 1
            i += 1  # the closing fence
            out.code("\n".join(code) + "\n", line[3:].strip() or "text")
        elif line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.heading(line[level:].strip(), "red" if level == 1 else "cyan")
        elif item := re.match(_LIST_ITEM, line):
            out.para(out.inline(item.group().strip() + " ") + _marked(out, line[item.end() :]), 2)
        elif line.strip():
            out.para(_marked(out, line))
        else:
            out.blank()


def _marked(out: _Out, text: str, base: str = ""):
    """A line of markdown as styled text, its `code`, **bold** and *italic* marks applied."""
    from rich.text import Text as RichText

    styled = RichText()
    done = 0
    for mark in re.finditer(_MARKS, text):
        styled.append(text[done : mark.start()], style=base)
        body = mark.group()
        if body.startswith("`"):
            styled.append(body[1:-1], style=f"{base} cyan".strip())
        elif body.startswith("**"):
            styled.append_text(_marked(out, body[2:-2], f"{base} bold".strip()))
        else:
            styled.append_text(_marked(out, body[1:-1], f"{base} italic".strip()))
        done = mark.end()
    styled.append(text[done:], style=base)
    return styled


def print_rich(
    kb: KnowledgeBase, report: Report, console, *, full: bool = False, more: str | None = None
) -> bool:
    """The terminal report. Short by default: the diagnosis, the leading cause and the first
    fix on the first screen, warnings, then one line naming what is left out (`more` says
    how to get it). `full` prints everything markdown holds. Returns whether anything was
    left out."""
    out = _Out(kb, report.lang, console)
    _rich_diagnosis(out, report, full)
    _rich_causes(out, report, full)
    fixes = report.fixes if full else report.fixes[:1]
    for i, view in enumerate(fixes, 1):
        _rich_fix(out, view, report, "fixes_heading", i, "green", full)
    _rich_conditional(out, report, full)
    diagnostics = _shown_diagnostics(report, full)
    for i, view in enumerate(diagnostics, 1):
        _rich_fix(out, view, report, "diagnostics_heading", i, "blue", full)
    for view in report.warnings:
        out.para(out.inline(f"⚠ {view.title}", "bold magenta"))
        out.para(view.warning or "", indent=2)
        out.blank()
    if full:
        for note in report.notes:
            out.para(out.inline("• ") + out.inline(note))
        return False
    hidden = _hidden_items(out, report, len(diagnostics))
    if hidden:
        line = out.t("more_hidden", items=out.t("list_separator").join(hidden))
        out.para(line + (" " + more if more else ""), style="dim")
    return bool(hidden)


def _rich_conditional(out: _Out, report: Report, full: bool) -> None:
    """The decision table: the question that splits it and "If ..., then ..." per answer;
    the code of each fix with `--all` (markdown always has it)."""
    if not report.conditional:
        return
    heading, intro = _conditional_texts(report)
    out.heading(out.t(heading), "cyan")
    if intro:
        out.para(out.t(intro, question=report.splitting_question, help=report.splitting_help))
    sentences = conditional_sentences(out.kb, report) if full else compact_sentences(out.kb, report)
    for sentence in sentences:
        out.para(out.inline("• ") + out.inline(sentence), indent=2)
    shown, others = conditional_code(report)
    if full:  # everything: the code of every fix
        shown = shown + [row.fix for row in others]
    elif not report.fixes:  # short: the likeliest fix's code; the others one command away
        shown = shown[:1]
        out.para(out.t("conditional_likeliest_code"), style="dim")
    else:
        shown = []
    for view in shown:
        out.para(out.inline(view.title, "bold"))
        out.code(view.code, view.language)
    if not full and not report.fixes and len(report.conditional) > 1:
        out.para(out.inline(out.t("conditional_others_hint", command=_interview_command(report))))
    out.blank()


NAMED_AFTER_ONE_MORE = 2  # the compact table names this many fixes behind a question, or counts


def compact_sentences(kb: KnowledgeBase, report: Report) -> list[str]:
    """The decision table in a few lines: one per answer of the deciding question (its fixes,
    or the question that follows it), one for the causes that question leaves out."""
    lang = report.lang
    joiner = tr(kb, "conditional_or", lang)
    direct: dict[str, list[str]] = {}
    nested: dict[str, str] = {}
    led_to: dict[str, list[str]] = {}  # the fixes the question after an answer can lead to
    causes: list[str] = []
    for row in report.conditional:
        if row.cause:
            causes.append(kb.cause(row.cause).title.get(lang))
        elif row.then:
            nested.setdefault(row.first, row.then)
            if row.fix.title not in led_to.setdefault(row.first, []):
                led_to[row.first].append(row.fix.title)
        elif row.fix.title not in direct.setdefault(row.first, []):
            direct[row.first].append(row.fix.title)
    lines = []
    for first in dict.fromkeys([*direct, *nested]):
        if first in direct:
            fixes = joiner.join(direct[first])
            lines.append(tr(kb, "conditional_row", lang, condition=first, fix=fixes))
        else:
            fields = {"condition": first, "question": nested[first]}
            fixes = led_to[first]
            if len(fixes) > NAMED_AFTER_ONE_MORE:  # a short table: the count, not the titles
                lines.append(tr(kb, "conditional_then_choose", lang, count=len(fixes), **fields))
            else:
                fix = joiner.join(fixes)
                lines.append(tr(kb, "conditional_then_ask", lang, fix=fix, **fields))
    if causes:
        lines.append(tr(kb, "conditional_other_causes", lang, causes=joiner.join(causes)))
    return lines


def _interview_command(report: Report) -> str:
    """The command that asks the deciding question and prints the fix its answer leads to."""
    findings = report.diagnosis.findings
    source = findings[0].source if findings else None
    if source and not source.startswith("<") and source != "-":
        from shlex import quote  # only this line needs it

        return f"ddp-doctor --lang {report.lang} --paste {quote(source)}"
    return f"ddp-doctor --lang {report.lang}"


def _shown_diagnostics(report: Report, full: bool) -> tuple[FixView, ...]:
    if full:
        return report.diagnostics
    if not report.fixes and not report.splitting_question:
        # nothing proven to try and no question that decides (a crash, a peer that exited
        # first; at most a row per cause): the first way to find the culprit comes first
        return report.diagnostics[:1]
    return ()


def _hidden_items(out: _Out, report: Report, diagnostics_shown: int) -> list[str]:
    counts = (
        ("more_causes", len(report.causes) - 1),
        ("more_fixes", len(report.fixes) - 1),
        ("more_diagnostics", len(report.diagnostics) - diagnostics_shown),
        ("more_notes", len(report.notes)),
    )
    return [out.t(key, count=count) for key, count in counts if count > 0]


def _rich_diagnosis(out: _Out, report: Report, full: bool) -> None:
    if not report.family_title:
        return
    out.heading("✗ " + report.family_title, "red")
    if report.family_summary:
        out.para(report.family_summary, indent=2)
    for f in grouped_findings(report.diagnosis.findings):
        if full:
            out.para(_literal(_place(f.source, f.line), "dim"), indent=2)
            out.para(_literal(short_quote(f.quote), "italic"), indent=2)
        for label, value in _finding_facts(out.kb, f, out.lang, full):
            row = out.inline(out.t("label_value", label=label, value=""), "bold")
            out.para(out.inline("• ") + row + out.inline(value), indent=2)
    out.blank()


def _literal(text: str, style: str):
    """Text from the log for the terminal: escapes shown, no marks read."""
    from rich.text import Text as RichText

    return RichText(shown(text), style=style)


def _rich_causes(out: _Out, report: Report, full: bool) -> None:
    if not report.causes:
        return
    if full:
        out.heading(out.t("causes_heading"), "yellow")
    for i, cause in enumerate(report.causes if full else report.causes[:1], 1):
        title = out.inline(cause.title, "bold yellow" if i == 1 else "bold")
        label = out.t("label_value", label=out.t("likely_cause"), value="")
        prefix = out.inline(f"{i}. " if full else label, "bold")
        out.para(prefix + title + out.inline(_percent(out, cause), "dim"))
        out.para(cause.reason, indent=3 if full else 2)
    if not full and len(report.causes) > 1:
        others = out.t("list_separator").join(c.title + _percent(out, c) for c in report.causes[1:])
        out.para(out.t("also_possible", causes=others), indent=2, style="dim")
    out.blank()


def _percent(out: _Out, cause: CauseView) -> str:
    return out.t("percent", percent=f"{cause.probability * 100:.0f}")


def _rich_fix(
    out: _Out, view: FixView, report: Report, heading: str, number: int, style: str, full: bool
) -> None:
    title = out.t("numbered_heading", heading=out.t(heading), number=number, title=view.title)
    out.heading(title, style)
    if view.framework_fallback:
        out.para(framework_fallback(out.kb, report, out.lang), indent=2, style="dim")
    out.blank()
    out.code(view.code, view.language)
    out.blank()
    out.para(view.why, indent=2)
    if view.cost:
        label = out.inline(out.t("label_value", label=out.t("cost_label"), value=""), "bold")
        out.para(label + out.inline(view.cost), indent=2)
    out.blank()


def framework_fallback(kb: KnowledgeBase, report: Report, lang: str) -> str:
    """ "Lightning has no own way…": the framework by the name the user picked, never its id."""
    return tr(kb, "framework_fallback", lang, framework=framework_name(kb, report.diagnosis, lang))


def framework_name(kb: KnowledgeBase, diagnosis: Diagnosis, lang: str) -> str:
    question = kb.question("framework")
    for option in question.options if question else ():
        if option.value == diagnosis.framework:
            label = option.label.get(lang).replace("`", "")
            return re.split(r" ?[(（]", label, maxsplit=1)[0]
    return diagnosis.framework


# ---------------------------------------------------------------------------- output

MIN_WIDTH = 20  # narrower than this, rich prints nothing at all (COLUMNS=0): 80 is used


def usable_width() -> int | None:
    """The width for a rich Console: None (rich decides: COLUMNS, the terminal) unless
    COLUMNS asks for one too narrow to print on, then the terminal's own or 80."""
    import os

    columns = os.environ.get("COLUMNS", "")
    if not columns.isdigit() or int(columns) >= MIN_WIDTH:
        return None
    try:
        return max(os.get_terminal_size().columns, MIN_WIDTH)
    except OSError:
        return 80


def emit(
    kb: KnowledgeBase,
    diagnosis: Diagnosis,
    lang: str,
    fmt: str,
    stream=None,
    *,
    full: bool = False,
    more: str | None = None,
) -> None:
    """Print the report in the chosen format (json, markdown or rich) on `stream`. Only
    the terminal report is short unless `full`; `more` says how to get the rest."""
    import sys

    stream = stream or sys.stdout
    report = build_report(kb, diagnosis, lang)
    if fmt == "json":
        stream.write(to_json(report) + "\n")
    elif fmt == "markdown":
        stream.write(to_markdown(kb, report))
    else:
        from rich.console import Console

        console = Console(file=stream, highlight=False, width=usable_width())
        # rich asks the terminal (three descriptors) and the environment for its size at
        # every line it prints; a report takes milliseconds, so the size is read once
        console.size = console.size
        with console:  # one write at the end, not one per printed paragraph
            print_rich(kb, report, console, full=full, more=more)
    stream.flush()
