"""`ddp-doctor run -- COMMAND ...`: run the user's own launcher and diagnose it if it dies.

The command (torchrun, `python -m torch.distributed.run`, `python train.py`, srun,
accelerate launch, anything) runs as a child in a session and process group of its own, so
the wrapper decides what reaches the job: Ctrl-C in the terminal lands on the wrapper alone,
which passes it on to the whole group (launcher and workers), keeps reading the job's
output while it shuts down, and stops it harder only if it will not stop.

Output: the child's stdout and stderr are pipes, read raw with `os.read` and written to our
own stdout and stderr as they come, byte for byte (colours, `\\r` progress bars, lines
without a newline, bytes that are not UTF-8). The child's stdout is a pipe even when ours is
a terminal, so a program that colours only terminals prints plain text under the wrapper
(most take `FORCE_COLOR` / `--color`); stdin is inherited untouched, so `pdb` works.
A streaming `Scanner` per stream watches the same bytes; memory stays bounded by the
scanner's windows plus one scan batch, whatever the length of the log.

When the job ends: exit code 0 -> nothing extra (a one-line tip, the family's `tip` in
signatures.yaml, if DDP warned for example that
`find_unused_parameters=True` found nothing); non-zero with a known DDP error -> the
diagnosis on stderr after the job's output; non-zero otherwise -> one line saying so. The
wrapper exits with the job's exit code, a job killed by signal N giving 128+N as in a shell.
"""

from __future__ import annotations

import contextlib
import os
import select
import selectors
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..common.atomic import same_file, special_file, write_atomic
from ..common.errors import ExitCode
from ..common.foreign import dumps, shown
from ..common.i18n import tr
from ..reading.triage import Scanner, TriageResult, summarise
from .jobsignals import SignalForwarder, Watchdog

DEBUG_ENV = "TORCH_DISTRIBUTED_DEBUG"
# Measured on torch 2.13 CPU with a real 2-process gloo job that skips a module
# (tests/ddp/run_scenario.py --scenario unused_module):
#   unset or OFF -> only "Parameter indices which did not receive grad for rank 0: 4 5"
#   INFO         -> also "Parameters which did not receive grad for rank 1: unused.bias,
#                   unused.weight": the names, which is all the diagnosis needs
#   DETAIL       -> the job died of SIGSEGV in a worker before the first step
# INFO is the lowest level that names the parameters, so that is what the wrapper sets.
# It never sets DETAIL: the wrapper must never be the reason a job dies.
DEBUG_LEVEL = "INFO"

READ_SIZE = 64 << 10  # a Linux pipe holds 64 KiB, so one read usually empties it
# The scanner copies its 48 KiB look-behind on every feed; feeding each small read (a
# progress bar update is ~100 bytes) would make scanning quadratic-ish, so output is
# scanned in batches. Pass-through never waits for a batch.
SCAN_BATCH = 1 << 20
POLL_SECONDS = 0.25  # how often the loop checks whether the child exited / a grace ran out
DRAIN_SECONDS = 2.0  # after the child exits, how long its own children may hold the pipes


STDOUT_SOURCE = "stdout"
STDERR_SOURCE = "stderr"
MERGED_SOURCE = "output"  # stdout and stderr go to one file, through one pipe
WARNING_SEVERITY = "warning"


# ---------------------------------------------------------------------------- environment


@dataclass(frozen=True)
class ChildEnvironment:
    variables: Mapping[str, str]
    kept_debug_level: str | None  # the user's own TORCH_DISTRIBUTED_DEBUG, left as it was


def child_environment(parent: Mapping[str, str]) -> ChildEnvironment:
    """The job's environment: the user's, plus INFO debugging and unbuffered Python output."""
    variables = dict(parent)
    # Python block-buffers stdout into a pipe: without this a Python job's output would
    # arrive in 8 KiB lumps, and be lost if it is killed. The user's own choice wins.
    variables.setdefault("PYTHONUNBUFFERED", "1")
    kept = variables.get(DEBUG_ENV, "").strip()
    if kept:
        return ChildEnvironment(variables, kept)
    # an empty value is what `export TORCH_DISTRIBUTED_DEBUG=` leaves behind: not a choice
    variables[DEBUG_ENV] = DEBUG_LEVEL
    return ChildEnvironment(variables, None)


