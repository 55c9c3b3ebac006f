"""The interactive `ddp-doctor` session: paste, describe, a short interview, the report.

The only module that imports questionary (and prompt_toolkit), lazily, so `triage` and the
other commands never pay for it. This is the terminal half: it prints and asks. The state
(facts, answers, going back) is `interview.Interview`, which has no terminal imports; the
`--answers` file and the reproduce command are `answers.py`.

Input conventions (documented in the README):
- The paste prompt reads lines until an empty line. Terminals send a paste as one
  bracketed block, so blank lines inside a traceback do not end it; typed input ends at the
  first empty line. Ctrl-D after some lines ends the paste too; Ctrl-D (EOF) with nothing
  pasted, like Ctrl-C at any prompt, leaves the session with exit code 130.
- Every select offers "back" once something was answered: it undoes the last answer.
- No select has an answer chosen in advance (`choose.py`), and keys typed before a question
  is on the screen are discarded: a stray Enter never answers. Without bracket marks, a
  blank line with more input arriving within milliseconds is inside a paste.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.errors import ExitCode
from ..common.i18n import tr
from ..output.saving import DEFAULT_REPORT, check_plan, companion_paths, plan_save, write_plan
from ..reasoning.engine import AskedQuestion
from .answers import answers_for_file, dump_answers, reproduce_command
from .interview import Interview, explain_facts

_BACK = "\x00back"  # a select value no rules option can have


class _Quit(Exception):
    """Ctrl-C or Ctrl-D/EOF at a prompt: leave quietly."""


# ---------------------------------------------------------------------------- entry point


def run_session(
    kb,
    lang: str,
    paste_path: str | None = None,
    save_path: str | None = None,
    *,
    console=None,
    prompt_input=None,
    prompt_output=None,
) -> int:
    """Run the interview; returns the exit code.

    `console` (a rich Console), `prompt_input` and `prompt_output` (prompt_toolkit) default
    to the terminal; tests pass a pipe input and a recording console.
    """
    if console is None:
        from rich.console import Console

        console = Console(highlight=False)
    session = _Session(kb, lang, console, prompt_input, prompt_output)
    try:
        return session.run(paste_path, save_path)
    except (_Quit, KeyboardInterrupt, EOFError):
        console.print()
        console.print(tr(kb, "session_interrupted", lang), style="dim")
        return ExitCode.INTERRUPTED


# ---------------------------------------------------------------------------- the session


class _Session:
    """The terminal side of the interview: what is printed and asked; state is `Interview`."""

    def __init__(self, kb, lang: str, console, prompt_input, prompt_output):
        self.kb, self.lang, self.console = kb, lang, console
        self.io: dict[str, Any] = {}
        if prompt_input is not None:
            self.io["input"] = prompt_input
        if prompt_output is not None:
            self.io["output"] = prompt_output

    def t(self, key: str, **fields: Any) -> str:
        return tr(self.kb, key, self.lang, **fields)

    # -------------------------------------------------------------- flow

    def run(self, paste_path: str | None, save_path: str | None) -> int:
        self.console.print(self.t("session_welcome"), style="bold")
        self.console.print(self.t("session_quit_hint"), style="dim")
        state = self.start(paste_path)
        # not a DDP error (a CUDA OOM, an import error ...): no pretending it is one
        unknown = state.triage is not None and not state.found_error
        if unknown and not self.ask_confirm(self.t("session_describe_instead"), default=False):
            self.console.print(self.t("session_not_covered_bye"), style="dim")
            return ExitCode.NO_ERROR_FOUND
        if not state.found_error:
            self.describe(state)
        self.interview(state)
        diagnosis = state.diagnose()
        self.report(diagnosis)
        self.save(state, diagnosis, save_path)
        self.follow_ups(state)
        return ExitCode.OK

    def start(self, paste_path: str | None) -> Interview:
        from ..reading.triage import triage_text

        if paste_path:
            from ..reading.inputs import DEFAULT_MAX_BYTES, read_sources

            result = read_sources(self.kb, [paste_path], self.lang, DEFAULT_MAX_BYTES)
            paste = None
        else:
            paste = self.read_paste()
            result = triage_text(self.kb, paste) if paste else None
        state = Interview.start(self.kb, result, paste, paste_path)
        if state.found_error:
            self.show_findings(result)
        elif result is not None:
            self.not_covered()
        return state

    def not_covered(self) -> None:
        """Say plainly that the paste is no error this tool knows, and what it does know."""
        from ..output.render import _Out

        out = _Out(self.kb, self.lang, self.console)
        out.para(self.t("session_paste_unknown"), style="yellow")
        titles = [f.title.get(self.lang) for f in self.kb.families]
        out.para(self.t("session_covered", families=self.t("list_separator").join(titles)))

    def describe(self, state: Interview) -> None:
        text = self.ask_text(self.t("session_describe_prompt"))
        if not text.strip():
            return
        found = state.describe(text)
        if not found:
            self.console.print(self.t("session_describe_nothing"), style="dim")
            return
        self.console.print(self.t("session_describe_understood"), style="green")
        for question, option in explain_facts(self.kb, found):
            line = f"  ✓ {question.text.get(self.lang)} → {option.label.get(self.lang)}"
            self.console.print(line.replace("{module}", "…"), style="dim", markup=False)

    def interview(self, state: Interview) -> None:
        while True:
            asked = state.next_question()
            if asked is None:
                return
            value = self.ask_question(asked, state.number, state.can_go_back)
            if value == _BACK:
                state.back()
            else:
                state.answer(asked, value)

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
            if self.ask_confirm(self.t("session_more_confirm"), default=False):
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
                if not self.ask_confirm(self.t("session_save_confirm"), default=True):
                    break
                save_path = self.ask_text(self.t("session_save_path"), default=DEFAULT_REPORT)
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
        answers = dump_answers(answers_for_file(self.kb, state.text_facts, state.answers))
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
            if not self.ask_confirm(self.t("session_overwrite_confirm", files=files), False):
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

    def follow_ups(self, state: Interview) -> None:
        """After the report: questions and details until an empty line, Ctrl-C or Ctrl-D.

        The report was delivered, so leaving here is a normal end (exit code 0).
        """
        from .ask import answer_markdown, understood_lines

        while True:
            self.console.print()
            try:
                text = self.ask_text(self.t("followup_prompt"))
            except (_Quit, KeyboardInterrupt, EOFError):
                return
            if not text.strip():
                return
            outcome = state.follow_up(text, self.lang)
            if outcome.candidates:  # not clear which entry is asked about: offer the readings
                try:
                    outcome = self.did_you_mean(state, outcome)
                except (_Quit, KeyboardInterrupt, EOFError):
                    return
            if outcome.answer is not None:
                from ..output.render import print_markdown

                # as `ask` prints it: Chinese wraps by display width, between characters
                text = answer_markdown(self.kb, outcome.answer, self.lang)
                print_markdown(self.kb, text, self.lang, self.console)
            elif outcome.changed:
                self.console.print(tr(self.kb, "ask_understood", self.lang), style="green")
                for line in understood_lines(self.kb, outcome.understood, self.lang):
                    self.console.print("  " + line, style="dim", markup=False)
                self.console.print(self.t("followup_updated"), style="bold")
                diagnosis = state.diagnose()
                self.report(diagnosis)
                self.save(state, diagnosis, None)  # the updated report is worth keeping too
            else:
                self.console.print(self.t("followup_nothing"), style="dim")

    def did_you_mean(self, state: Interview, outcome):
        """One keypress among the closest readings (reading.py): `1`, `2`, `3` pick at once
        (Enter on the highlighted one works too); "none of these" answers nothing."""
        from dataclasses import replace

        import questionary
        from prompt_toolkit.key_binding import KeyBindings, merge_key_bindings

        from .readers import choice_label

        choices = [
            questionary.Choice(choice_label(self.kb, c, self.lang), value=n)
            for n, c in enumerate(outcome.candidates)
        ]
        choices.append(questionary.Choice(self.t("choices_none"), value=-1))
        self.console.print(self.t("choices_heading"), style="bold")
        select = questionary.select(
            self.t("choices_prompt"), choices=choices, use_shortcuts=True, **self.io
        )
        keys = KeyBindings()
        for number, choice in enumerate(choices, 1):  # questionary's shortcuts only move
            keys.add(str(number), eager=True)(
                lambda event, value=choice.value: event.app.exit(result=value)
            )
        app = select.application
        app.key_bindings = merge_key_bindings([app.key_bindings, keys])
        picked = _run(select)
        if picked < 0:
            return replace(outcome, answer=None, candidates=())
        answer = outcome.choose(self.kb, outcome.candidates[picked], self.lang, state.facts)
        return replace(outcome, answer=answer, candidates=())

    # -------------------------------------------------------------- pieces

    def show_findings(self, result) -> None:
        from rich.text import Text

        from ..output.render import grouped_findings, other_rank_error_row
        from ..reasoning.engine import settings

        shown = settings(self.kb)["shown_findings"]
        for finding in grouped_findings(result.findings)[:shown]:
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
                self.console.print(
                    "  " + self.t("session_found_names", names=shown), style="dim", markup=False
                )
            elif finding.unused_parameter_indices:
                indices = _join(finding.unused_parameter_indices[:12])
                self.console.print(
                    "  " + self.t("session_found_indices", indices=indices),
                    style="dim",
                    markup=False,
                )
            if finding.unused_modules:
                self.console.print(
                    "  "
                    + self.t("session_found_modules", modules=", ".join(finding.unused_modules)),
                    style="cyan",
                    markup=False,
                )
            if finding.other_rank_error:  # a rank that exited first may be the cause
                label, value = other_rank_error_row(self.kb, finding, self.lang)
                self.console.print(
                    "  " + self.t("label_value", label=label, value=value),
                    style="yellow",
                    markup=False,
                )

    def print_reproduce(self, state: Interview, answers_path: str | None, paste_path: str | None):
        answers = answers_for_file(self.kb, state.text_facts, state.answers)
        command = reproduce_command(self.lang, answers, answers_path, paste_path)
        self.console.print(self.t("session_reproduce"), style="dim")
        self.console.print("  " + command, style="bold", markup=False, soft_wrap=True)
        if state.paste and not paste_path:  # the pasted error exists in no file: say so
            self.console.print(self.t("session_reproduce_no_paste"), style="dim")

    # -------------------------------------------------------------- prompts

    def read_paste(self) -> str:
        """Lines until an empty one; '' when the user skips."""
        from prompt_toolkit import PromptSession

        self.console.print()
        self.console.print(self.t("session_paste_prompt"), style="bold")
        prompt = PromptSession(key_bindings=_paste_bindings(), **self.io)
        lines: list[str] = []
        while True:
            try:
                line = prompt.prompt("> " if not lines else "  ")
            except EOFError:
                if lines:  # Ctrl-D after a paste ends it
                    break
                raise _Quit from None
            except KeyboardInterrupt:
                raise _Quit from None
            if not line.strip():
                # without bracket marks a blank line inside a traceback arrives as an Enter;
                # the rest of a paste follows within milliseconds, typing does not
                if lines and _more_input_waiting(prompt.input):
                    lines.append("")
                    continue
                break
            lines.append(line.rstrip("\n"))
            if "\n" in line:  # a terminal paste of several lines arrives whole: it is done
                break
        return "\n".join(lines)

    def ask_text(self, message: str, default: str = "") -> str:
        import questionary

        message = self.wrapped(message, "›")
        question = questionary.text(message, default=default, qmark="›", **self.io)
        return _run(question)

    def wrapped(self, message: str, qmark: str) -> str:
        """A prompt's message broken on words at the console's width (after its mark and a
        space), so the terminal never cuts a word at its edge; the answer is typed after it."""
        from ..common.wrap import wrap

        lines = wrap(f"{qmark} {message}", max(self.console.width - 1, 20))
        return "\n".join(lines)[len(qmark) + 1 :]

    def ask_confirm(self, message: str, default: bool) -> bool:
        from .confirm import ConfirmWords, confirm_question

        words = ConfirmWords(
            yes=self.t("session_confirm_yes"),
            no=self.t("session_confirm_no"),
            hint_default_yes=self.t("session_confirm_hint_yes"),
            hint_default_no=self.t("session_confirm_hint_no"),
        )
        return bool(_run(confirm_question(message, default, words, "›", **self.io)))

    def ask_question(self, asked: AskedQuestion, number: int, can_go_back: bool) -> str:
        import questionary

        question = asked.question
        text = _fill(question.text.get(self.lang), asked.fields)
        self.console.print()
        if question.help is not None:
            self.console.print(
                _fill(question.help.get(self.lang), asked.fields), style="dim", markup=False
            )
        if question.kind == "text":
            text = self.wrapped(text, f"{number}.")
            return _run(questionary.text(text, qmark=f"{number}.", **self.io))
        from .choose import SelectWords, select_question

        choices = [
            questionary.Choice(_fill(o.label.get(self.lang), asked.fields), value=o.value)
            for o in asked.options
        ]
        if can_go_back:
            choices += [
                questionary.Separator(" "),
                questionary.Choice(self.t("session_back"), _BACK),
            ]
        words = SelectWords(self.t("session_select_hint"), self.t("session_select_nudge"))
        return _run(select_question(text, choices, f"{number}.", words, **self.io))


# ---------------------------------------------------------------------------- helpers


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


def _paste_bindings():
    """A bracketed paste lands in the line as it is; one that ends in a newline (most
    copied tracebacks do) is accepted at once, so no second Enter is needed."""
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.keys import Keys

    bindings = KeyBindings()

    @bindings.add(Keys.BracketedPaste)
    def _paste(event) -> None:
        data = event.data.replace("\r\n", "\n").replace("\r", "\n")
        buffer = event.current_buffer
        buffer.insert_text(data)
        if data.endswith("\n") and buffer.text.strip():
            buffer.validate_and_handle()

    return bindings


def _run(question) -> Any:
    """Ask; Ctrl-C and Ctrl-D (EOF) both raise _Quit instead of returning None."""
    from prompt_toolkit.key_binding import KeyBindings, merge_key_bindings

    extra = KeyBindings()

    @extra.add("c-d", eager=True)
    def _eof(event) -> None:
        buffer = event.app.current_buffer
        if buffer is None or not buffer.text:
            event.app.exit(exception=EOFError, style="class:aborting")
        else:
            buffer.delete()

    app = question.application
    app.key_bindings = merge_key_bindings([app.key_bindings, extra])
    _discard_typed_ahead(app.input)
    try:
        answer = question.unsafe_ask()
    except (KeyboardInterrupt, EOFError):
        raise _Quit from None
    if answer is None:
        raise _Quit
    return answer


PASTE_GAP_SECONDS = 0.05  # the lines of one paste arrive closer together than keystrokes


def _more_input_waiting(prompt_input) -> bool:
    """More of a paste is already on its way: keys prompt_toolkit read ahead, or input the
    terminal holds or receives within PASTE_GAP_SECONDS (issue 22, item 13). Only a real
    terminal is asked; a pipe (the tests' scripted keys) is typing, never a paste."""
    import os

    try:
        fd = prompt_input.fileno()
        if not os.isatty(fd):
            return False
        import select

        from prompt_toolkit.input.typeahead import get_typeahead, store_typeahead

        waiting = get_typeahead(prompt_input)
        if waiting:
            store_typeahead(prompt_input, waiting)  # only looked at: the next prompt reads them
            return True
        ready, _, _ = select.select([fd], [], [], PASTE_GAP_SECONDS)
        return bool(ready)
    except (ImportError, OSError, ValueError, NotImplementedError, AttributeError):
        return False


def _discard_typed_ahead(prompt_input) -> None:
    """Forget keys typed before a question was on the screen (issue 22, item 12).

    Copying an error from a terminal usually takes the empty line after it; that Enter, or
    one pressed to "finish" a paste that was already done, must not answer a question the
    user has not seen. Keys wait in two places: prompt_toolkit's own typeahead (read with
    the last prompt's input) and the terminal's input queue. Only a real terminal is
    flushed: a pipe's keys (the tests' scripts) are the answers themselves.
    """
    import os

    try:
        fd = prompt_input.fileno()
        if not os.isatty(fd):
            return
        import termios

        from prompt_toolkit.input.typeahead import clear_typeahead

        clear_typeahead(prompt_input)
        try:
            termios.tcflush(fd, termios.TCIFLUSH)
        except termios.error:
            return
    except (ImportError, OSError, ValueError, NotImplementedError, AttributeError):
        return  # no terminal to flush (Windows, a closed stream): nothing typed ahead either


def _fill(template: str, fields: Mapping[str, str]) -> str:
    try:
        return template.format(**fields) if fields else template
    except (KeyError, IndexError, ValueError):
        return template


def _join(values) -> str:
    return ", ".join(str(v) for v in values)
