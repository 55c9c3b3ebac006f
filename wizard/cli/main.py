"""Command line: argument parsing and the sub-commands.

Nothing imports this module; it imports the rest. Exit codes are `errors.ExitCode`
(README "Exit codes" lists them), input reading is `inputs.py`, output is `render.emit`,
the `--answers` file is `answers.py`, the interview is `session.py` + `interview.py`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ..common.errors import ExitCode, UserError
from ..common.version import __version__
from ..reading.inputs import DEFAULT_MAX_BYTES, read_sources
from .parser import Parser, Texts, argparse_english, lang_from_argv

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO

FORMATS = ("auto", "rich", "markdown", "text", "json")


# ---------------------------------------------------------------------------- parsing


# Options every command takes, before or after its name. The top-level parser holds the
# defaults; each sub-parser's copy defaults to SUPPRESS, so it sets the value only when the
# option is written after the command and never overwrites one written before it.
# Help texts are message keys (rules/messages/cli.yaml), translated when help is printed.


def _common(parser: argparse.ArgumentParser, top: bool, json_help: str = "cli_help_json") -> None:
    default = {} if top else {"default": argparse.SUPPRESS}
    parser.add_argument("--lang", choices=("en", "zh"), help="cli_help_lang", **default)
    parser.add_argument("--rules", metavar="DIR", help="cli_help_rules", **default)
    parser.add_argument("--json", action="store_true", help=json_help, **default)
    fmt = {"default": "auto"} if top else default
    parser.add_argument("--format", choices=FORMATS, help="cli_help_format", **fmt)
    parser.add_argument("--all", action="store_true", help="cli_help_all", **default)


def _positive_int(texts: Texts):
    """argparse type: a whole number above 0 (`--max-bytes 0` would read nothing at all)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(texts("cli_err_whole_number", value=text)) from None
        if value < 1:
            raise argparse.ArgumentTypeError(texts("cli_err_at_least_one", value=value))
        return value

    return parse


# options of the interview (no command); `ask` has its own --paste
SESSION_OPTIONS = ("answers", "paste", "save")


