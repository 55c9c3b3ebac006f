"""`@scoped`: `contextlib.contextmanager` for a generator that only sets up and tears down.

Importing `contextlib` (its ABCs and a dozen classes) costs ~0.4 ms of every run, for the
three context managers a report goes through (the guarded streams, argparse's words). Each
is a generator that yields once inside `try: ... finally:`, never catching what the `with`
block raises, so the whole of `contextmanager` they need is below: enter runs it to its
`yield`, exit resumes it (or throws the block's exception into it, which its `finally`
lets through) and lets that exception go on.
"""

from __future__ import annotations

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Generator
    from typing import Any


class _Scope:
    def __init__(self, generator: Generator):
        self._generator = generator

    def __enter__(self) -> Any:
        return next(self._generator)

    def __exit__(self, kind, value, traceback) -> bool:
        if kind is None:
            try:
                next(self._generator)
            except StopIteration:
                return False
            raise RuntimeError("a scoped generator yielded twice")
        try:
            self._generator.throw(value)
        except StopIteration:  # it ended without re-raising: swallowed, as contextlib does
            return True
        except BaseException as raised:
            if raised is value:
                return False  # the block's own exception: it goes on
            raise
        raise RuntimeError("a scoped generator yielded again after an exception")


def scoped(function: Callable[..., Generator]) -> Callable[..., _Scope]:
    """A context manager from a generator function that yields once (see the docstring)."""

    def make(*args: Any, **kwargs: Any) -> _Scope:
        return _Scope(function(*args, **kwargs))

    make.__name__, make.__doc__ = function.__name__, function.__doc__
    make.__qualname__ = function.__qualname__
    return make
