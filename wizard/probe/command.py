"""`ddp-doctor probe TARGET`: import the user's factory, probe, print, choose the exit code."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import re
import sys
from pathlib import Path
from typing import Callable

from ..common.errors import ExitCode
from ..common.foreign import dumps, shown_fields
from ..output.errordoc import write_error_document
from .core import ProbeError, find_unused_parameters, kind_of, one_line

# ---------------------------------------------------------------------------- CLI entry


class _TargetError(Exception):
    def __init__(self, key: str, **fields: object):
        self.key, self.fields = key, fields
        super().__init__(key)


def run_probe_command(
    target: str,
    steps: int,
    lang: str,
    as_json: bool,
    kb,
    *,
    confirm_with_ddp: bool = False,
    fmt: str | None = None,
) -> int:
    """`ddp-doctor probe module.path:factory`: import, probe, print; return the exit code.

    `factory()` returns `(model, step)`; `step(model)` runs one forward and returns the
    loss(es). `fmt`: rich, markdown or json (default: json if `as_json`, else rich). Exit
    codes (README): 0 nothing wrong, 1 parameters DDP would complain about, 3 the target
    cannot be probed (import or factory fails, torch missing, the step fails or exits).
    Failures print one translated line on stderr, never a traceback.
    """
    from ..common.i18n import resolve_lang, tr

    lang = resolve_lang(lang)

    fmt = fmt or ("json" if as_json else "rich")

    def fail(key: str, **fields: object) -> int:
        text = tr(kb, key, lang, **shown_fields(fields))
        print(text, file=sys.stderr)
        if fmt == "json":  # a script still reads one JSON document on stdout
            write_error_document(ExitCode.CANNOT_PROBE, key, text)
        return ExitCode.CANNOT_PROBE

    try:
        import torch
    except ImportError:
        return fail("probe_cli_no_torch", python=sys.executable)
    # The target's own output (prints at import, in the factory, in the step) goes to stderr:
    # stdout holds the report alone, so `probe --json` is one JSON document
    with _output_to_stderr():
        outcome = _probe(target, steps, confirm_with_ddp, torch)
    if isinstance(outcome, _TargetError):
        return fail(outcome.key, **outcome.fields)
    _print_report(outcome, lang, kb, fmt)
    return ExitCode.OK if outcome.ok else ExitCode.PROBLEMS_FOUND


def _probe(target: str, steps: int, confirm_with_ddp: bool, torch):
    """Import the target, make the model and step, probe: the report, or what went wrong."""
    try:
        factory, factory_name = _load_factory(target)
    except _TargetError as exc:
        return exc
    try:
        made = factory()
    except (Exception, SystemExit) as exc:
        return _TargetError("probe_cli_factory_failed", factory=factory_name, error=one_line(exc))
    if not (
        isinstance(made, (tuple, list))
        and len(made) == 2
        and isinstance(made[0], torch.nn.Module)
        and callable(made[1])
    ):
        return _TargetError(
            "probe_cli_bad_factory_result", factory=factory_name, kind=kind_of(made)
        )
    model, step = made
    try:
        return find_unused_parameters(model, step, steps=steps, confirm_with_ddp=confirm_with_ddp)
    except ProbeError as exc:
        return _TargetError(exc.key, **exc.fields)


@contextlib.contextmanager
def _output_to_stderr():
    """Descriptor 1 and `sys.stdout` point at stderr for the duration: Python's `print` and
    C code writing to fd 1 alike. Restored, and flushed in order, afterwards."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _print_report(report, lang: str, kb, fmt: str) -> None:
    if fmt == "json":
        sys.stdout.write(dumps(report.to_dict()) + "\n")
    elif fmt == "markdown":
        from .report import to_markdown

        sys.stdout.write(to_markdown(report, lang, kb))
    else:
        from rich.console import Console

        from ..output.render import usable_width

        console = Console(file=sys.stdout, highlight=False, width=usable_width())
        console.print(report.renderable(lang, kb))
    sys.stdout.flush()


def _load_factory(target: str) -> tuple[Callable, str]:
    location, _, factory_name = target.rpartition(":")
    if not location or not factory_name.isidentifier():
        raise _TargetError("probe_cli_bad_target", target=target)
    cwd = os.getcwd()
    if cwd not in sys.path:  # `ddp-doctor probe mypkg.models:make` from the project root
        sys.path.insert(0, cwd)
    try:
        if location.endswith(".py") or "/" in location or os.sep in location:
            module = _import_file(Path(location))
        else:
            module = importlib.import_module(location)
    except _TargetError:
        raise
    except (Exception, SystemExit) as exc:  # SyntaxError, ImportError, a script's argparse...
        raise _TargetError(
            "probe_cli_import_failed", module=location, error=one_line(exc)
        ) from None
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise _TargetError("probe_cli_no_factory", module=location, factory=factory_name)
    return factory, factory_name


def _import_file(path: Path):
    path = path.expanduser().resolve()
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    # The file's own directory too, so `import sibling` inside it works as in `python file.py`.
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    name = "_ddp_doctor_probe_target_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"not a Python file: {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module