def _debug_note(kb, lang: str, value: str) -> str:
    level = value.upper()
    value = shown(value)  # the environment's text, echoed
    if level == "DETAIL":
        return tr(kb, "run_debug_kept_detail", lang, value=value)
    if level == "OFF":
        return tr(kb, "run_debug_kept_off", lang, value=value)
    return tr(kb, "run_debug_kept", lang, value=value)


# ---------------------------------------------------------------------------- output


class _OutputStream:
    """One of the child's pipes: forwarded to one of our file descriptors, and scanned."""

    def __init__(self, pipe, target_fd: int, scanner: Scanner):
        self.pipe = pipe
        self.read_fd = pipe.fileno()
        self.target_fd = target_fd
        self.scanner = scanner
        self.pending = bytearray()
        self.forwarding = True
        self.reader_left = False  # our own reader closed the pipe (`| head`)
        self.failure: OSError | None = None  # a write that failed (a full disk): output lost
        self.lost = 0  # bytes of the job's output not passed on after that failure
        self.last_byte = b"\n"  # nothing written yet counts as "at the start of a line"
        self.last_write = 0  # ordinal of the last write, to tell which stream wrote last

    def read(self, ordinal: int) -> bool:
        """Forward and scan what the pipe holds; False at end of file (or a closed reader)."""
        chunk = os.read(self.read_fd, READ_SIZE)
        if not chunk:
            return False
        self.pending += chunk
        if len(self.pending) >= SCAN_BATCH:
            self.scan_pending()
        if self.forwarding:
            return self._forward(chunk, ordinal)
        if self.failure is not None:
            self.lost += len(chunk)
        return True

    def _forward(self, chunk: bytes, ordinal: int) -> bool:
        view = memoryview(chunk)
        while view:
            try:
                written = os.write(self.target_fd, view)
            except BlockingIOError:  # a parent left our stdout non-blocking: wait for room
                select.select([], [self.target_fd], [])
                continue
            except BrokenPipeError:
                # `ddp-doctor run -- job | head`: the reader left. Close our end too, so the
                # job meets the broken pipe exactly as it would without the wrapper.
                self.forwarding = False
                self.reader_left = True
                return False
            except OSError as exc:
                # a full disk, the terminal gone: keep reading so the job never blocks on a
                # full pipe, and keep scanning; the failure is reported when the job ends
                self.forwarding = False
                self.failure = exc
                self.lost += len(view)
                return True
            view = view[written:]
        self.last_byte = chunk[-1:]
        self.last_write = ordinal
        return True

    def scan_pending(self) -> None:
        if self.pending:
            self.scanner.feed(bytes(self.pending))
            self.pending.clear()

    def close(self) -> None:
        if not self.pipe.closed:
            self.scan_pending()
            self.pipe.close()


# ---------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class RunOutcome:
    exit_code: int  # what the wrapper exits with
    job_exit_code: int  # what the job ended with, 128+N for a signal
    interrupted_by: int | None  # the signal the wrapper received and passed on, if any
    result: TriageResult
    ended_mid_line: bool  # the job's last output did not end a line
    reader_left: bool  # whoever read our output stopped reading: nobody wants more
    debug_level: str | None = None  # TORCH_DISTRIBUTED_DEBUG as the job ran with it
    output_failure: OSError | None = None  # passing the job's output on failed (ENOSPC...)
    output_lost: int = 0  # bytes of it that were lost


def exit_code_of(returncode: int) -> int:
    """Popen's returncode -> a shell's `$?`: killed by signal N gives 128+N."""
    return 128 - returncode if returncode < 0 else returncode


