"""A yes/no prompt that answers in the user's language.

questionary's `confirm` always echoes "Yes"/"No" and shows "(Y/n)": English inside a
Chinese session. This is the same small prompt_toolkit application (y / n / Enter for the
default, Ctrl-C to leave), with the hint and the echoed answer passed in by the caller.
prompt_toolkit and questionary are imported inside the function, as in session.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ConfirmWords:
    yes: str  # echoed after the question when the answer is yes ("Yes", "是")
    no: str
    hint_default_yes: str  # shown before answering: "(Y/n)", "（Y/n）"
    hint_default_no: str


def confirm_question(message: str, default: bool, words: ConfirmWords, qmark: str, **io: Any):
    """A questionary Question (so the session's `_run` handles Ctrl-C / Ctrl-D alike)."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.application import get_app
    from prompt_toolkit.formatted_text import to_formatted_text
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.keys import Keys
    from questionary.question import Question
    from questionary.styles import merge_styles_default

    from ..common.wrap import wrap_fragments

    status: dict[str, Any] = {"answer": None, "complete": False}

    def tokens():
        parts = [("class:qmark", qmark), ("class:question", f" {message} ")]
        if not status["complete"]:
            hint = words.hint_default_yes if default else words.hint_default_no
            parts.append(("class:instruction", f"{hint} "))
        if status["answer"] is not None:
            parts.append(("class:answer", words.yes if status["answer"] else words.no))
        # broken on words at the terminal's width, never cut mid-word by the terminal
        return to_formatted_text(wrap_fragments(parts, get_app().output.get_size().columns))

    def finish(event, answer: bool) -> None:
        status["answer"], status["complete"] = answer, True
        event.app.exit(result=answer)

    bindings = KeyBindings()

    @bindings.add(Keys.ControlC, eager=True)
    def _interrupt(event) -> None:
        event.app.exit(exception=KeyboardInterrupt, style="class:aborting")

    @bindings.add("y")
    @bindings.add("Y")
    def _yes(event) -> None:
        finish(event, True)

    @bindings.add("n")
    @bindings.add("N")
    def _no(event) -> None:
        finish(event, False)

    @bindings.add(Keys.ControlM, eager=True)
    def _enter(event) -> None:
        finish(event, default)

    @bindings.add(Keys.Any)
    def _other(event) -> None:
        """Any other key is ignored: only y, n and Enter answer."""

    session = PromptSession(tokens, key_bindings=bindings, style=merge_styles_default([None]), **io)
    return Question(session.app)
