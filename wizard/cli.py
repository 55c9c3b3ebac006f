"""Command line: argument parsing, sub-commands, exit codes.

Exit codes (documented in README):
  0   a known DDP problem was diagnosed (or the interview finished)
  1   the text holds no DDP error ddp-doctor knows
  2   usage error
  3   input problem: missing, unreadable, empty or binary input
  4   a rules file is broken
  5   the interview needs a terminal (use `triage` or `--answers`)
  130 interrupted (Ctrl-C)
`run` exits with the exit code of the job it wrapped.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
import time
from collections.abc import Sequence
from typing import IO, Any

from . import __version__

EXIT_OK = 0
EXIT_NO_ERROR_FOUND = 1
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_RULES = 4
EXIT_NEEDS_TTY = 5
EXIT_INTERRUPTED = 130

DEFAULT_MAX_BYTES = 4 << 30
FORMATS = ("auto", "rich", "markdown", "text", "json")


class UserError(Exception):
    """A problem the user can fix; printed as one translated line, no traceback."""

    def __init__(self, code: int, key: str, **fields: Any):
        super().__init__(key)
        self.code, self.key, self.fields = code, key, fields


# ---------------------------------------------------------------------------- parsing


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lang", choices=("en", "zh"), help="language (default: from locale)")
    parser.add_argument("--rules", metavar="DIR", help="extra rules directory")


def _output(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--format", choices=FORMATS, default="auto", help="output format")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ddp-doctor",
        description="Diagnose PyTorch DDP unused-parameter errors and print fixes that work.",
        epilog="Run without a command for the interactive interview. "
        "Exit codes: 0 diagnosed, 1 no known error, 2 usage, 3 input, 4 rules, "
        "5 needs a terminal, 130 interrupted.",
    )
    parser.add_argument("--version", action="version", version=f"ddp-doctor {__version__}")
    _common(parser)
    _output(parser)
    parser.add_argument(
        "--answers", metavar="FILE", help="answers (YAML/JSON id: value); no prompts"
    )
    parser.add_argument("--paste", metavar="FILE", help="error text to start from ('-' = stdin)")
    parser.add_argument("--save", metavar="FILE", help="also write the report as markdown")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    triage = sub.add_parser("triage", help="diagnose an error text or whole logs, no questions")
    triage.add_argument("files", nargs="*", metavar="FILE", help="files, or - for stdin")
    triage.add_argument(
        "--max-bytes",
        type=int,
        default=DEFAULT_MAX_BYTES,
        metavar="N",
        help="stop reading each input after N bytes (default 4 GiB)",
    )
    _common(triage)
    _output(triage)

    ask = sub.add_parser("ask", help="describe the problem in a sentence; get the diagnosis")
    ask.add_argument("text", help="what happens, in your words (English or Chinese)")
    ask.add_argument("--paste", metavar="FILE", help="the error text too ('-' = stdin)")
    _common(ask)
    _output(ask)

    questions = sub.add_parser("questions", help="list the interview's questions and answers")
    _common(questions)
    questions.add_argument("--json", action="store_true", help="print JSON")

    run = sub.add_parser("run", help="run your launcher and diagnose it if it dies of DDP")
    run.add_argument("--report", metavar="FILE", help="also write the diagnosis as JSON")
    _common(run)
    _output(run)
    run.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- COMMAND ...")

    probe = sub.add_parser("probe", help="find unused parameters on one process (needs torch)")
    probe.add_argument("target", help="module.path:factory, factory() -> (model, step)")
    probe.add_argument("--steps", type=int, default=3)
    probe.add_argument(
        "--confirm-ddp",
        action="store_true",
        help="also run the step under single-process DDP and quote PyTorch",
    )
    _common(probe)
    probe.add_argument("--json", action="store_true", help="print JSON")
    return parser


# ---------------------------------------------------------------------------- helpers


def _lang(args: argparse.Namespace) -> str:
    from .i18n import resolve_lang

    return resolve_lang(getattr(args, "lang", None))


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


def _open_input(path: str) -> IO[bytes]:
    """Open a file, a FIFO or stdin for reading bytes, or raise a UserError."""
    if path == "-":
        return sys.stdin.buffer
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise UserError(EXIT_INPUT, "err_no_such_file", path=path) from None
    except OSError as exc:
        raise UserError(EXIT_INPUT, "err_unreadable", path=path, reason=exc.strerror) from None
    if stat.S_ISDIR(info.st_mode):
        raise UserError(EXIT_INPUT, "err_is_directory", path=path)
    try:
        if stat.S_ISFIFO(info.st_mode):
            # opening a FIFO blocks until a writer appears; open it non-blocking, then read
            # normally: with no writer the read ends at once instead of hanging
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            os.set_blocking(fd, True)
            return os.fdopen(fd, "rb")
        return open(path, "rb")  # noqa: SIM115 - closed by the caller
    except OSError as exc:
        raise UserError(EXIT_INPUT, "err_unreadable", path=path, reason=exc.strerror) from None


class _Progress:
    """A progress line on stderr, only for a terminal and only once a scan takes > 1 s."""

    def __init__(self, total: int | None, label: str):
        self.total, self.label = total, label
        self.start = time.monotonic()
        self.shown = False
        self.enabled = sys.stderr.isatty()

    def __call__(self, done: int) -> None:
        if not self.enabled or time.monotonic() - self.start < 1.0:
            return
        self.shown = True
        mb = done / (1 << 20)
        if self.total:
            width = 24
            filled = int(width * min(1.0, done / self.total))
            bar = "█" * filled + "·" * (width - filled)
            sys.stderr.write(f"\r{self.label} {bar} {mb:,.0f}/{self.total / (1 << 20):,.0f} MB")
        else:
            sys.stderr.write(f"\r{self.label} {mb:,.0f} MB")
        sys.stderr.flush()

    def clear(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()


def read_sources(kb, paths: Sequence[str], lang: str, max_bytes: int | None):
    """Scan every input; returns the TriageResult. Raises UserError for bad inputs."""
    from .i18n import tr
    from .triage import scan_stream, summarise

    scanners = []
    for path in paths:
        stream = _open_input(path)
        source = "<stdin>" if path == "-" else path
        total = None
        if path != "-":
            try:
                total = os.fstat(stream.fileno()).st_size or None
            except (OSError, ValueError):
                total = None
        progress = _Progress(total, tr(kb, "progress_scanning", lang))
        try:
            scanner = scan_stream(kb, stream, source, max_bytes, progress)
        except OSError as exc:
            raise UserError(EXIT_INPUT, "err_unreadable", path=path, reason=exc.strerror) from None
        finally:
            progress.clear()
            if stream is not sys.stdin.buffer:
                stream.close()
        if not scanner.nonblank:
            raise UserError(EXIT_INPUT, "err_empty", path=source)
        if scanner.hit_byte_limit:
            _warn(tr(kb, "warn_byte_limit", lang, path=source, limit=max_bytes))
        scanners.append(scanner)
    result = summarise(kb, scanners)
    if result.looks_binary:
        raise UserError(EXIT_INPUT, "err_binary", path=", ".join(result.sources))
    return result


def _warn(text: str) -> None:
    sys.stderr.write(text + "\n")


def emit(kb, diagnosis, lang: str, fmt: str, stream: IO[str] | None = None) -> None:
    """Print the report in the chosen format."""
    from .render import build_report, to_json, to_markdown

    stream = stream or sys.stdout
    report = build_report(kb, diagnosis, lang)
    if fmt == "json":
        stream.write(to_json(report) + "\n")
    elif fmt == "markdown":
        stream.write(to_markdown(kb, report))
    else:
        from rich.console import Console

        from .render import print_rich

        print_rich(kb, report, Console(file=stream, highlight=False))
    stream.flush()


def _no_error_found(kb, lang: str, fmt: str, result) -> int:
    from .engine import diagnose
    from .i18n import tr

    if fmt == "json":
        emit(kb, diagnose(kb, result), lang, fmt)
    else:
        sys.stdout.write(tr(kb, "no_known_error", lang) + "\n")
        sys.stdout.write(tr(kb, "no_known_error_hint", lang) + "\n")
    return EXIT_NO_ERROR_FOUND


# ---------------------------------------------------------------------------- commands


def cmd_triage(kb, args, lang: str) -> int:
    from .engine import diagnose
    from .i18n import tr

    paths = args.files or ["-"]
    if paths == ["-"] and sys.stdin.isatty():
        raise UserError(EXIT_USAGE, "err_triage_needs_input")
    result = read_sources(kb, paths, lang, args.max_bytes)
    fmt = _format(args, sys.stdout)
    if not result.findings:
        return _no_error_found(kb, lang, fmt, result)
    emit(kb, diagnose(kb, result), lang, fmt)
    if fmt != "json":
        sys.stdout.write("\n" + tr(kb, "next_step_interview", lang) + "\n")
    return EXIT_OK


def cmd_ask(kb, args, lang: str) -> int:
    from .engine import diagnose, facts_from_text

    result = read_sources(kb, [args.paste], lang, DEFAULT_MAX_BYTES) if args.paste else None
    facts = facts_from_text(kb, args.text)
    if not facts and not (result and result.findings):
        from .i18n import tr

        sys.stdout.write(tr(kb, "ask_nothing_understood", lang) + "\n")
        return EXIT_NO_ERROR_FOUND
    facts.setdefault("family", "unfinished_reduction")  # the error this tool is about
    diagnosis = diagnose(kb, result, facts)
    emit(kb, diagnosis, lang, _format(args, sys.stdout))
    return EXIT_OK


def cmd_questions(kb, args, lang: str) -> int:
    import json

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
    if args.json:
        sys.stdout.write(json.dumps(rows, ensure_ascii=False, indent=2) + "\n")
        return EXIT_OK
    for row in rows:
        sys.stdout.write(f"{row['id']}: {row['text']}\n")
        for option in row["options"]:
            sys.stdout.write(f"    {option['value']:<16} {option['label']}\n")
    return EXIT_OK


def _load_answers(path: str) -> dict[str, str]:
    import yaml

    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except FileNotFoundError:
        raise UserError(EXIT_INPUT, "err_no_such_file", path=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(EXIT_INPUT, "err_unreadable", path=path, reason=str(exc)) from None
    except yaml.YAMLError:
        raise UserError(EXIT_INPUT, "err_answers_format", path=path) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UserError(EXIT_INPUT, "err_answers_format", path=path)
    return {str(k): _answer_value(v) for k, v in data.items()}


def _answer_value(value: Any) -> str:
    if isinstance(value, bool):  # YAML reads a bare yes/no as a boolean
        return "yes" if value else "no"
    return str(value)


def cmd_answers(kb, args, lang: str) -> int:
    from .engine import diagnose, resolve_answers

    answers = _load_answers(args.answers)
    result = read_sources(kb, [args.paste], lang, DEFAULT_MAX_BYTES) if args.paste else None
    facts = dict(result.facts) if result and result.findings else {"family": "unfinished_reduction"}
    modules = result.unused_modules if result else ()
    facts, problems = resolve_answers(kb, facts, answers, modules)
    if problems:
        raise UserError(EXIT_USAGE, "err_answers_unknown", items=", ".join(problems))
    diagnosis = diagnose(kb, result, facts, answers)
    fmt = _format(args, sys.stdout)
    emit(kb, diagnosis, lang, fmt)
    if args.save:
        _save_markdown(kb, diagnosis, lang, args.save)
    return EXIT_OK


def _save_markdown(kb, diagnosis, lang: str, path: str) -> None:
    from .render import build_report, to_markdown

    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(to_markdown(kb, build_report(kb, diagnosis, lang)))
    except OSError as exc:
        raise UserError(EXIT_INPUT, "err_cannot_write", path=path, reason=exc.strerror) from None


def cmd_session(kb, args, lang: str) -> int:
    if not sys.stdin.isatty() or not sys.stdout.isatty():
        raise UserError(EXIT_NEEDS_TTY, "err_needs_tty")
    from .session import run_session

    return run_session(kb, lang, paste_path=args.paste, save_path=args.save)


def cmd_run(kb, args, lang: str) -> int:
    from .run import run_command

    argv = list(args.argv)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        raise UserError(EXIT_USAGE, "err_run_needs_command")
    return run_command(kb, argv, lang, fmt=_format(args, sys.stderr), report_path=args.report)


def cmd_probe(kb, args, lang: str) -> int:
    from .probe import run_probe_command

    return run_probe_command(
        args.target, args.steps, lang, args.json, kb, confirm_with_ddp=args.confirm_ddp
    )


COMMANDS = {
    "triage": cmd_triage,
    "ask": cmd_ask,
    "questions": cmd_questions,
    "run": cmd_run,
    "probe": cmd_probe,
}


# ---------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # before importing the rest: `--help` needs none of it
    from .kb import RulesError, load

    lang = _lang(args)
    kb = None
    try:
        kb = load(getattr(args, "rules", None))
        if args.command is None:
            handler = cmd_answers if args.answers else cmd_session
        else:
            handler = COMMANDS[args.command]
        return handler(kb, args, lang)
    except UserError as err:
        _print_user_error(kb, err, lang)
        return err.code
    except RulesError as err:
        prefix = "规则文件有误" if lang == "zh" else "broken rules file"  # kb may not load
        sys.stderr.write(f"ddp-doctor: {prefix}: {err}\n")
        return EXIT_RULES
    except KeyboardInterrupt:
        sys.stderr.write("\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # `ddp-doctor triage log | head`: the reader left; say nothing more, and keep
        # Python's own flush at exit from failing on the closed pipe
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


def _print_user_error(kb, err: UserError, lang: str) -> None:
    from .i18n import tr

    text = tr(kb, err.key, lang, **err.fields) if kb is not None else err.key
    sys.stderr.write(f"ddp-doctor: {text}\n")


if __name__ == "__main__":
    raise SystemExit(main())