def _same_destination() -> bool:
    """Our stdout and stderr are one file (`2>&1`, one terminal, one log file)."""
    try:
        return os.path.samestat(os.fstat(sys.stdout.fileno()), os.fstat(sys.stderr.fileno()))
    except (OSError, ValueError, AttributeError):
        return False


def _start(argv: Sequence[str], env: Mapping[str, str], merged: bool) -> subprocess.Popen:
    # merged: both of the job's streams share one pipe, so its interleaving reaches the
    # common file in the order the job wrote it (two pipes read in turns reorder lines)
    return subprocess.Popen(
        list(argv),
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merged else subprocess.PIPE,
        bufsize=0,
        # setsid: a group of its own for forwarding, and no controlling terminal, so
        # Ctrl-C reaches only the wrapper. Not setpgid: in a background group of our
        # terminal, a job reading stdin would be stopped by SIGTTIN.
        start_new_session=True,
    )


def _pump(child: subprocess.Popen, streams: list[_OutputStream], forwarder) -> None:
    """Forward output until the job has exited and its pipes are closed (or drained)."""
    selector = selectors.DefaultSelector()
    for stream in streams:
        selector.register(stream.read_fd, selectors.EVENT_READ, stream)
    ordinal = 0
    exited_at: float | None = None
    try:
        while True:
            if selector.get_map():
                for key, _ in selector.select(POLL_SECONDS):
                    ordinal += 1
                    if not key.data.read(ordinal):
                        # close at once: a job writing into a pipe nobody reads would block
                        selector.unregister(key.fd)
                        key.data.close()
            else:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.wait(POLL_SECONDS)
            forwarder.tick()
            if child.poll() is not None:
                exited_at = exited_at or time.monotonic()
                # a daemon the job left behind may hold the pipes open for ever
                if not selector.get_map() or time.monotonic() - exited_at > DRAIN_SECONDS:
                    break
    finally:
        selector.close()
        for stream in streams:
            stream.close()


def _output_streams(
    kb, child: subprocess.Popen, merged: bool, stdout_to_stderr: bool = False
) -> list[_OutputStream]:
    # under --json our stdout holds the JSON document alone: the job's stdout goes to stderr
    out_fd = sys.stderr.fileno() if stdout_to_stderr else sys.stdout.fileno()
    if merged:
        return [_OutputStream(child.stdout, out_fd, Scanner(kb, MERGED_SOURCE))]
    return [
        _OutputStream(child.stdout, out_fd, Scanner(kb, STDOUT_SOURCE)),
        _OutputStream(child.stderr, sys.stderr.fileno(), Scanner(kb, STDERR_SOURCE)),
    ]


