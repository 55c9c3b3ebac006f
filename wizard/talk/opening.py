"""The session's opening: the paste (or the `--paste` file) read and what it showed said
back, or the problem described in a sentence when there is no error to read."""

from __future__ import annotations

from ..knowledge.kb import NAMED_MODULES
from ..reasoning.readings import explain_facts
from .interview import Interview


class Opening:
    """Reads the error the session starts from and says what was found in it."""

    def __init__(self, prompts):
        self.prompts = prompts
        self.kb, self.lang, self.console = prompts.kb, prompts.lang, prompts.console
        self.t = prompts.t

    def start(self, paste_path: str | None) -> Interview:
        from ..reading.triage import triage_text

        if paste_path:
            from ..reading.inputs import DEFAULT_MAX_BYTES, read_sources

            result = read_sources(self.kb, [paste_path], self.lang, DEFAULT_MAX_BYTES)
            paste = None
        else:
            paste = self.prompts.read_paste()
            result = triage_text(self.kb, paste) if paste else None
        state = Interview.start(self.kb, result, paste, paste_path)
        if state.found_error:
            self.show_findings(result)
        elif result is not None:
            self.not_covered(paste if paste_path is None else _small_file_text(paste_path))
        return state

    def not_covered(self, text: str | None) -> None:
        """Say plainly that the paste is no error this tool knows, the exception it raised
        instead (if it shows one), and what this tool does know."""
        from ..output.render import _Out, shown_raised
        from ..reading.post import split_post
        from .readers import raised_in

        out = _Out(self.kb, self.lang, self.console)
        out.para(self.t("session_paste_unknown"), style="yellow")
        raised = raised_in(self.kb, split_post(text), text) if text else None
        if raised:
            out.para(self.t("session_paste_raised", error=shown_raised(raised)))
        self.say_covered(out)

    def describe(self, state: Interview) -> bool:
        """The problem told in a sentence, and what was read from it; False when it quotes
        an error no family knows and the user would rather stop than go on as if it were
        the usual DDP error."""
        text = self.prompts.ask_text(self.t("session_describe_prompt"))
        if not text.strip():
            return True
        quoted_before = state.found_error
        found = state.describe(text)
        if state.found_error and not quoted_before:  # the description quotes the error
            self.show_findings(state.triage)
        if state.triage is None:  # nothing pasted (after a paste of another error: asked)
            from ..reading.post import split_post
            from .readers import raised_in

            raised = raised_in(self.kb, split_post(text), text)  # another error, quoted
            if raised:
                return self.quoted_another(raised)
        if not found:
            self.console.print(self.t("session_describe_nothing"), style="dim")
            return True
        self.console.print(self.t("session_describe_understood"), style="green")
        for question, option in explain_facts(self.kb, found, exactly=False):
            line = f"  ✓ {question.text.get(self.lang)} → {option.label.get(self.lang)}"
            self.console.print(line.replace("{module}", "…"), style="dim", markup=False)
        if found.get(NAMED_MODULES):  # no question asks it: said as the reader says it
            from ..reading.module_names import name_rules, named_says

            says = named_says(name_rules(self.kb), found[NAMED_MODULES]).get(self.lang)
            self.console.print(f"  ✓ {says}", style="dim", markup=False)
        return True

    def quoted_another(self, error: str) -> bool:
        """The description quotes an exception that is no DDP error this tool knows: said,
        naming it, and the user chooses whether to go on with the usual error's questions."""
        from ..output.render import _Out, shown_raised

        out = _Out(self.kb, self.lang, self.console)
        out.para(self.t("ask_another_error", error=shown_raised(error)), style="yellow")
        self.say_covered(out)
        return self.prompts.ask_confirm(self.t("session_go_on_anyway"), default=False)

    def say_covered(self, out) -> None:
        from ..output.render import known_families

        out.para(self.t("session_covered", families=known_families(self.kb, self.lang)))

    def show_findings(self, result) -> None:
        from ..output.render import grouped_findings
        from ..reasoning.engine import settings

        shown = settings(self.kb)["shown_findings"]
        for finding in grouped_findings(result.findings)[:shown]:
            self.show_finding(finding)

    def show_finding(self, finding) -> None:
        from rich.text import Text

        from ..output.render import other_rank_error_row

        family = self.kb.family(finding.family)
        title = family.title.get(self.lang) if family else finding.family
        line = Text("✓ ", style="green")
        line.append(self.t("session_found", family=title), style="bold")
        if finding.ranks:
            line.append("  " + self.t("session_found_ranks", ranks=_join(finding.ranks)))
        self.console.print(line)
        names = finding.unused_parameter_names
        if names:
            shown = ", ".join(names[:6]) + (f" (+{len(names) - 6})" if len(names) > 6 else "")
            self.say("  " + self.t("session_found_names", names=shown), "dim")
        elif finding.unused_parameter_indices:
            indices = _join(finding.unused_parameter_indices[:12])
            self.say("  " + self.t("session_found_indices", indices=indices), "dim")
        if finding.unused_modules:
            modules = ", ".join(finding.unused_modules)
            self.say("  " + self.t("session_found_modules", modules=modules), "cyan")
        if finding.other_rank_error:  # a rank that exited first may be the cause
            label, value = other_rank_error_row(self.kb, finding, self.lang)
            self.say("  " + self.t("label_value", label=label, value=value), "yellow")

    def say(self, text: str, style: str) -> None:
        self.console.print(text, style=style, markup=False)


def _small_file_text(path: str, limit: int = 256_000) -> str | None:
    """The text of a `--paste` file small enough to read whole (a big log is only streamed)."""
    import os

    try:
        if not os.path.isfile(path) or os.path.getsize(path) > limit:
            return None
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def _join(values) -> str:
    return ", ".join(str(v) for v in values)
