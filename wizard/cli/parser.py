"""argparse in the user's language: --help and usage errors from the rules' message files.

Help texts are message keys (`cli_help_lang` ...), turned into text only when help is
printed, so a normal run pays nothing for them. argparse's own words ("usage:", "invalid
choice: ...") come from the standard library through `argparse._`; while our parser
parses, formats help or reports an error, that function is swapped for one that looks the
English text up in the `argparse_*` messages. English needs no lookup at all.

The language is `--lang X` anywhere on the command line (before a `--`), else the locale:
the parser has to speak before it has parsed anything.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator, Sequence

from ..common.scoped import scoped

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ARGPARSE_PREFIX = "argparse_"
HELP_PREFIX = "cli_"


class Texts:
    """Interface texts in one language, from the built-in rules, loaded on first use."""

    def __init__(self, lang: str):
        self.lang = lang
        self._kb: Any = None
        self._argparse: dict[str, str] | None = None

    def kb(self):
        if self._kb is None:
            from ..knowledge.kb import load

            self._kb = load()
        return self._kb

    def __call__(self, key: str, **fields: Any) -> str:
        from ..common.i18n import tr

        try:
            return tr(self.kb(), key, self.lang, **fields)
        except Exception:  # noqa: BLE001 - broken rules must not break --help; say the key
            return key

    def translate_argparse(self, english: str) -> str:
        """argparse's English message in our language (unchanged for English or if unknown)."""
        if self.lang == "en":
            return english
        if self._argparse is None:
            try:
                messages = self.kb().messages
            except Exception:  # noqa: BLE001 - fall back to argparse's English
                messages = {}
            self._argparse = {
                text.en: text.get(self.lang)
                for key, text in messages.items()
                if key.startswith(ARGPARSE_PREFIX)
            }
        return self._argparse.get(english, english)


def lang_from_argv(argv: Sequence[str]) -> str:
    """The language the parser speaks: `--lang X` / `--lang=X` before `--`, else the locale."""
    from ..common.i18n import SUPPORTED, detect_lang

    requested = None
    tokens = list(argv)
    for i, token in enumerate(tokens):
        if token == "--":
            break
        name, eq, value = token.partition("=")
        # argparse accepts unambiguous prefixes (`--la zh`); nothing else starts with --l
        if len(name) >= 3 and "--lang".startswith(name):
            if not eq:
                value = tokens[i + 1] if i + 1 < len(tokens) else ""
            requested = value
    return requested if requested in SUPPORTED else detect_lang()


@scoped
def _argparse_speaks(texts: Texts) -> Iterator[None]:
    """Swap argparse's gettext functions for our lookup, and put them back."""
    saved = argparse._, argparse.ngettext

    def ngettext(singular: str, plural: str, count: int) -> str:
        return texts.translate_argparse(singular if count == 1 else plural)

    argparse._, argparse.ngettext = texts.translate_argparse, ngettext
    try:
        yield
    finally:
        argparse._, argparse.ngettext = saved


@scoped
def argparse_english() -> Iterator[None]:
    """argparse's words as it writes them, while a parser is built.

    Building a parser asks `argparse._` for a few words ("options", "show this help message
    and exit"); the standard library's gettext then looks for catalogs (argparse has none)
    and imports `locale`, on every run. Those words are put in our language when help is
    printed (`HelpFormatter._translate`), as before: the English is all they need now."""
    saved = argparse._, argparse.ngettext
    argparse._ = str
    argparse.ngettext = lambda singular, plural, count: singular if count == 1 else plural
    try:
        yield
    finally:
        argparse._, argparse.ngettext = saved


class HelpFormatter(argparse.HelpFormatter):
    """Turns message keys into text at the moment help is printed."""

    texts: Texts  # set by `Parser` for each formatter it makes

    def _translate(self, text: str | None) -> str | None:
        if text and text.startswith(HELP_PREFIX) and " " not in text:
            return self.texts(text)
        if text:
            return self.texts.translate_argparse(text)
        return text

    def _expand_help(self, action: argparse.Action) -> str:
        action.help = self._translate(action.help)
        return super()._expand_help(action)

    def start_section(self, heading: str | None) -> None:
        heading = self._translate(heading)
        if heading and self.texts.lang == "zh":
            self._headings.append(heading)
        super().start_section(heading)

    def format_help(self) -> str:
        text = super().format_help()
        for heading in getattr(self, "_headings", ()):  # Chinese takes a full-width colon
            text = text.replace(f"{heading}:\n", f"{heading}：\n")
        return text

    def add_text(self, text: str | None) -> None:
        super().add_text(self._translate(text))

    # argparse wraps with `textwrap`, which counts characters: a Chinese character takes two
    # terminal columns, so its lines ran past the terminal. These wrap by display width.

    def _split_lines(self, text: str, width: int) -> list[str]:
        from ..common.wrap import wrap

        return wrap(self._whitespace_matcher.sub(" ", text).strip(), width)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        from ..common.wrap import wrap

        lines = wrap(self._whitespace_matcher.sub(" ", text).strip(), width - len(indent))
        return "\n".join(indent + line for line in lines)

    def _format_usage(self, usage, actions, groups, prefix) -> str:
        # argparse lays the usage out by the prefix's length in characters; a wide prefix
        # ("用法：", 6 columns in 3 characters) stands in as as many columns of placeholder,
        # so the first line fits and the next ones line up under the program name
        from ..common.wrap import text_width

        said = self.texts.translate_argparse("usage: ") if prefix is None else prefix
        stand_in = "u" * text_width(said)
        text = super()._format_usage(usage, actions, groups, stand_in)
        return said + text[len(stand_in) :] if text.startswith(stand_in) else text


def _terminal_width() -> int:
    """What `shutil.get_terminal_size().columns` says: $COLUMNS, the terminal, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose help and errors are in `texts.lang`."""

    def __init__(self, *args: Any, texts: Texts, **kwargs: Any):
        self.texts = texts
        super().__init__(*args, **kwargs)

    def _get_formatter(self) -> argparse.HelpFormatter:
        # the width given, so that argparse (which makes a formatter for every option it
        # adds) never imports shutil, and bz2, lzma... with it, on every run
        formatter = HelpFormatter(prog=self.prog, width=_terminal_width() - 2)
        formatter.texts = self.texts
        formatter._headings = []
        return formatter

    def parse_args(self, args=None, namespace=None):
        with _argparse_speaks(self.texts):
            return super().parse_args(args, namespace)

    def parse_known_args(self, args=None, namespace=None):
        with _argparse_speaks(self.texts):
            return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        with _argparse_speaks(self.texts):
            return super().format_help()

    def format_usage(self) -> str:
        with _argparse_speaks(self.texts):
            return super().format_usage()

    def error(self, message: str):
        from ..common.foreign import shown

        # argparse quotes what was typed ("invalid choice: '...'"): escapes only, line by line
        message = "\n".join(shown(line) for line in message.split("\n"))
        with _argparse_speaks(self.texts):
            try:
                super().error(message)
            except SystemExit as exc:
                exc.usage_message = message  # for the JSON error document under --json
                raise
