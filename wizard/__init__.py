"""ddp-doctor: diagnose PyTorch DDP unused-parameter errors and print fixes that work.

The public Python API is small: the version and the probe. Everything else (the command
line, the rules engine, the renderer) may change between releases.

    from ddp_doctor import find_unused_parameters
    report = find_unused_parameters(model, step, steps=3)

`import ddp_doctor` stays light: the probe (and torch) load on first use.
"""

from __future__ import annotations

from .common.version import __version__

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["__version__", "find_unused_parameters", "ProbeReport", "ProbeError"]

_LAZY = {"find_unused_parameters", "ProbeReport", "ProbeError"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import probe

        return getattr(probe, name)
    raise AttributeError(f"module 'ddp_doctor' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LAZY)
