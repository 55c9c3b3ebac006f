"""Diagnosis -> what the user reads: a rich terminal report, markdown, or JSON.

All three are built from the same `Report` view so they never disagree. rich is imported
only for the terminal report; JSON and markdown (the default when stdout is not a
terminal) need nothing but the standard library, which keeps `triage --json` fast.
"""

from __future__ import annotations

import json
import re

from .engine import Diagnosis, RankedFix, condition_holds
from .i18n import tr
from .kb import KnowledgeBase, Text
from .record import record
from .version import __version__

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = 1
DEFAULT_MODULE = "aux_head"  # stands in for the user's module when the paste names none


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


def module_expression(module: str) -> str:
    """`layers.3.attn` -> `model.layers[3].attn`: how the user's code refers to it."""
    parts = [f"[{p}]" if p.isdigit() else f".{p}" for p in module.split(".") if p]
    return "model" + "".join(parts)


def snippet_fields(diagnosis: Diagnosis) -> dict[str, str]:
    modules = diagnosis.unused_modules or (DEFAULT_MODULE,)
    names = [n for f in diagnosis.findings for n in f.unused_parameter_names]
    return {
        "module": module_expression(modules[0]),
        "modules": ", ".join(module_expression(m) for m in modules),
        "param_names": ", ".join(dict.fromkeys(names)) or f"{DEFAULT_MODULE}.weight",
    }


def _fill(text: Text | None, lang: str, fields: dict[str, Any]) -> str | None:
    if text is None:
        return None
    template = text.get(lang)
    try:
        return template.format(**fields)
    except (KeyError, IndexError, ValueError):  # rules tests keep placeholders valid
        return template


def fix_view(entry: RankedFix, diagnosis: Diagnosis, lang: str) -> FixView:
    fix = entry.fix
    fields = snippet_fields(diagnosis)
    framework = diagnosis.framework
    snippet = fix.snippets.get(framework)
    fallback = snippet is None
    if snippet is None:
        snippet = fix.snippets["pytorch"]
    return FixView(
        id=fix.id,
        kind=fix.kind,
        title=_fill(fix.title, lang, fields) or fix.id,
        why=_fill(fix.why, lang, fields) or "",
        cost=_fill(fix.cost, lang, fields),
        warning=_fill(fix.warning, lang, fields),
        framework="pytorch" if fallback else framework,
        framework_fallback=fallback and framework != "pytorch",
        language=snippet.language,
        code=(_fill(snippet.code, lang, fields) or "").rstrip(),
        score=round(entry.score, 3),
    )


def build_report(kb: KnowledgeBase, diagnosis: Diagnosis, lang: str) -> Report:
    fields = snippet_fields(diagnosis)
    family = kb.family(diagnosis.family) if diagnosis.family else None
    shown = kb.engine.get("shown_causes", 3)
    causes = tuple(
        CauseView(
            id=rc.id,
            title=rc.cause.title.get(lang),
            probability=round(rc.probability, 3),
            log_odds=round(rc.score, 3),
            reason=_fill(rc.reasons[0], lang, fields)
            if rc.reasons
            else _first_sentence(rc.cause.explanation.get(lang)),
            explanation=rc.cause.explanation.get(lang),
        )
        for rc in diagnosis.causes[:shown]
    )
    shown_fixes = kb.engine.get("shown_fixes", 4)
    shown_diagnostics = kb.engine["shown_diagnostics"]
    return Report(
        lang=lang,
        diagnosis=diagnosis,
        family_title=family.title.get(lang) if family else None,
        family_summary=family.summary.get(lang) if family else None,
        causes=causes,
        fixes=tuple(fix_view(f, diagnosis, lang) for f in diagnosis.fixes[:shown_fixes]),
        diagnostics=tuple(
            fix_view(f, diagnosis, lang) for f in diagnosis.diagnostics[:shown_diagnostics]
        ),
        warnings=tuple(fix_view(f, diagnosis, lang) for f in diagnosis.avoided),
        notes=tuple(_notes(kb, diagnosis, lang)),
    )


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")


def _first_sentence(text: str) -> str:
    parts = _SENTENCE_END.split(text.strip(), maxsplit=1)
    return parts[0] if parts else text