def run_job(kb, argv: Sequence[str], lang: str, json_mode: bool = False) -> RunOutcome | int:
    """Run the job with output passed through; the outcome, or 126/127 if it cannot start.

    `json_mode`: the job's stdout goes to our stderr, and a start failure also prints its
    JSON error document on stdout."""
    environment = child_environment(os.environ)
    if environment.kept_debug_level is not None:
        _say(_debug_note(kb, lang, environment.kept_debug_level))
    sys.stdout.flush()
    sys.stderr.flush()
    merged = _same_destination()
    with SignalForwarder(kb, lang) as forwarder:
        try:
            child = _start(argv, environment.variables, merged)
        except FileNotFoundError as exc:
            if os.sep in argv[0]:
                fields = {"command": shown(argv[0]), "reason": exc.strerror}
                return _refuse(
                    kb, lang, json_mode, ExitCode.NOT_FOUND, "run_cannot_execute", fields
                )
            fields = {"command": shown(argv[0])}
            return _refuse(kb, lang, json_mode, ExitCode.NOT_FOUND, "run_not_found", fields)
        except OSError as exc:
            fields = {"command": shown(argv[0]), "reason": exc.strerror or str(exc)}
            return _refuse(
                kb, lang, json_mode, ExitCode.CANNOT_EXECUTE, "run_cannot_execute", fields
            )
        forwarder.attach(child.pid)
        watchdog = Watchdog(child.pid)  # if the wrapper is killed outright, it stops the job
        streams = _output_streams(kb, child, merged, stdout_to_stderr=json_mode)
        try:
            _pump(child, streams, forwarder)
            returncode = child.wait()
        finally:
            if child.returncode is None:  # the wrapper itself failed: do not orphan the job
                forwarder.send(signal.SIGKILL)
                child.wait()
            forwarder.detach()
            watchdog.release()
    job_code = exit_code_of(returncode)
    code = job_code
    if forwarder.received is not None and (forwarder.stopped_hard or job_code == 0):
        # the job was cut short by the user (or it swallowed the signal and said 0):
        # report the interruption, as a shell reports 130 for Ctrl-C
        code = 128 + forwarder.received
    last = max(streams, key=lambda s: s.last_write)
    return RunOutcome(
        exit_code=code,
        job_exit_code=job_code,
        interrupted_by=forwarder.received,
        result=summarise(kb, [s.scanner for s in streams]),
        ended_mid_line=any(s.last_byte != b"\n" for s in (last, streams[-1])),
        reader_left=any(s.reader_left for s in streams),
        output_failure=next((s.failure for s in streams if s.failure is not None), None),
        output_lost=sum(s.lost for s in streams),
        debug_level=environment.variables.get(DEBUG_ENV),
    )


# ---------------------------------------------------------------------------- reporting


def run_command(
    kb, argv: Sequence[str], lang: str, fmt: str = "markdown", report_path: str | None = None
) -> int:
    """`ddp-doctor run`: the job's exit code (126/127 when it cannot be started)."""
    if report_path is not None:
        # refused before the job starts, not after hours of training
        refusal = report_refusal(report_path, argv)
        if refusal is not None:
            key, code = refusal
            return _refuse(kb, lang, fmt == "json", code, key, {"path": shown(report_path)})
    outcome = run_job(kb, argv, lang, json_mode=fmt == "json")
    if isinstance(outcome, int):
        return outcome
    report(kb, outcome, argv, lang, fmt, report_path)
    if outcome.output_failure is not None:
        # the job's output was lost: an error, as it would be for the job writing itself
        failure = outcome.output_failure
        reason = failure.strerror or str(failure)
        _say(tr(kb, "run_output_lost", lang, reason=reason, lost=outcome.output_lost))
        return outcome.exit_code or ExitCode.INPUT  # a failed job keeps its own code
    return outcome.exit_code


def _refuse(kb, lang: str, json_mode: bool, code: int, key: str, fields: dict) -> int:
    """One line on stderr (and, under --json, the error document on stdout); the exit code."""
    text = tr(kb, key, lang, **fields)
    _say(text)
    if json_mode:
        from ..output.errordoc import write_error_document

        write_error_document(code, key, text)
    return code


def report_refusal(path: str, argv: Sequence[str]) -> tuple[str, int] | None:
    """Why `--report path` is refused (message key, exit code), or None when it may be written.

    The rules of `--save` without a terminal (the terminal is the job's, nobody is asked):
    never over a file the command names, never over an existing file, never through a
    symlink to another file. A character device or a FIFO (`/dev/null`, `/dev/stdout`, a
    named pipe) is written in place, as `>` would; anything else that is not a file, never.
    """
    if not path:
        return "run_report_empty", ExitCode.USAGE
    if any(same_file(path, arg) for arg in argv):
        # `run --report train.py -- python train.py`: the report would replace the script
        return "run_report_over_input", ExitCode.USAGE
    try:
        link = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError:
        return None  # e.g. a directory we cannot search: the write will say why
    try:
        if special_file(path):
            return None
    except OSError:
        return "run_report_not_a_file", ExitCode.INPUT
    if stat.S_ISLNK(link.st_mode):
        return "run_report_is_link", ExitCode.INPUT
    if stat.S_ISDIR(link.st_mode):
        return "run_report_not_a_file", ExitCode.INPUT
    return "run_report_exists", ExitCode.INPUT


