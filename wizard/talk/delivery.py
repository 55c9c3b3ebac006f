"""The session's report: printed (with a recap when it is taller than the screen, and the
rest offered when it was cut), then offered for saving with the command that reproduces it.
"""

from __future__ import annotations

from ..output.saving import DEFAULT_REPORT, check_plan, companion_paths, plan_save, write_plan
from .answers import answers_for_file, dump_answers, reproduce_command
from .interview import Interview


class Delivery:
    """Shows a diagnosis and keeps it: the report on screen, the files the user saves."""

    def __init__(self, prompts):
        self.prompts = prompts
        self.kb, self.lang, self.console = prompts.kb, prompts.lang, prompts.console
        self.t = prompts.t

    def report(self, diagnosis) -> None:
        from ..output.render import build_report, print_rich

        self.console.print()
        report = build_report(self.kb, diagnosis, self.lang)
        with self.console.capture() as captured:
            more = print_rich(self.kb, report, self.console)
        shown = captured.get()
        self.console.out(shown, end="", highlight=False)
        if shown.count("\n") > self.console.height - 4:
            # taller than the screen: its top has scrolled away, so the essentials are said
            # again right above the prompt (issue 22, item 16)
            self.console.print()
            # plain text: the terminal report shows code spans without their backticks
            self.console.print(recap(self.kb, report).replace("`", ""), markup=False)
        if more:  # something was left out: offer it
            self.console.print()
            if self.prompts.ask_confirm(self.t("session_more_confirm"), default=False):
                self.console.print()
                print_rich(self.kb, report, self.console, full=True)

    def save(self, state: Interview, diagnosis, save_path: str | None) -> None:
        """Offer to save; a refused, existing or unwritable file asks again, never silently.

        `save_path` (from `--save`) is tried first; after any problem the user is asked again
        whether to save and under which name, and may decline. The reproduce command then
        names only the files that were really written.
        """
        plan_texts = self.save_texts(state, diagnosis)
        offered = save_path is not None
        while True:
            if not offered:
                self.console.print()
                if not self.prompts.ask_confirm(self.t("session_save_confirm"), default=True):
                    break
                save_path = self.prompts.ask_text(
                    self.t("session_save_path"), default=DEFAULT_REPORT
                )
                save_path = save_path.strip() or DEFAULT_REPORT
            offered = False
            result = self.try_save(state, plan_texts, save_path)
            if result is not None:
                answers_path, error_copy = companion_paths(save_path)
                self.console.print(
                    self.t("session_saved", path=save_path, answers=answers_path), style="green"
                )
                paste = error_copy if result.wrote(error_copy) else state.paste_path
                self.print_reproduce(state, answers_path, paste)
                return
        self.print_reproduce(state, None, state.paste_path)

    def save_texts(self, state: Interview, diagnosis) -> tuple[str, str, str | None]:
        from ..output.render import build_report, to_markdown

        report = to_markdown(self.kb, build_report(self.kb, diagnosis, self.lang))
        answers = dump_answers(
            answers_for_file(
                self.kb, state.text_facts, state.answers, state.description, state.said_later
            )
        )
        pasted = state.paste if state.paste and not state.paste_path else None
        return report, answers, pasted

    def try_save(self, state: Interview, texts, save_path: str):
        """Write the files of one save; None (after saying why) if the user must choose again."""
        plan = plan_save(save_path, *texts)
        check = check_plan(plan, [state.paste_path])
        if check.refused:
            for path in check.inputs_hit:
                self.say_problem(self.t("err_save_over_input", path=path))
            return None
        if check.existing:
            files = ", ".join(check.existing)
            if not self.prompts.ask_confirm(
                self.t("session_overwrite_confirm", files=files), False
            ):
                return None
        result = write_plan(plan, overwrite=bool(check.existing))
        if result.error is not None:
            reason = result.error.strerror or str(result.error)
            self.say_problem(self.t("err_cannot_write", path=result.failed_path, reason=reason))
            if result.written:
                self.say_problem(self.t("session_saved_partly", files=", ".join(result.written)))
            return None
        return result

    def say_problem(self, text: str) -> None:
        self.console.print(text, style="red", markup=False)

    def print_reproduce(self, state: Interview, answers_path: str | None, paste_path: str | None):
        answers = answers_for_file(
            self.kb, state.text_facts, state.answers, state.description, state.said_later
        )
        command = reproduce_command(self.lang, answers, answers_path, paste_path)
        self.console.print(self.t("session_reproduce"), style="dim")
        self.console.print("  " + command, style="bold", markup=False, soft_wrap=True)
        if state.paste and not paste_path:  # the pasted error exists in no file: say so
            self.console.print(self.t("session_reproduce_no_paste"), style="dim")


def recap(kb, report) -> str:
    """The report in two lines: what PyTorch said, the most likely cause, and the fix or the
    question that decides it (said again when the report is taller than the screen)."""
    from ..common.i18n import tr

    lang = report.lang
    cause = report.causes[0] if report.causes else None
    likely = (
        tr(
            kb,
            "session_recap_cause",
            lang,
            cause=cause.title,
            percent=f"{cause.probability * 100:.0f}",
        )
        if cause
        else ""
    )
    if report.fixes:
        then = tr(kb, "session_recap_fix", lang, fix=report.fixes[0].title)
    elif report.splitting_question:
        then = tr(kb, "session_recap_question", lang, question=report.splitting_question)
    else:
        then = tr(kb, "session_recap_none", lang)
    head = report.family_title or ""
    return tr(kb, "session_recap", lang, error=head, cause=likely, then=then)
