"""Signals for `ddp-doctor run`: what reaches the wrapper reaches the job, and the job never
outlives a wrapper that died.

The job runs in a session and process group of its own (see run.py), so nothing sent to
the wrapper reaches it unless passed on. Three kinds of signal:

- stop requests (SIGINT, SIGTERM, SIGHUP, SIGQUIT): passed on; the job gets a grace period
  to stop (a training script may save a checkpoint), then SIGTERM, then SIGKILL. A second
  one stops it at once. The wrapper's exit code says it was interrupted.
- notices (SIGUSR1, SIGUSR2 as Slurm sends before pre-emption, SIGALRM, SIGXCPU, SIGPWR,
  the real-time signals, ...): every other catchable signal whose default would kill the
  wrapper is passed on as it is; the job decides what it means and keeps running.
- Ctrl-Z (SIGTSTP): the job's group is stopped with SIGSTOP (a group outside the terminal's
  session ignores SIGTSTP), then the wrapper stops itself; `fg` continues both.

What cannot be caught (SIGKILL, a crash of the wrapper) is covered by the `Watchdog`: a
forked process holding one end of a pipe. When the wrapper ends without saying "done" on
it, the watchdog stops the job's group (SIGTERM, then SIGKILL): the job is never orphaned.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from typing import Any

from ..common.i18n import tr

INTERRUPT_GRACE_SECONDS = 10.0  # after passing on Ctrl-C: time to save and shut down
TERM_GRACE_SECONDS = 5.0  # after SIGTERM, before SIGKILL

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
# Synchronous faults are the wrapper's own (a handler would loop on them); SIGPIPE and
# SIGXFSZ are ignored by Python; SIGCHLD, SIGWINCH, SIGURG, SIGCONT kill nobody.
_NOT_FORWARDED = {
    "SIGKILL", "SIGSTOP", "SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGTRAP", "SIGABRT",
    "SIGSYS", "SIGPIPE", "SIGXFSZ", "SIGCHLD", "SIGCLD", "SIGWINCH", "SIGURG", "SIGCONT",
    "SIGTSTP", "SIGTTIN", "SIGTTOU",
}  # fmt: skip


def notice_signals() -> tuple[int, ...]:
    """Every catchable signal, other than the stop requests, that would kill the wrapper."""
    named = [
        s
        for s in signal.Signals
        if s.name not in _NOT_FORWARDED and s.name.startswith("SIG") and s not in STOP_SIGNALS
    ]
    realtime = []
    if hasattr(signal, "SIGRTMIN"):
        realtime = list(range(int(signal.SIGRTMIN), int(signal.SIGRTMAX) + 1))
    seen = {int(s) for s in named}
    return tuple(int(s) for s in named) + tuple(n for n in realtime if n not in seen)


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:  # a real-time signal has no name of its own
        return f"SIGRTMIN+{signum - int(signal.SIGRTMIN)}"


class SignalForwarder:
    """Passes signals on to the job's process group; see the module docstring."""

    def __init__(self, kb, lang: str):
        self.kb, self.lang = kb, lang
        self.group: int | None = None
        self.received: int | None = None  # the first stop request the wrapper got
        self.pending: list[int] = []  # notices that arrived while the job was starting
        self.escalation: list[int] = []
        self.deadline: float | None = None
        self.stopped_hard = False  # the wrapper, not the job, decided when it ended
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> SignalForwarder:
        # handlers can only be installed from the main thread (the CLI's); called from
        # another thread, the job simply gets no forwarding
        if threading.current_thread() is not threading.main_thread():
            return self
        handlers = [(s, self._on_stop) for s in STOP_SIGNALS]
        handlers += [(s, self._on_notice) for s in notice_signals()]
        handlers.append((signal.SIGTSTP, self._on_suspend))
        for signum, handler in handlers:
            try:
                # an ignored signal stays ignored (`nohup ddp-doctor run ...`, a background
                # job of a script); the job inherits the ignoring, as without the wrapper
                if signal.getsignal(signum) is not signal.SIG_IGN:
                    self.previous[signum] = signal.signal(signum, handler)
            except (OSError, ValueError, RuntimeError):  # reserved by the C library
                continue
        return self

    def __exit__(self, *exc_info) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)

    def attach(self, group: int) -> None:
        self.group = group
        for signum in self.pending:  # arrived while the job was starting
            self.send(signum)
        self.pending.clear()
        if self.received is not None:
            self.send(self.received)

    def detach(self) -> None:
        """The job was reaped: its group id may be reused, so send nothing more."""
        self.group = None
        self.deadline = None

    def _on_notice(self, signum: int, frame) -> None:
        if self.group is None:
            self.pending.append(signum)
            return
        self.send(signum)
        _say_raw(tr(self.kb, "run_signal_passed", self.lang, signal=signal_name(signum)))

    def _on_suspend(self, signum: int, frame) -> None:
        self.send(signal.SIGSTOP)
        os.kill(os.getpid(), signal.SIGSTOP)  # returns when the shell continues us (`fg`)
        self.send(signal.SIGCONT)

    def _on_stop(self, signum: int, frame) -> None:
        if self.received is not None:
            self._escalate()
            return
        self.received = signum
        if signum == signal.SIGTERM:
            self.escalation = [signal.SIGKILL]
            grace = TERM_GRACE_SECONDS
        else:
            self.escalation = [signal.SIGTERM, signal.SIGKILL]
            grace = INTERRUPT_GRACE_SECONDS
        self.deadline = time.monotonic() + grace
        if self.group is None:
            return  # forwarded by attach()
        self.send(signum)
        kb, seconds = self.kb, f"{grace:g}"
        if signum == signal.SIGINT:  # only a terminal user can press Ctrl-C again
            _say_raw(tr(kb, "run_interrupt_forwarded", self.lang, seconds=seconds), True)
        else:
            name = signal_name(signum)
            _say_raw(tr(kb, "run_signal_forwarded", self.lang, signal=name, seconds=seconds))

    def tick(self) -> None:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self._escalate()

    def _escalate(self) -> None:
        if not self.escalation or self.group is None:
            return
        signum = self.escalation.pop(0)
        self.stopped_hard = True
        _say_raw(tr(self.kb, "run_signal_escalated", self.lang, signal=signal_name(signum)))
        self.send(signum)
        self.deadline = time.monotonic() + TERM_GRACE_SECONDS if self.escalation else None

    def send(self, signum: int) -> None:
        if self.group is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone
            os.killpg(self.group, signum)