def known_errors(kb, result: TriageResult) -> list:
    """Findings that can explain a dead job (the speed warning cannot)."""
    errors = []
    for finding in result.findings:
        family = kb.family(finding.family)
        if family is None or family.severity != WARNING_SEVERITY:
            errors.append(finding)
    return errors


def _tips(kb, result: TriageResult) -> list[str]:
    """The message keys of the `tip`s of the families found (signatures.yaml), once each."""
    tips = []
    for finding in result.findings:
        family = kb.family(finding.family)
        if family is not None and family.tip and family.tip not in tips:
            tips.append(family.tip)
    return tips


def report(
    kb,
    outcome: RunOutcome,
    argv: Sequence[str],
    lang: str,
    fmt: str,
    report_path: str | None,
) -> None:
    from ..reasoning.engine import diagnose

    failed = outcome.exit_code != 0
    explained = failed and bool(known_errors(kb, outcome.result))
    # under_run: the job already ran with TORCH_DISTRIBUTED_DEBUG decided (no advice to set it)
    ran = {"under_run": True}
    # the level the job ran with is a fact: DETAIL in the environment crashed jobs
    if outcome.debug_level:
        ran["debug_level"] = outcome.debug_level.upper()
    as_json = fmt == "json"
    diagnosis = diagnose(kb, outcome.result, ran) if explained or report_path or as_json else None
    unexplained = failed and outcome.interrupted_by is None and not outcome.reader_left
    tips = _tips(kb, outcome.result)
    tip = bool(tips) and not explained and not outcome.reader_left
    if (explained or unexplained or tip) and outcome.ended_mid_line:
        sys.stderr.write("\n")  # after a progress bar's `\r`, start on a line of our own
    if explained and not as_json:
        _print_diagnosis(kb, diagnosis, outcome, argv, lang, fmt)
    elif unexplained:
        _say(tr(kb, "run_no_known_error", lang, code=outcome.job_exit_code))
    if tip:
        for key in tips:
            _say(tr(kb, key, lang))
    if report_path:
        _write_report(kb, diagnosis, outcome, argv, lang, report_path)
    sys.stderr.flush()
    if as_json:
        # last, on stdout, for every outcome: the job's output went to stderr, so a script
        # reads exactly one JSON document (the same as --report writes)
        sys.stdout.write(dumps(_report_data(kb, diagnosis, outcome, argv, lang)) + "\n")
        sys.stdout.flush()


def _report_data(kb, diagnosis, outcome: RunOutcome, argv: Sequence[str], lang: str) -> dict:
    from ..output.render import build_report, to_json_data

    data = to_json_data(build_report(kb, diagnosis, lang))
    signal_name = signal.Signals(outcome.interrupted_by).name if outcome.interrupted_by else None
    data["run"] = {
        "command": list(argv),
        "exit_code": outcome.exit_code,
        "job_exit_code": outcome.job_exit_code,
        "interrupted_by": signal_name,
    }
    return data


def _print_diagnosis(kb, diagnosis, outcome, argv, lang: str, fmt: str) -> None:
    from ..output.render import emit

    emit(kb, diagnosis, lang, fmt, sys.stderr)


def _write_report(kb, diagnosis, outcome, argv, lang: str, path: str) -> None:
    """Written for every outcome, so a report file never describes an earlier run."""
    data = _report_data(kb, diagnosis, outcome, argv, lang)
    try:
        # atomic: a full disk or a file-size limit leaves the previous report whole
        # never over a file that appeared meanwhile, never through a link (report_refusal)
        write_atomic(path, dumps(data) + "\n", overwrite=False, follow_symlinks=False)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        _say(tr(kb, "run_cannot_write_report", lang, path=shown(path), reason=reason))


def _say(text: str) -> None:
    sys.stderr.write(f"ddp-doctor: {text}\n")
    sys.stderr.flush()
