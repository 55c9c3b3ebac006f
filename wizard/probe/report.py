"""How a probe report looks: rich (terminal), markdown (piped, saved), plain text.

Only presentation: the numbers come from `probe_core.ProbeReport`. rich is imported inside
the functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..common.foreign import code_span
from ..common.foreign import shown as _shown
from ..common.i18n import tr

# Lists of code names (modules, parameters) use ", " in both languages: it is code, not prose.
# Clauses of a sentence are joined by the `clause_separator` message (Chinese: "，").
_NAME_SEPARATOR = ", "

# Beyond this many rows the table stops growing; `to_dict()` / `--json` still hold them all.
MAX_TABLE_ROWS = 40


_CODE_SPAN = re.compile(r"`([^`]+)`")


def _styled(text: str, style: str = ""):
    """Rich Text with `code` spans highlighted; never markup (names may hold brackets)."""
    from rich.text import Text

    result = Text(style=style)
    position = 0
    for match in _CODE_SPAN.finditer(text):
        result.append(text[position : match.start()])
        result.append(match.group(0), style="bold cyan")  # keep the backticks: plain text too
        position = match.end()
    result.append(text[position:])
    return result


@dataclass(frozen=True)
class _Line:
    text: str
    style: str = ""  # a rich style; markdown ignores it
    code: bool = False  # PyTorch's own text: quoted verbatim, never restyled


def _lines_before_table(report, t, lang: str) -> list[_Line]:
    if report.ok:
        return [_Line(t("probe_verdict_ok", count=report.trainable_count, steps=report.steps),
                      "bold green")]  # fmt: skip
    counts = report.counts()
    details = [
        t(f"probe_count_{kind}", count=counts[kind])
        for kind in ("never", "sometimes", "multiple")
        if counts[kind]
    ]
    verdict = t(
        "probe_verdict_problems",
        problems=report.problem_count,
        count=report.trainable_count,
        details=t("clause_separator").join(details),
    )
    return [_Line(verdict, "bold red")]


def _lines_after_table(report, t) -> list[_Line]:
    def names(modules) -> str:
        # code spans: a module's name is the user's text, never markdown of its own
        return _NAME_SEPARATOR.join(code_span(m) if m else t("probe_root_module") for m in modules)

    lines: list[_Line] = []
    if report.uncalled_modules:
        lines.append(_Line(t("probe_uncalled_modules", modules=names(report.uncalled_modules)),
                           "bold"))  # fmt: skip
    if report.called_unused_modules:
        modules = names(report.called_unused_modules)
        lines.append(_Line(t("probe_ignored_output_modules", modules=modules), "bold"))
    for key, group in (
        ("probe_hint_never", report.never_reached),
        ("probe_hint_sometimes", report.sometimes_reached),
        ("probe_hint_multiple", report.reached_multiple_times),
    ):
        if group:
            lines.append(_Line("• " + t(key)))
    if report.frozen:
        modules = [code_span(m) if m else t("probe_root_module") for m in report.frozen_modules]
        modules = modules or sorted(
            {code_span(p.module) if p.module else t("probe_root_module") for p in report.frozen}
        )
        shown = _NAME_SEPARATOR.join(modules[:8]) + ("…" if len(modules) > 8 else "")
        lines.append(_Line(t("probe_frozen_note", count=len(report.frozen), modules=shown), "dim"))
    verdict = report.ddp_verdict
    if verdict is not None:
        lines.append(_Line(t("probe_ddp_title"), "bold"))
        if not verdict.ran:
            lines.append(_Line(t("probe_ddp_unavailable", error=verdict.error), "yellow"))
        elif verdict.error is None:
            lines.append(_Line(t("probe_ddp_clean", steps=report.steps + 1), "green"))
        else:
            lines.append(_Line(_shown(verdict.error), "red", code=True))
    return lines


def _rows(report, t) -> list[tuple[str, str, list[str]]]:
    """(kind key, style, cells) per table row, capped at MAX_TABLE_ROWS."""
    rows = []
    for kind, style, group in (
        ("probe_kind_never", "red", report.never_reached),
        ("probe_kind_sometimes", "yellow", report.sometimes_reached),
        ("probe_kind_multiple", "magenta", report.reached_multiple_times),
    ):
        for info in group:
            rows.append((kind, style, info))
    out = []
    for kind, style, info in rows[:MAX_TABLE_ROWS]:
        # names come from the user's model: `add_module` takes any string without a dot
        name = _shown(info.name)
        if info.aliases:
            aliases = _NAME_SEPARATOR.join(map(_shown, info.aliases))
            name += "\n" + t("probe_tied", names=aliases)
        if kind == "probe_kind_multiple":
            reached = "\n".join(
                t("probe_steps_losses", step=n, losses="+".join(map(str, losses)))
                for n, losses in enumerate(info.losses_per_step, 1)
                if len(losses) > 1
            )
        else:
            reached = ", ".join(map(str, info.steps_reached)) or t("probe_steps_none")
        shape = "×".join(map(str, info.shape)) or "()"
        module = _shown(info.module) if info.module else t("probe_root_module")
        out.append((kind, style, [t(kind), name, module, shape, reached]))
    return out


_COLUMNS = ("probe_col_problem", "probe_col_param", "probe_col_module", "probe_col_shape",
            "probe_col_steps")  # fmt: skip


def renderable(report, lang: str, kb):
    """A rich renderable: verdict line, table of problems, modules, hints, frozen note."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    def t(key: str, **fields: object) -> str:
        return tr(kb, key, lang, **fields)

    def styled(line: _Line):
        return Text(line.text, style=line.style) if line.code else _styled(line.text, line.style)

    parts: list = [styled(line) for line in _lines_before_table(report, t, lang)]
    if not report.ok:
        table = Table(title=t("probe_title", steps=report.steps), title_justify="left")
        for key in _COLUMNS:
            table.add_column(t(key))
        for _, style, cells in _rows(report, t):
            first, *rest = cells
            table.add_row(Text(first, style=style), *(Text(cell) for cell in rest))
        hidden = _row_count(report) - MAX_TABLE_ROWS
        if hidden > 0:
            table.caption = t("probe_more_rows", count=hidden)
        parts.append(table)
    parts += [styled(line) for line in _lines_after_table(report, t)]
    return Group(*parts)