def build_parser(texts: Texts | None = None, only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with `only`, the one sub-command the command line starts with (building
    all of them costs more start-up time than a `triage --json` run needs for the rest)."""
    texts = texts or Texts("en")
    with argparse_english():
        return _build_parser(texts, only)


def _build_parser(texts: Texts, only: str | None) -> argparse.ArgumentParser:
    parser = Parser(
        prog="ddp-doctor", description="cli_description", epilog="cli_epilog", texts=texts
    )
    parser.add_argument(
        "--version", action="version", version=f"ddp-doctor {__version__}", help="cli_help_version"
    )
    _common(parser, top=True)
    parser.add_argument("--answers", metavar="FILE", help="cli_help_answers")
    parser.add_argument("--paste", metavar="FILE", help="cli_help_paste")
    parser.add_argument("--save", metavar="FILE", help="cli_help_save")
    # `prog` given: argparse would otherwise lay out a usage line (and import our wrapping) on
    # every run only to find the program's name, as no positional comes before the command
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", prog=parser.prog)

    def command(name: str) -> argparse.ArgumentParser | None:
        if only is not None and name != only:
            return None
        return sub.add_parser(name, help=f"cli_cmd_{name}", texts=texts)

    if triage := command("triage"):
        _triage_options(triage, texts)
    if ask := command("ask"):
        _ask_options(ask)
    if questions := command("questions"):
        _common(questions, top=False)
    if run := command("run"):
        _run_options(run)
    if probe := command("probe"):
        _probe_options(probe, texts)
    return parser


def _triage_options(triage: argparse.ArgumentParser, texts: Texts) -> None:
    triage.add_argument("files", nargs="*", metavar="FILE", help="cli_help_files")
    triage.add_argument(
        "--max-bytes",
        type=_positive_int(texts),
        default=DEFAULT_MAX_BYTES,
        metavar="N",
        help="cli_help_max_bytes",
    )
    _common(triage, top=False)


def _ask_options(ask: argparse.ArgumentParser) -> None:
    # the words of the sentence, quoted or not (`ask what does find_unused_parameters cost`)
    ask.add_argument("text", nargs="+", help="cli_help_ask_text")
    ask.add_argument(
        "--paste", metavar="FILE", help="cli_help_ask_paste", default=argparse.SUPPRESS
    )
    _common(ask, top=False)


def _run_options(run: argparse.ArgumentParser) -> None:
    run.add_argument("--report", metavar="FILE", help="cli_help_run_report")
    _common(run, top=False, json_help="cli_help_run_json")
    run.add_argument(
        "argv", nargs=argparse.REMAINDER, metavar="-- COMMAND ...", help="cli_help_run_argv"
    )


def _probe_options(probe: argparse.ArgumentParser, texts: Texts) -> None:
    probe.add_argument("target", help="cli_help_probe_target")
    probe.add_argument(
        "--steps", type=_positive_int(texts), default=3, metavar="N", help="cli_help_probe_steps"
    )
    probe.add_argument("--confirm-ddp", action="store_true", help="cli_help_confirm_ddp")
    _common(probe, top=False)


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse the command line; --help and usage errors speak the user's language."""
    argv = sys.argv[1:] if argv is None else list(argv)
    # a command line that starts with its command parses the same with that sub-parser alone
    only = argv[0] if argv and argv[0] in COMMANDS else None
    parser = build_parser(Texts(lang_from_argv(argv)), only)
    args, extras = parser.parse_known_args(argv)
    for name in ("save", "rules", "answers", "paste"):
        if getattr(args, name, None) == "":  # `--save ""`: a file name was meant, not none
            parser.error(parser.texts("cli_err_empty_name", option=f"--{name}"))
    if args.command is not None:
        # an interview option after the command lands in `extras`: the same explanation as
        # one before it (`triage FILE --save X` and `--save X triage FILE`)
        for name in SESSION_OPTIONS:
            if name == "paste" and args.command == "ask":
                continue
            if getattr(args, name) is not None or _names_option(extras, name):
                option = f"--{name}"
                parser.error(
                    parser.texts("cli_err_session_option", option=option, command=args.command)
                )
        if args.command == "ask":
            args.text = " ".join(args.text)
            if not args.text.strip():  # `ask ""`: nothing to read, not a reading of nothing
                parser.error(parser.texts("cli_err_ask_empty"))
    if extras:
        message = parser.texts.translate_argparse("unrecognized arguments: %s")
        parser.error(message % " ".join(extras))
    return args


def _names_option(extras: Sequence[str], name: str) -> bool:
    """One of the unparsed words is `--name`, `--name=X` or a prefix argparse would take."""
    for word in extras:
        if word == "--":
            return False
        given = word.partition("=")[0]
        if len(given) > 3 and f"--{name}".startswith(given):
            return True
    return False


# ---------------------------------------------------------------------------- helpers


def _lang(args: argparse.Namespace) -> str:
    from ..common.i18n import resolve_lang

    return resolve_lang(getattr(args, "lang", None))


def _wants_json(args: argparse.Namespace) -> bool:
    """`--json` or `--format json`, for commands with one plain-text layout besides JSON."""
    return bool(args.json) or args.format == "json"


def _format(args: argparse.Namespace, stream: IO[str]) -> str:
    if getattr(args, "json", False):
        return "json"
    fmt = getattr(args, "format", "auto")
    if fmt == "text":
        return "markdown"
    if fmt != "auto":
        return fmt
    plain = not stream.isatty() or "NO_COLOR" in os.environ or os.environ.get("TERM") == "dumb"
    return "markdown" if plain else "rich"


def _emit(kb, args, diagnosis, lang: str, fmt: str) -> None:
    """The report; the short terminal one ends with how to see it all (`--all`)."""
    from ..common.i18n import tr
    from ..output.render import emit

    full = bool(getattr(args, "all", False))
    emit(kb, diagnosis, lang, fmt, full=full, more=tr(kb, "more_how_all", lang))


def _no_error_found(kb, lang: str, fmt: str, result, raised: str | None = None) -> int:
    """`triage`'s answer to a text holding no known error; in JSON, `ask` adds the exception
    the text quotes instead (`raised`), as its markdown names it."""
    from ..common.i18n import tr
    from ..common.record import replace
    from ..output.render import build_report, to_json_data
    from ..reasoning.engine import diagnose

    if fmt == "json":
        from ..common.foreign import dumps

        # no error, nothing to rank: the priors alone are no diagnosis (issue 11), and no
        # answer to a question about an error nobody had leads to a fix
        empty = replace(
            diagnose(kb, result),
            causes=(),
            fixes=(),
            diagnostics=(),
            avoided=(),
            conditional=(),
            splitting_question=None,
        )
        data = to_json_data(build_report(kb, empty, lang))
        if raised is not None:
            data["raised"] = raised
        sys.stdout.write(dumps(data) + "\n")
    else:
        sys.stdout.write(tr(kb, "no_known_error", lang) + "\n")
        sys.stdout.write(tr(kb, "no_known_error_hint", lang) + "\n")
    return ExitCode.NO_ERROR_FOUND


def _another_error(kb, lang: str, fmt: str, result, raised: str) -> int:
    """A post quoting an error that is none of the known ones: said so, naming it, with what
    ddp-doctor does know; never diagnosed from what its prose and stack frames tell."""
    from ..common.i18n import tr
    from ..output.render import known_families, shown_raised

    if fmt == "json":
        return _no_error_found(kb, lang, fmt, result, raised)
    sys.stdout.write(tr(kb, "ask_another_error", lang, error=shown_raised(raised)) + "\n")
    families = known_families(kb, lang)
    sys.stdout.write(tr(kb, "session_covered", lang, families=families) + "\n")
    return ExitCode.NO_ERROR_FOUND


# ---------------------------------------------------------------------------- commands


def cmd_triage(kb, args, lang: str) -> int:
    from ..common.i18n import tr
    from ..reasoning.engine import diagnose

    paths = args.files or ["-"]
    if paths == ["-"] and sys.stdin.isatty():
        raise UserError(ExitCode.USAGE, "err_triage_needs_input")
    result = read_sources(kb, paths, lang, args.max_bytes)
    fmt = _format(args, sys.stdout)
    if not result.findings:
        return _no_error_found(kb, lang, fmt, result)
    _emit(kb, args, diagnose(kb, result), lang, fmt)
    if fmt != "json":
        sys.stdout.write("\n" + tr(kb, "next_step_interview", lang) + "\n")
    return ExitCode.OK


def cmd_ask(kb, args, lang: str) -> int:
    """A sentence: a question about a fix gets the answer, a description gets the diagnosis.

    The language follows `ask.choose_lang` (a Chinese sentence is answered in Chinese unless
    `--lang` says otherwise); `--json` always prints one JSON document, also when nothing was
    understood (`status: not_understood`, exit code 1) or the log it quotes holds no known
    error (`status: no_known_error`, exit code 1).
    """
    from ..talk import ask
    from ..talk import readers as reading

    lang = ask.choose_lang(getattr(args, "lang", None), args.text)
    fmt = _format(args, sys.stdout)
    result = read_sources(kb, [args.paste], lang, DEFAULT_MAX_BYTES) if args.paste else None
    # a post: its quoted log is read as a paste, its prose as the question (reading.py)
    post, asking = reading.read_post(kb, args.text)
    text = post.prose if post.log and post.prose else args.text
    # each read once: the log the post quotes, else the whole text (an error in its prose)
    in_log = whole = None
    if result is None:
        in_log = _triage(kb, post.log) if post.log else None
        if in_log and in_log.findings:
            result = in_log
        else:
            whole = _triage(kb, args.text)
            result = _crashes_in(kb, whole)
    found_error = bool(result and result.findings)
    if not found_error and post.log and not post.sentences:
        # a log alone, holding no error ddp-doctor knows: said as `triage` says it, never
        # diagnosed from the framework its stack frames name; named if it raised another one
        if raised := reading.raised_in(kb, post, args.text):
            return _another_error(kb, lang, fmt, result or in_log, raised)
        return _no_error_found(kb, lang, fmt, result or in_log)
    if not found_error and _answer_several(kb, post, asking, lang, fmt):
        return ExitCode.OK
    # a quoted error is diagnosed from what the prose tells, its questions about a fix answered
    # beside; else the post's question is read apart from the story around it (read_asked)
    answered: list = []
    offered: tuple = ()  # a statement naming a fix: that fix's readings, offered besides
    if found_error and post.sentences:
        answered, asked = reading.answers_beside_an_error(kb, post, lang)
        understood = reading.story_read(kb, post, answered, asked)
    elif found_error:  # the text is the log alone
        understood = reading.read_question(kb, text).understood
    else:
        got = reading.read_asked(kb, args.text, post, asking)
        understood = got.understood
        answer = ask.build_answer(kb, understood, lang)
        if answer is not None:
            _print_answer(kb, answer, got, lang, fmt)
            return ExitCode.OK
        if raised := reading.raised_in(kb, post, args.text):  # another one ("CUDA out of ...")
            return _another_error(kb, lang, fmt, result or in_log, raised)
        if not understood.facts and not understood.reports_error:
            _print_not_understood(kb, got, lang, fmt)
            return ExitCode.NO_ERROR_FOUND
        whole = whole or _triage(kb, args.text)
        result = whole if whole.findings else result  # a warning the description quotes
        offered = got.candidates
    return _diagnose_told(kb, args, understood, result, (answered, offered), lang, fmt)


def _diagnose_told(kb, args, understood, result, besides, lang: str, fmt: str) -> int:
    """`ask`'s diagnosis of what the text tells (and of the error it quotes or `--paste`s, which
    wins over the usual one), then `besides`: the questions answered beside that error, and the
    readings of a fix the text names that it may have been asking about."""
    answered, offered = besides
    from ..common.foreign import dumps
    from ..reasoning.engine import diagnose, next_question
    from ..reasoning.readings import advice_rests_on
    from ..talk import ask
    from ..talk import readers as reading

    facts = reading.facts_with_leans(kb, understood.facts, understood.text)
    told = result is not None and bool(result.findings)
    facts = reading.beside_an_error(told, facts)
    facts["family"] = reading.family_told(kb, result, facts)
    diagnosis = diagnose(kb, result, facts)
    modules = result.unused_modules if result else ()
    upcoming = next_question(kb, diagnosis.facts, [], modules, 0)
    rests_on = advice_rests_on(kb, result, facts, {}, understood.facts)
    if fmt == "json":
        from ..output.render import build_report, to_json_data

        data = to_json_data(build_report(kb, diagnosis, lang))
        data.update(kind="diagnosis", status="diagnosed")
        data["understood"] = ask.understood_json(understood)
        data["next_question"] = _question_json(upcoming, lang)
        data["rests_on"] = [_reading_json(q, o, lang) for q, o in rests_on]
        data["answers"] = reading.post_json(answered, lang, kb, ask.answer_json)["answers"]
        data["candidates"] = reading.candidates_json(kb, offered, lang)
        sys.stdout.write(dumps(data) + "\n")
        return ExitCode.OK
    block = _understood_block(kb, understood, upcoming, lang, rests_on)
    _print_text(kb, block, lang, fmt)
    _emit(kb, args, diagnosis, lang, fmt)
    if answered:
        _print_text(kb, _answers_markdown(kb, answered, lang, "post_also_asked"), lang, fmt)
    if offered:
        _print_text(kb, reading.offered_besides_markdown(kb, offered, lang), lang, fmt)
    return ExitCode.OK


def _print_answer(kb, answer, got, lang: str, fmt: str) -> None:
    """An answer, after the readings offered when the question was not clear ("did you mean";
    `candidates` in JSON, empty when it was clear)."""
    from ..common.foreign import dumps
    from ..talk import ask
    from ..talk import readers as reading

    if fmt == "json":
        data = ask.answer_json(answer, lang, got.understood)
        data["candidates"] = reading.candidates_json(kb, got.candidates, lang)
        sys.stdout.write(dumps(data) + "\n")
    else:
        choices = reading.choices_markdown(kb, got.candidates, lang)
        _print_text(kb, choices + ask.answer_markdown(kb, answer, lang), lang, fmt)


def _print_not_understood(kb, got, lang: str, fmt: str) -> None:
    from ..common.foreign import dumps
    from ..common.i18n import tr
    from ..talk import ask
    from ..talk import readers as reading

    if fmt == "json":
        data = ask.not_understood_json(kb, lang, got.understood)
        data["candidates"] = reading.candidates_json(kb, got.candidates, lang)
        sys.stdout.write(dumps(data) + "\n")
    else:
        offered = reading.choices_markdown(kb, got.candidates, lang, answered=False)
        hint = tr(kb, ask.nothing_understood_key(kb, got.understood), lang)
        sys.stdout.write(offered + hint + "\n")


def _answer_several(kb, post, asking, lang: str, fmt: str) -> bool:
    """A post that asks several questions gets an answer to each (reading.several_answers);
    False when it asks fewer than two that have answers."""
    from ..common.foreign import dumps
    from ..talk import ask
    from ..talk import readers as reading

    answers = reading.several_answers(kb, post, asking, lang)
    if not answers:
        return False
    if fmt == "json":
        data = reading.post_json(answers, lang, kb, ask.answer_json)
        sys.stdout.write(dumps(data) + "\n")
        return True
    _print_text(kb, _answers_markdown(kb, answers, lang, "post_question"), lang, fmt)
    return True


def _answers_markdown(kb, answers, lang: str, heading_key: str) -> str:
    """Each (question, Answer, Reread) under a heading that numbers and quotes its question."""
    from ..common.i18n import tr
    from ..talk import ask
    from ..talk import readers as reading

    parts = []
    for number, (question, answer, got) in enumerate(answers, 1):
        heading = tr(kb, heading_key, lang, number=number, question=question)
        choices = reading.choices_markdown(kb, got.candidates, lang)
        parts.append(f"# {heading}\n\n{choices}{ask.answer_markdown(kb, answer, lang)}")
    return "\n".join(parts)


def _triage(kb, text: str):
    from ..reading.triage import triage_text

    return triage_text(kb, text, "<ask>")


def _crashes_in(kb, found):
    """`found` (the triage of the whole text) when it holds a crash written into the prose
    itself, with no log line to split off ('the error happen: "RuntimeError: Expected to have
    finished reduction ..."', a Markdown-quoted "> Parameter indices which did not receive grad
    ..."): the error to diagnose, and the fix its own message names ("... passing the keyword
    argument find_unused_parameters=True") is no question the user asked. None when it holds
    no error, or only a warning: a question quoting a warning asks about what the warning says
    ("Is it safe to ignore it?")."""
    if any(kb.family(f.family).severity == "error" for f in found.findings):
        return found
    return None


def _understood_block(kb, understood, upcoming, lang: str, rests_on=()) -> str:
    """ "I read: ..." and the one question that matters next, so a wrong reading is visible;
    a reading the fix rests on is said again, in its question's words."""
    from ..common.i18n import tr
    from ..talk import ask

    lines = ask.understood_lines(kb, understood, lang)
    out = [tr(kb, "ask_understood", lang), *lines] if lines else []
    for line in _rests_on_lines(kb, rests_on, lang, "ask_rests_on"):
        out += ["", line]
    if upcoming is not None:
        text = upcoming.question.text.get(lang).replace("{module}", "…")
        out += ["", tr(kb, "ask_next_question", lang, question=text), tr(kb, "ask_next_how", lang)]
    return "\n".join(out) + ("\n\n" if out else "")


def _rests_on_lines(kb, rests_on, lang: str, key: str) -> list[str]:
    """Each reading the fix rests on, said with message `key` ({question}, {answer}, {id})."""
    from ..common.i18n import tr

    lines = []
    for question, option in rests_on:
        said = _reading_json(question, option, lang)
        lines.append(tr(kb, key, lang, question=said["text"], answer=said["label"], id=said["id"]))
    return lines


def _reading_json(question, option, lang: str) -> dict[str, str]:
    """A reading of the text as the answer to a question (`rests_on` in `ask --json`)."""
    return {
        "id": question.id,
        "text": question.text.get(lang),
        "answer": option.value,
        "label": option.label.get(lang),
    }


def _question_json(upcoming, lang: str):
    if upcoming is None:
        return None
    return {
        "id": upcoming.key,
        "text": upcoming.question.text.get(lang),
        "options": [{"value": o.value, "label": o.label.get(lang)} for o in upcoming.options],
    }


def _print_text(kb, text: str, lang: str, fmt: str) -> None:
    """Markdown as is, or styled for a terminal."""
    if fmt == "rich":
        from rich.console import Console

        from ..output.render import print_markdown, usable_width

        print_markdown(kb, text, lang, Console(highlight=False, width=usable_width()))
    else:
        sys.stdout.write(text)
    sys.stdout.flush()


def cmd_questions(kb, args, lang: str) -> int:
    from ..common.foreign import dumps

    rows = [
        {
            "id": q.id,
            "purpose": q.purpose,
            "fact": q.fact,
            "per_module": q.for_each is not None,
            "text": q.text.get(lang),
            "options": [{"value": o.value, "label": o.label.get(lang)} for o in q.options],
        }
        for q in kb.questions
    ]
    if _wants_json(args):
        sys.stdout.write(dumps(rows) + "\n")
        return ExitCode.OK
    for row in rows:
        sys.stdout.write(f"{row['id']}: {row['text']}\n")
        for option in row["options"]:
            sys.stdout.write(f"    {option['value']:<16} {option['label']}\n")
    return ExitCode.OK


def cmd_answers(kb, args, lang: str) -> int:
    from ..reasoning.engine import answers_win, diagnose
    from ..reasoning.readings import advice_rests_on
    from ..talk.answers import (
        apply_answers,
        facts_said,
        load_answers,
        modules_in_answers,
        split_said,
    )
    from ..talk.interview import Interview
    from ..talk.readers import beside_an_error

    said, answers, said_later = split_said(load_answers(args.answers))
    if args.save:  # before any work: a refused file is known now
        _check_save_target(args.save, [args.answers, args.paste])
    result = read_sources(kb, [args.paste], lang, DEFAULT_MAX_BYTES) if args.paste else None
    start = Interview.start(kb, result)
    if not start.found_error:  # the error the description quotes, taken as the session does
        start.take_quoted_error("\n".join(said))
        result = start.triage
    # nothing pasted: the modules the answers name (a session's answers without its paste)
    modules = start.modules if result is not None else modules_in_answers(kb, answers)
    # in the session's order: the description, the answers, then details typed afterwards
    read = facts_said(kb, {}, said, True)  # the description, read once
    read = beside_an_error(start.found_error, read)
    facts = apply_answers(kb, {**start.facts, **read}, answers, modules)
    facts = answers_win(kb, facts, read, answers)  # what was only read gives way, as in the session
    facts = facts_said(kb, facts, said_later)
    diagnosis = diagnose(kb, result, facts, answers)
    fmt = _format(args, sys.stdout)
    _emit_answered(
        kb, args, diagnosis, lang, fmt, advice_rests_on(kb, result, facts, answers, read)
    )
    if args.save:
        _save_markdown(kb, diagnosis, lang, args.save)
    return ExitCode.OK


def _emit_answered(kb, args, diagnosis, lang: str, fmt: str, rests_on) -> None:
    """The report of an answers file, after the readings of its `said:` text the fixes rest
    on (none is an answer the user gave); `rests_on` in JSON."""
    if fmt == "json":
        from ..common.foreign import dumps
        from ..output.render import build_report, to_json_data

        data = to_json_data(build_report(kb, diagnosis, lang))
        data["rests_on"] = [_reading_json(q, o, lang) for q, o in rests_on]
        sys.stdout.write(dumps(data) + "\n")
        return
    lines = _rests_on_lines(kb, rests_on, lang, "answers_rests_on")
    if lines:
        _print_text(kb, "\n\n".join(lines) + "\n\n", lang, fmt)
    _emit(kb, args, diagnosis, lang, fmt)


def _check_save_target(path: str, inputs) -> None:
    """`--save` without a terminal cannot ask: an input or an existing file is refused."""
    from ..output.saving import check_plan, plan_save

    check = check_plan(plan_save(path, ""), inputs)
    if check.refused:
        raise UserError(ExitCode.INPUT, "err_save_over_input", path=path)
    if check.existing:
        raise UserError(ExitCode.INPUT, "err_save_exists", path=path)


def _save_markdown(kb, diagnosis, lang: str, path: str) -> None:
    """Atomically, and never over a file that appeared since the check."""
    from ..output.render import build_report, to_markdown
    from ..output.saving import plan_save, write_plan

    plan = plan_save(path, to_markdown(kb, build_report(kb, diagnosis, lang)))
    result = write_plan(plan, overwrite=False)
    if isinstance(result.error, FileExistsError):
        raise UserError(ExitCode.INPUT, "err_save_exists", path=path)
    if result.error is not None:
        reason = result.error.strerror or str(result.error)
        raise UserError(ExitCode.INPUT, "err_cannot_write", path=path, reason=reason)


def cmd_session(kb, args, lang: str) -> int:
    if not sys.stdin.isatty() or not sys.stdout.isatty():
        raise UserError(ExitCode.NEEDS_TTY, "err_needs_tty")
    from ..talk.session import run_session

    return run_session(kb, lang, paste_path=args.paste, save_path=args.save)


def cmd_run(kb, args, lang: str) -> int:
    from ..run.wrapper import run_command

    argv = list(args.argv)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        raise UserError(ExitCode.USAGE, "err_run_needs_command")
    return run_command(kb, argv, lang, fmt=_format(args, sys.stderr), report_path=args.report)


def cmd_probe(kb, args, lang: str) -> int:
    from ..probe import run_probe_command

    return run_probe_command(
        args.target,
        args.steps,
        lang,
        _wants_json(args),
        kb,
        confirm_with_ddp=args.confirm_ddp,
        fmt=_format(args, sys.stdout),
    )


COMMANDS = {
    "triage": cmd_triage,
    "ask": cmd_ask,
    "questions": cmd_questions,
    "run": cmd_run,
    "probe": cmd_probe,
}


# commands that may run for hours (a training job, the model's steps, a person answering):
# they keep the cyclic garbage collector
LONG_RUNNING = (cmd_session, cmd_run, cmd_probe)


# ---------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; closed, full or abandoned standard streams never give a traceback."""
    from ..common.streams import guarded

    with guarded() as guard:
        try:
            code = _main(argv)
        except SystemExit as exc:  # argparse: --help, --version, usage errors
            code = exc.code if isinstance(exc.code, int) else int(ExitCode.USAGE)
            message = getattr(exc, "usage_message", None)
            if message is not None and _json_wanted(argv):
                from ..output.errordoc import write_error_document

                write_error_document(code, "usage", message)
        code = guard.finish(code, lambda reason: _say_output_failed(argv, reason))
    if argv is None:  # run as the program, not called from Python: the process ends now
        # The interpreter's last garbage collection would walk every object the run made
        # (rules, rankings, the report) only to find what exit frees anyway: about 12 ms
        # of an 80 ms `triage --json`. Frozen objects are left out of it.
        import gc

        gc.freeze()
    return code


def _say_output_failed(argv: Sequence[str] | None, reason: str) -> None:
    from ..common.i18n import tr
    from ..knowledge.kb import load

    lang = lang_from_argv(sys.argv[1:] if argv is None else argv)
    try:
        text = tr(load(), "err_cannot_write_output", lang, reason=reason)
    except Exception:  # broken rules: the English text still says what happened
        text = f"cannot write the output: {reason}"
    sys.stderr.write(f"ddp-doctor: {text}\n")


def _json_wanted(argv: Sequence[str] | None) -> bool:
    from ..output.errordoc import json_in_argv

    return json_in_argv(sys.argv[1:] if argv is None else argv)


def _main(argv: Sequence[str] | None) -> int:
    args = parse(argv)  # before importing the rest: `--help` needs none of it
    from ..knowledge.kb import RulesError, load

    lang = _lang(args)
    kb = None
    wants_json = _wants_json(args)
    try:
        kb = load(getattr(args, "rules", None))
        if args.command is None:
            handler = cmd_answers if args.answers else cmd_session
        else:
            handler = COMMANDS[args.command]
        if handler in LONG_RUNNING and argv is None:
            import gc

            gc.enable()  # the program turned it off for a short report (cli.run)
        return int(handler(kb, args, lang))
    except UserError as err:
        text = _print_user_error(kb, err, lang)
        if wants_json:
            from ..output.errordoc import write_error_document

            write_error_document(err.code, err.key, text)
        return int(err.code)
    except RulesError as err:
        from ..common.foreign import shown

        prefix = "规则文件有误" if lang == "zh" else "broken rules file"  # kb may not load
        text = shown(str(err))  # it quotes the rules file's path and text
        sys.stderr.write(f"ddp-doctor: {prefix}: {text}\n")
        if wants_json:
            from ..output.errordoc import write_error_document

            write_error_document(ExitCode.RULES, "rules", f"{prefix}: {text}")
        return int(ExitCode.RULES)
    except KeyboardInterrupt:
        sys.stderr.write("\n")
        return int(ExitCode.INTERRUPTED)


def _print_user_error(kb, err: UserError, lang: str) -> str:
    from ..common.foreign import shown_fields
    from ..common.i18n import tr

    # the fields hold what the user typed or a file held (names, answers): escapes only
    text = tr(kb, err.key, lang, **shown_fields(err.fields)) if kb is not None else err.key
    sys.stderr.write(f"ddp-doctor: {text}\n")
    return text


if __name__ == "__main__":
    raise SystemExit(main())
