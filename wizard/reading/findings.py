"""What reading a text finds: one `Finding` per DDP error message, with what it reveals,
and the facts the engine may take from the findings alone.

Records only: the analyser (`analyser.py`, `message.py`) makes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..common.record import field, record

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MIN_RUN_FROM_ZERO = 4  # indices 0..N, at least this many, read as "everything up to N"


@record
class RankError:
    """The last line of another rank's traceback, the first one in the text."""

    rank: int
    line: int  # in the source
    text: str


@record
class UserFrame:
    """A traceback frame in the user's own code."""

    file: str
    line: int
    function: str
    code: str


@record
class Finding:
    """One DDP error found in a log, with what it reveals."""

    family: str
    source: str
    line: int
    ranks: tuple[int, ...]
    unused_parameter_indices: tuple[int, ...]
    unused_parameter_names: tuple[str, ...]
    unused_modules: tuple[str, ...]
    torch_version: str | None
    find_unused_parameters_enabled: bool | None
    user_frames: tuple[UserFrame, ...]
    quote: str  # the line that names the error, as the user will recognise it
    facts: Mapping[str, Any] = field(default_factory=dict)
    occurrences: int = 1
    # text in a parameter list that is not a dotted identifier: quoted back to the user as
    # text, never used as a name (a name ends up in code the user is told to run)
    rejected_names: tuple[str, ...] = ()
    # another rank failed first: its own error may be the cause of this one
    other_rank_error: RankError | None = None
    # the list of names goes on past the text read (a window of a long log, a list longer
    # than the analyser reads): `unused_parameter_names` holds the names up to the cut
    names_cut: bool = False

    def identity(self) -> tuple:
        """Two findings with the same identity are the same error printed twice."""
        return (
            self.family,
            self.source,
            self.ranks,
            self.unused_parameter_indices,
            self.unused_parameter_names,
        )


# ---------------------------------------------------------------------------- helpers


def module_of(parameter_name: str) -> str:
    """`decoder.aux_head.weight` -> `decoder.aux_head`; a top-level parameter -> itself."""
    name = parameter_name.strip()
    if name.startswith("module."):  # the DDP wrapper's own prefix says nothing about the model
        name = name[len("module.") :]
    return name.rsplit(".", 1)[0] if "." in name else name


def group_modules(names: Iterable[str]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for name in names:
        seen.setdefault(module_of(name), None)
    return tuple(seen)


def dedupe(values: Iterable) -> tuple:
    return tuple(dict.fromkeys(values))


# ---------------------------------------------------------------------------- facts


def facts_from_findings(findings: list[Finding]) -> dict[str, Any]:
    """What the engine may take as known from the text alone.

    `findings` must be sorted by family priority (the rules' order): the first one names
    the problem.
    """
    facts: dict[str, Any] = {}
    if not findings:
        return facts
    for finding in reversed(findings):  # the most important finding's facts win
        facts.update(finding.facts)
    facts["family"] = findings[0].family
    for finding in findings:
        facts[f"seen_{finding.family}"] = True
    facts["has_param_names"] = any(f.unused_parameter_names for f in findings)
    facts["has_param_indices"] = any(f.unused_parameter_indices for f in findings)
    enabled = [f.find_unused_parameters_enabled for f in findings]
    if any(e is not None for e in enabled):
        facts["find_unused_enabled"] = any(e for e in enabled if e is not None)
    facts["ranks_disagree"] = _ranks_disagree(findings)
    facts["indices_from_zero"] = any(_indices_from_zero(f) for f in findings)
    return facts


def _indices_from_zero(finding: Finding) -> bool:
    """Every parameter from index 0 to the last one listed got no gradient: a whole stack of
    layers cut off from the loss, not one forgotten module."""
    indices = finding.unused_parameter_indices
    return len(indices) >= MIN_RUN_FROM_ZERO and set(indices) == set(range(max(indices) + 1))


def _ranks_disagree(findings: list[Finding]) -> bool:
    """Different ranks (or files) naming different unused parameters: a rank-dependent branch."""
    per_rank: dict[tuple, set] = {}
    for finding in findings:
        if not (finding.unused_parameter_names or finding.unused_parameter_indices):
            continue
        key = (finding.source, finding.ranks)
        names = finding.unused_parameter_names or tuple(map(str, finding.unused_parameter_indices))
        per_rank.setdefault(key, set()).update(names)
    return len({frozenset(v) for v in per_rank.values()}) > 1
