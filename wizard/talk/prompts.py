"""The session's prompts: every question the terminal asks, and the keys it listens to.

questionary and prompt_toolkit are imported inside the methods, so that `triage` and the
other commands never pay for them. Ctrl-C and Ctrl-D (EOF) at any prompt raise `Quit`.

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

from ..common.i18n import tr
from ..reasoning.engine import AskedQuestion

BACK = "\x00back"  # a select value no rules option can have


class Quit(Exception):
    """Ctrl-C or Ctrl-D/EOF at a prompt: leave quietly."""


class Prompts:
    """Asks the user, in the session's language, on the session's terminal."""

    def __init__(self, kb, lang: str, console, prompt_input, prompt_output):
        self.kb, self.lang, self.console = kb, lang, console
        self.io: dict[str, Any] = {}
        if prompt_input is not None:
            self.io["input"] = prompt_input
        if prompt_output is not None:
            self.io["output"] = prompt_output

    def t(self, key: str, **fields: Any) -> str:
        return tr(self.kb, key, self.lang, **fields)

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
                raise Quit from None
            except KeyboardInterrupt:
                raise Quit from None
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
        text = fill(question.text.get(self.lang), asked.fields)
        self.console.print()
        if question.help is not None:
            self.console.print(
                fill(question.help.get(self.lang), asked.fields), style="dim", markup=False
            )
        if question.kind == "text":
            text = self.wrapped(text, f"{number}.")
            return _run(questionary.text(text, qmark=f"{number}.", **self.io))
        from .choose import SelectWords, select_question

        choices = [
            questionary.Choice(fill(o.label.get(self.lang), asked.fields), value=o.value)
            for o in asked.options
        ]
        if can_go_back:
            choices += [
                questionary.Separator(" "),
                questionary.Choice(self.t("session_back"), BACK),
            ]
        words = SelectWords(self.t("session_select_hint"), self.t("session_select_nudge"))
        return _run(select_question(text, choices, f"{number}.", words, **self.io))

    def pick(self, labels: list[str]) -> int:
        """One keypress among `labels`: `1`, `2`, `3` pick at once (Enter on the highlighted
        one works too); -1 for "none of these"."""
        import questionary
        from prompt_toolkit.key_binding import KeyBindings, merge_key_bindings

        choices = [questionary.Choice(label, value=n) for n, label in enumerate(labels)]
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
        return _run(select)


# ---------------------------------------------------------------------------- helpers


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
    """Ask; Ctrl-C and Ctrl-D (EOF) both raise Quit instead of returning None."""
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
        raise Quit from None
    if answer is None:
        raise Quit
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


def fill(template: str, fields: Mapping[str, str]) -> str:
    try:
        return template.format(**fields) if fields else template
    except (KeyError, IndexError, ValueError):
        return template
