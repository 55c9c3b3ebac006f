"""The interactive `ddp-doctor` session: paste, describe, a short interview, the report.

This module only runs the steps in order; each lives in a module of its own, all of them
on this terminal's `Prompts` (prompts.py, the only place that builds questionary and
prompt_toolkit prompts, imported lazily so `triage` and the other commands never pay for
them):

- opening.py: the paste (or `--paste` file) read, what it showed, or a sentence instead;
- the interview itself, below: `interview.Interview` holds the state (facts, answers,
  going back) and has no terminal imports;
- delivery.py: the report printed, offered in full and for saving (`answers.py` writes the
  `--answers` file and the reproduce command);
- followups.py: questions and details after the report.
"""

from __future__ import annotations

from ..common.errors import ExitCode
from ..common.i18n import tr
from .delivery import Delivery
from .followups import FollowUps
from .interview import Interview
from .opening import Opening
from .prompts import BACK, Prompts, Quit, fill

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
    session = _Session(Prompts(kb, lang, console, prompt_input, prompt_output))
    try:
        return session.run(paste_path, save_path)
    except (Quit, KeyboardInterrupt, EOFError):
        console.print()
        console.print(tr(kb, "session_interrupted", lang), style="dim")
        return ExitCode.INTERRUPTED


# ---------------------------------------------------------------------------- the session


class _Session:
    """The steps of a session, in order; what each prints and asks is in its own module."""

    def __init__(self, prompts: Prompts):
        self.prompts, self.console, self.t = prompts, prompts.console, prompts.t
        self.opening = Opening(prompts)
        self.delivery = Delivery(prompts)
        self.follow_ups = FollowUps(prompts, self.delivery)

    def run(self, paste_path: str | None, save_path: str | None) -> int:
        self.console.print(self.t("session_welcome"), style="bold")
        self.console.print(self.t("session_quit_hint"), style="dim")
        state = self.opening.start(paste_path)
        # not a DDP error (a CUDA OOM, an import error ...): no pretending it is one
        unknown = state.triage is not None and not state.found_error
        if unknown and not self.prompts.ask_confirm(
            self.t("session_describe_instead"), default=False
        ):
            self.console.print(self.t("session_not_covered_bye"), style="dim")
            return ExitCode.NO_ERROR_FOUND
        if not state.found_error and not self.opening.describe(state):
            self.console.print(self.t("session_not_covered_bye"), style="dim")
            return ExitCode.NO_ERROR_FOUND
        self.interview(state)
        self.confirm_readings(state)
        diagnosis = state.diagnose()
        self.delivery.report(diagnosis)
        self.delivery.save(state, diagnosis, save_path)
        self.follow_ups.run(state)
        return ExitCode.OK

    def interview(self, state: Interview) -> None:
        while True:
            asked = state.next_question()
            if asked is None:
                return
            value = self.prompts.ask_question(asked, state.number, state.can_go_back)
            if value == BACK:
                state.back()
            else:
                state.answer(asked, value)

    def confirm_readings(self, state: Interview) -> None:
        """What the description was read to say, asked back where the fix depends on it: Enter
        keeps it (one keypress), "no" asks its question, and the interview goes on from the
        true answer. Each confirmed reading becomes an answer, so none is asked twice."""
        while pending := state.readings_to_confirm():
            asked, option = pending[0]
            question = fill(asked.question.text.get(self.prompts.lang), asked.fields)
            self.console.print()
            self.console.print(self.t("session_reading_heading"), style="bold")
            line = f"  {question} → {option.label.get(self.prompts.lang)}"
            self.console.print(line, style="cyan", markup=False)
            if self.prompts.ask_confirm(self.t("session_reading_confirm"), default=True):
                state.answer(asked, option.value)
                continue
            self.console.print(self.t("session_reading_instead"), style="dim")
            state.answer(asked, self.prompts.ask_question(asked, state.number, False))
            self.interview(state)
