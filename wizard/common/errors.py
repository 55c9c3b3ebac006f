"""Exit codes of every command, and the error a user can fix.

One table for the whole tool (README "Exit codes" mirrors it; a test checks that it does).
The codes a command cannot produce are simply never returned by it.
"""

from __future__ import annotations

import enum

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class ExitCode(enum.IntEnum):
    OK = 0  # a known DDP problem was diagnosed, the interview finished, probe found nothing
    NO_ERROR_FOUND = 1  # the text holds no DDP error ddp-doctor knows
    PROBLEMS_FOUND = 1  # probe: parameters DDP would complain about (an alias of 1)
    USAGE = 2  # bad option or argument, unknown `--answers` id
    INPUT = 3  # missing, unreadable, empty or binary input; output that cannot be written
    CANNOT_PROBE = 3  # probe: import or factory fails, torch missing, the step fails (alias)
    RULES = 4  # a rules file is broken
    NEEDS_TTY = 5  # the interview needs a terminal
    CANNOT_EXECUTE = 126  # run: the command was found but cannot be run (as a shell says)
    NOT_FOUND = 127  # run: no such command (as a shell says)
    INTERRUPTED = 130  # Ctrl-C, or Ctrl-D at a prompt (128 + SIGINT, as a shell says)


class UserError(Exception):
    """A problem the user can fix; printed as one translated line, no traceback."""

    def __init__(self, code: int, key: str, **fields: Any):
        super().__init__(key)
        self.code, self.key, self.fields = code, key, fields