def _notes(kb: KnowledgeBase, diagnosis: Diagnosis, lang: str) -> list[str]:
    """Observations about the text itself (rules: `notes` in signatures.yaml)."""
    if not diagnosis.findings:
        return []
    return [n.text.get(lang) for n in kb.notes if condition_holds(n.when, diagnosis.facts)]


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
        "findings": [
            {
                "family": f.family,
                "source": f.source,
                "line": f.line,
                "ranks": list(f.ranks),
                "unused_parameter_indices": list(f.unused_parameter_indices),
                "unused_parameter_names": list(f.unused_parameter_names),
                "unused_modules": list(f.unused_modules),
                "torch_version": f.torch_version,
                "find_unused_parameters_enabled": f.find_unused_parameters_enabled,
                "user_frames": [
                    {"file": u.file, "line": u.line, "function": u.function, "code": u.code}
                    for u in f.user_frames
                ],
                "quote": f.quote,
                "occurrences": f.occurrences,
            }
            for f in d.findings
        ],
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
        "fixes": [_fix_json(f) for f in report.fixes],
        "diagnostics": [_fix_json(f) for f in report.diagnostics],
        "warnings": [{"id": f.id, "title": f.title, "warning": f.warning} for f in report.warnings],
        "notes": list(report.notes),
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
    return json.dumps(to_json_data(report), ensure_ascii=False, indent=2)


# ---------------------------------------------------------------------------- markdown


def to_markdown(kb: KnowledgeBase, report: Report) -> str:
    lang = report.lang
    d = report.diagnosis
    out: list[str] = [f"# {tr(kb, 'report_heading', lang)}", ""]
    if report.family_title:
        out += [f"## {report.family_title}", "", report.family_summary or "", ""]
    out += _findings_markdown(kb, report)
    if report.causes:
        out += [f"## {tr(kb, 'causes_heading', lang)}", ""]
        for i, cause in enumerate(report.causes, 1):
            percent = f"{cause.probability * 100:.0f}%"
            out.append(f"{i}. **{cause.title}** ({percent}) — {cause.reason}")
        out.append("")
    for heading, views in (
        ("fixes_heading", report.fixes),
        ("diagnostics_heading", report.diagnostics),
    ):
        if not views:
            continue
        out += [f"## {tr(kb, heading, lang)}", ""]
        for i, view in enumerate(views, 1):
            out += [f"### {i}. {view.title}", "", view.why, ""]
            if view.cost:
                out += [f"*{tr(kb, 'cost_label', lang)}* {view.cost}", ""]
            if view.framework_fallback:
                out += [tr(kb, "framework_fallback", lang, framework=d.framework), ""]
            out += [f"```{view.language}", view.code, "```", ""]
    if report.warnings:
        out += [f"## {tr(kb, 'warnings_heading', lang)}", ""]
        for view in report.warnings:
            out += [f"- **{view.title}**: {view.warning}", ""]
    if report.notes:
        out += [f"## {tr(kb, 'notes_heading', lang)}", ""]
        out += [f"- {note}" for note in report.notes] + [""]
    return "\n".join(out).rstrip() + "\n"


def grouped_findings(findings) -> list:
    """Findings that differ only by rank shown once with all their ranks (humans read
    "ranks 0, 1", scripts get one JSON entry per rank)."""
    from .record import replace

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
        out.append(f"- **{title}** — `{f.source}:{f.line}`")
        out.append(f"  > {short_quote(f.quote)}")
        for label, value in _finding_facts(kb, f, lang):
            out.append("  - " + tr(kb, "label_value", lang, label=label, value=value))
    return out + [""] if out else out


def _finding_facts(kb: KnowledgeBase, f, lang: str) -> list[tuple[str, str]]:
    rows = []
    if f.ranks:
        rows.append((tr(kb, "label_ranks", lang), ", ".join(map(str, f.ranks))))
    if f.unused_modules:
        rows.append((tr(kb, "label_modules", lang), ", ".join(f"`{m}`" for m in f.unused_modules)))
    if f.unused_parameter_names:
        names = ", ".join(f"`{n}`" for n in f.unused_parameter_names[:12])
        more = len(f.unused_parameter_names) - 12
        rows.append((tr(kb, "label_names", lang), names + (f" (+{more})" if more > 0 else "")))
    if f.unused_parameter_indices:
        indices = " ".join(map(str, f.unused_parameter_indices[:30]))
        rows.append((tr(kb, "label_indices", lang), indices))
    if f.find_unused_parameters_enabled is not None:
        key = "value_yes" if f.find_unused_parameters_enabled else "value_no"
        rows.append((tr(kb, "label_flag", lang), tr(kb, key, lang)))
    if f.torch_version:
        rows.append((tr(kb, "label_torch", lang), f.torch_version))
    for frame in f.user_frames[-2:]:
        code = f" — `{frame.code}`" if frame.code else ""
        rows.append((tr(kb, "label_user_code", lang), f"`{frame.file}:{frame.line}`{code}"))
    if f.occurrences > 1:
        rows.append((tr(kb, "label_occurrences", lang), str(f.occurrences)))
    return rows