def _say_raw(text: str, new_line: bool = False) -> None:
    """One line on stderr from a signal handler: os.write, since the handler may interrupt
    a write to sys.stderr, and buffered streams refuse reentrant use. `new_line` moves off
    the `^C` a terminal echoes without ending the line."""
    with contextlib.suppress(OSError, ValueError):
        lead = "\n" if new_line else ""
        os.write(sys.stderr.fileno(), f"{lead}ddp-doctor: {text}\n".encode("utf-8", "replace"))


# ---------------------------------------------------------------------------- watchdog


class Watchdog:
    """Stops the job's group if the wrapper dies without `release()` (SIGKILL, a crash)."""

    DONE = b"d"

    def __init__(self, group: int):
        self.write_fd: int | None = None
        read_fd, write_fd = os.pipe()
        try:
            pid = os.fork()
        except OSError:  # no process to spare: run without the watchdog
            os.close(read_fd)
            os.close(write_fd)
            return
        if pid == 0:
            _watch(read_fd, write_fd, group)  # never returns
        os.close(read_fd)
        self.write_fd = write_fd
        self.pid = pid

    def release(self) -> None:
        """The job was reaped by us: the watchdog leaves without touching anything."""
        if self.write_fd is None:
            return
        with contextlib.suppress(OSError):
            os.write(self.write_fd, self.DONE)
        os.close(self.write_fd)
        self.write_fd = None
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(self.pid, 0)  # it exits at once; leave no zombie behind


def _watch(read_fd: int, write_fd: int, group: int) -> None:
    """The watchdog process: wait for the wrapper's word or its death."""
    try:
        os.setsid()  # out of the terminal's group: Ctrl-C meant for the wrapper is not ours
        for signum in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGTSTP):
            signal.signal(signum, signal.SIG_IGN)
        for signum in notice_signals():
            with contextlib.suppress(OSError, ValueError):
                signal.signal(signum, signal.SIG_IGN)
        os.close(write_fd)
        # hold nothing of the wrapper's: its stdout (a `| head` would wait for us), the
        # job's pipes
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, read_fd)
        os.closerange(read_fd + 1, 1 << 16)
        word = b""
        while True:
            try:
                word = os.read(read_fd, 1)
                break
            except InterruptedError:
                continue
        if word != Watchdog.DONE:  # end of file: the wrapper is gone
            _stop_group(group)
    finally:
        os._exit(0)


def _stop_group(group: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + TERM_GRACE_SECONDS
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except OSError:
            return
        time.sleep(0.1)
    with contextlib.suppress(OSError):
        os.killpg(group, signal.SIGKILL)
