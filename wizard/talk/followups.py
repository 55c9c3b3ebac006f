"""After the report: follow-up questions and details, until an empty line, Ctrl-C or Ctrl-D.

A question about a fix gets its answer; a detail updates what the interview knows and the
report is shown (and offered for saving) again.
"""

from __future__ import annotations

from ..common.i18n import tr
from .interview import Interview
from .prompts import Quit


class FollowUps:
    """The follow-up loop; `delivery` shows and saves an updated report."""

    def __init__(self, prompts, delivery):
        self.prompts, self.delivery = prompts, delivery
        self.kb, self.lang, self.console = prompts.kb, prompts.lang, prompts.console
        self.t = prompts.t

    def run(self, state: Interview) -> None:
        """The report was delivered, so leaving here is a normal end (exit code 0)."""
        while True:
            self.console.print()
            try:
                text = self.prompts.ask_text(self.t("followup_prompt"))
            except (Quit, KeyboardInterrupt, EOFError):
                return
            if not text.strip():
                return
            outcome = state.follow_up(text, self.lang)
            if outcome.candidates:  # not clear which entry is asked about: offer the readings
                try:
                    outcome = self.did_you_mean(state, outcome)
                except (Quit, KeyboardInterrupt, EOFError):
                    return
            self.respond(state, outcome)

    def respond(self, state: Interview, outcome) -> None:
        from .ask import answer_markdown, understood_lines

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
            self.delivery.report(diagnosis)
            self.delivery.save(state, diagnosis, None)  # the updated report is worth keeping
        else:
            self.console.print(self.t("followup_nothing"), style="dim")

    def did_you_mean(self, state: Interview, outcome):
        """One keypress among the closest readings (readers.py); "none of these" answers
        nothing."""
        from dataclasses import replace

        from .readers import choice_label

        labels = [choice_label(self.kb, c, self.lang) for c in outcome.candidates]
        picked = self.prompts.pick(labels)
        if picked < 0:
            return replace(outcome, answer=None, candidates=())
        answer = outcome.choose(self.kb, outcome.candidates[picked], self.lang, state.facts)
        return replace(outcome, answer=answer, candidates=())