# ---------------------------------------------------------------------------- terminal


def print_rich(kb: KnowledgeBase, report: Report, console) -> None:
    """The terminal report: panels and highlighted code, readable down to ~40 columns.

    Long because it is one straight top-to-bottom layout of the report's panels, in the
    order the user reads them; split up, that order would be scattered over functions.
    """
    from rich.markup import escape
    from rich.panel import Panel
    from rich.syntax import Syntax
    from rich.text import Text as RichText

    lang = report.lang
    d = report.diagnosis

    def inline(text: str, base: str = "") -> RichText:
        # `code` spans in rules texts become cyan, everything else stays literal
        rich_text = RichText()
        for i, part in enumerate(text.split("`")):
            rich_text.append(part, style=f"{base} cyan".strip() if i % 2 else base)
        return rich_text

    if report.family_title:
        body = RichText()
        body.append_text(inline(report.family_summary or ""))
        for f in grouped_findings(d.findings):
            body.append("\n\n")
            body.append(f"{f.source}:{f.line}\n", style="dim")
            body.append(short_quote(f.quote), style="italic")
            for label, value in _finding_facts(kb, f, lang):
                body.append("\n• ")
                body.append_text(
                    inline(tr(kb, "label_value", lang, label=label, value=""), base="bold")
                )
                body.append_text(inline(value))
        console.print(
            Panel(body, title=escape(report.family_title), title_align="left", border_style="red")
        )
    if report.causes:
        causes = RichText()
        for i, cause in enumerate(report.causes, 1):
            if i > 1:
                causes.append("\n")
            causes.append(f"{i}. ", style="bold")
            causes.append_text(inline(cause.title, base="bold yellow" if i == 1 else "bold"))
            causes.append(f"  {cause.probability * 100:.0f}%\n", style="dim")
            causes.append("   ")
            causes.append_text(inline(cause.reason))
        console.print(
            Panel(
                causes,
                title=tr(kb, "causes_heading", lang),
                title_align="left",
                border_style="yellow",
            )
        )
    for heading, views, style in (
        ("fixes_heading", report.fixes, "green"),
        ("diagnostics_heading", report.diagnostics, "blue"),
    ):
        for i, view in enumerate(views, 1):
            parts: list[Any] = [inline(view.why)]
            if view.cost:
                cost = RichText(tr(kb, "cost_label", lang) + " ", style="bold")
                cost.append_text(inline(view.cost))
                parts.append(cost)
            if view.framework_fallback:
                parts.append(
                    RichText(tr(kb, "framework_fallback", lang, framework=d.framework), style="dim")
                )
            parts.append(
                Syntax(
                    view.code,
                    view.language,
                    theme="ansi_dark",
                    word_wrap=True,
                    background_color="default",
                )
            )
            from rich.console import Group

            title = f"{tr(kb, heading, lang)} {i}: {view.title}"
            console.print(
                Panel(Group(*parts), title=escape(title), title_align="left", border_style=style)
            )
    for view in report.warnings:
        console.print(
            Panel(
                inline(view.warning or ""),
                title=escape(f"⚠ {view.title}"),
                title_align="left",
                border_style="magenta",
            )
        )
    for note in report.notes:
        console.print(RichText("• ") + inline(note))


# ---------------------------------------------------------------------------- output


def emit(kb: KnowledgeBase, diagnosis: Diagnosis, lang: str, fmt: str, stream=None) -> None:
    """Print the report in the chosen format (json, markdown or rich) on `stream`."""
    import sys

    stream = stream or sys.stdout
    report = build_report(kb, diagnosis, lang)
    if fmt == "json":
        stream.write(to_json(report) + "\n")
    elif fmt == "markdown":
        stream.write(to_markdown(kb, report))
    else:
        from rich.console import Console

        print_rich(kb, report, Console(file=stream, highlight=False))
    stream.flush()