def to_markdown(report, lang: str, kb) -> str:
    """The same report as markdown: for a pipe, a file, an issue comment."""

    def t(key: str, **fields: object) -> str:
        return tr(kb, key, lang, **fields)

    out = [line.text for line in _lines_before_table(report, t, lang)]
    if not report.ok:
        out += ["", f"**{t('probe_title', steps=report.steps)}**", ""]
        out.append("| " + " | ".join(t(key) for key in _COLUMNS) + " |")
        out.append("|" + "---|" * len(_COLUMNS))
        for _, _, cells in _rows(report, t):
            out.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
        hidden = _row_count(report) - MAX_TABLE_ROWS
        if hidden > 0:
            out += ["", t("probe_more_rows", count=hidden)]
    for line in _lines_after_table(report, t):
        fence = "`" * max(3, 1 + max(map(len, re.findall("`+", line.text)), default=0))
        out += ["", fence, line.text, fence] if line.code else ["", line.text]
    return "\n".join(out) + "\n"


def _cell(text: str) -> str:
    """A markdown table cell: a bar, a backtick, brackets and angle brackets are escaped (a
    module's name must not become a link or HTML), a line break becomes <br>."""
    return _MARKDOWN_SPECIAL.sub(r"\\\g<0>", text).replace("\n", "<br>")


_MARKDOWN_SPECIAL = re.compile(r"[|`<>\[\]\\]")


def _row_count(report) -> int:
    return (
        len(report.never_reached)
        + len(report.sometimes_reached)
        + len(report.reached_multiple_times)
    )
