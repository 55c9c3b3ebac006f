"""Find the parameters a training step does not reach: the public probe API.
The probe layer may import: common, knowledge, reading, reasoning, output (torch only on use).

    from ddp_doctor.probe import find_unused_parameters
    report = find_unused_parameters(model, step, steps=3)  # step(model) -> loss(es)
    print(report)

`step(model)` runs one forward pass and returns the loss (or one loss per `backward()` the
real training step makes); it must not call `backward()` itself. The work is split in three:
`probe_core` (running the step, recording gradients), `probe_report` (how the result looks)
and `probe_command` (`ddp-doctor probe module:factory`). torch and rich are imported only
when a probe runs or a report renders: importing this module is cheap.
"""

from __future__ import annotations

from .command import run_probe_command
from .core import DdpVerdict, ParamInfo, ProbeError, ProbeReport, find_unused_parameters

__all__ = [
    "DdpVerdict",
    "ParamInfo",
    "ProbeError",
    "ProbeReport",
    "find_unused_parameters",
    "run_probe_command",
]
