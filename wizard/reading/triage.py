"""Text or stream -> a TriageResult: which DDP errors a log holds and what they reveal.

The public face of two halves: `scanner.py` streams the bytes and finds the windows worth
reading (memory bounded whatever the log's size), `analyser.py` turns each window's text
into findings. This module merges the findings of every source into one result.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..common.record import record
from ..knowledge.kb import KnowledgeBase
from .findings import Finding, UserFrame, facts_from_findings, group_modules, module_of
from .scanner import MAX_FINDINGS, Scanner, scan_stream

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "MAX_FINDINGS",
    "Finding",
    "Scanner",
    "TriageResult",
    "UserFrame",
    "facts_from_findings",
    "group_modules",
    "module_of",
    "scan_stream",
    "summarise",
    "triage_text",
]


@record
class TriageResult:
    """All findings of one triage, merged over its sources."""

    findings: tuple[Finding, ...]
    facts: Mapping[str, Any]
    bytes_read: int
    looks_binary: bool
    hit_byte_limit: bool
    sources: tuple[str, ...]

    @property
    def unused_modules(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for finding in self.findings:
            for module in finding.unused_modules:
                seen.setdefault(module, None)
        return tuple(seen)


def summarise(kb: KnowledgeBase, scanners: list[Scanner]) -> TriageResult:
    """Merge the findings of every source into one result with the facts they imply."""
    findings = [f for s in scanners for f in s.finish()]
    order = {family.id: i for i, family in enumerate(kb.families)}
    findings.sort(key=lambda f: (order.get(f.family, 99), f.source, f.ranks, f.line))
    return TriageResult(
        findings=tuple(findings),
        facts=facts_from_findings(findings),
        bytes_read=sum(s.position for s in scanners),
        looks_binary=any(s.looks_binary for s in scanners) and not findings,
        hit_byte_limit=any(s.hit_byte_limit for s in scanners),
        sources=tuple(s.source for s in scanners),
    )


def triage_text(kb: KnowledgeBase, text: str, source: str = "<paste>") -> TriageResult:
    scanner = Scanner(kb, source)
    scanner.feed(text.encode("utf-8", errors="replace"))
    return summarise(kb, [scanner])
