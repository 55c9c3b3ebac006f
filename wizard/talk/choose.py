"""A select prompt with no answer chosen in advance (issue 22, item 12).

questionary's `select` points at the first option, so a stray Enter (the empty line copied
after an error, an Enter pressed to "finish" a paste that was already done) answers the
question with it before the user has read it. Here nothing is pointed at until the user
moves: the first ↓ (or j) points at the first option, the first ↑ (or k) at the last, and
Enter with nothing pointed at answers nothing; it only makes the hint say what to do.

The question line is broken on words at the terminal's width (`wrap.wrap_fragments`), also
once the answer is echoed beside it, so the terminal never cuts a word at its edge (item 14).
prompt_toolkit and questionary are imported inside the function, as in session.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NOTHING = -1  # InquirerControl.pointed_at before the user moves


@dataclass(frozen=True)
class SelectWords:
    hint: str  # shown before answering: "(↑↓ and Enter)"
    nudge: str  # after an Enter with nothing chosen: "(choose with ↑↓ first, then Enter)"


def select_question(
    message: str,
    choices: list[Any],
    qmark: str,
    words: SelectWords,
    **io: Any,
):
    """A questionary Question (so the session's `_run` handles Ctrl-C / Ctrl-D alike).

    `choices` are questionary `Choice`s and `Separator`s; the answer is the chosen value."""
    from prompt_toolkit.application import Application, get_app
    from questionary.prompts import common
    from questionary.question import Question
    from questionary.styles import merge_styles_default

    from ..common.wrap import wrap_fragments

    control = common.InquirerControl(choices, use_indicator=False)
    control.pointed_at = NOTHING
    state = {"nudged": False}

    def prompt_tokens():
        parts = [("class:qmark", qmark), ("class:question", f" {message} ")]
        if control.is_answered:
            parts.append(("class:answer", str(control.get_pointed_at().title)))
        else:
            hint = words.nudge if state["nudged"] else words.hint
            parts.append(("class:instruction", hint))
        return wrap_fragments(parts, get_app().output.get_size().columns)

    layout = common.create_inquirer_layout(control, prompt_tokens, **io)
    application = Application(
        layout=layout,
        key_bindings=_bindings(control, state),
        style=merge_styles_default([None]),
        **io,
    )
    return Question(application)


def _bindings(control, state: dict[str, bool]):
    """↑↓ (j/k, Ctrl-N/P) move, Enter answers what is pointed at, Ctrl-C leaves."""
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.keys import Keys

    def move(step: int) -> None:
        if control.pointed_at == NOTHING:  # the first move lands on the first or the last
            control.pointed_at = 0 if step > 0 else control.choice_count - 1
        else:
            control.pointed_at = (control.pointed_at + step) % control.choice_count
        while not control.is_selection_valid():  # separators are skipped
            control.pointed_at = (control.pointed_at + step) % control.choice_count

    bindings = KeyBindings()

    @bindings.add(Keys.ControlQ, eager=True)
    @bindings.add(Keys.ControlC, eager=True)
    def _interrupt(event) -> None:
        event.app.exit(exception=KeyboardInterrupt, style="class:aborting")

    for key in (Keys.Down, "j", Keys.ControlN):
        bindings.add(key, eager=True)(lambda event: move(1))
    for key in (Keys.Up, "k", Keys.ControlP):
        bindings.add(key, eager=True)(lambda event: move(-1))

    @bindings.add(Keys.ControlM, eager=True)
    def _enter(event) -> None:
        if control.pointed_at == NOTHING:  # no silent default: say how to choose
            state["nudged"] = True
            return
        control.is_answered = True
        event.app.exit(result=control.get_pointed_at().value)

    @bindings.add(Keys.Any)
    def _other(event) -> None:
        """Other keys insert nothing."""

    return bindings
