"""Normalised text -> findings: which DDP error a window of a log holds and what it reveals.

The byte scanner (`scanner.py`) finds the few places of a log worth reading and hands each
window, decoded, to `Analyser.analyse`, which finds where each message starts and which
lines are its own; `message.py` reads a message into a `Finding` (`findings.py`), with
`namelists.py` for the lists of parameter names. Everything here works on clean lines (see
`normalise.py`) and the rules' regexes; nothing here reads a file or knows about blocks.
"""

from __future__ import annotations

from ..common.record import replace
from ..knowledge.kb import Family, KnowledgeBase
from .findings import Finding, RankError
from .message import BLOCK_LINES, MESSAGE_LINES, TRACEBACK_START, BlockTexts, MessageReader
from .namelists import inside_a_list
from .normalise import Line, clean_lines

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


# ---------------------------------------------------------------------------- analysis


class Analyser:
    """Reads one decoded window of a log and turns it into findings."""

    def __init__(self, kb: KnowledgeBase, source: str):
        self.kb = kb
        self.source = source
        self.prefixes = kb.line_prefixes
        self.reader = MessageReader(kb, source)  # each message's own lines -> a finding

    def analyse(self, text: str, first_line: int, continues: bool = False) -> list[Finding]:
        """The findings in `text`; `continues`: the log goes on after it (a window's cut), so
        a list of names still open at its end was cut there."""
        self.reader.start_window(continues)
        lines = clean_lines(text, self.prefixes, first_line)
        findings: list[Finding] = []
        anchored = {i: self._families(line) for i, line in enumerate(lines)}
        anchored = {i: fams for i, fams in anchored.items() if fams}
        consumed: set[int] = set()
        window_facts: dict[str, Any] | None = None
        rank_errors: list[RankError] | None = None  # read once per window, when needed
        for index, families in anchored.items():
            if index in consumed or inside_a_list(lines, index):
                continue
            for family in families:  # rules order: the first family that matches wins
                block, rank = self._block(lines, index, family, anchored)
                if not self._starts_message(lines, index, block, family, anchored):
                    continue
                consumed.update(block)
                if window_facts is None:
                    window_facts = self._window_facts(lines)
                if rank_errors is None:
                    rank_errors = self._rank_errors(lines, anchored)
                texts = BlockTexts(lines, block)
                finding = self.reader.finding(family, lines, index, rank, texts, consumed)
                findings.append(
                    replace(
                        finding,
                        facts={**window_facts, **finding.facts},
                        other_rank_error=_first_of_another_rank(rank_errors, rank),
                    )
                )
                break
        return findings

    @staticmethod
    def _starts_message(lines, index, block, family, anchored) -> bool:  # noqa: PLR0913
        """A family's pattern matches from the anchor's line on, before the next line that
        anchors the same family: a traceback frame naming DDP's check, or the last line of
        one message, must not take the message below it."""
        head = []
        for j in block:
            if j != index and family in anchored.get(j, ()):
                break
            head.append(j)
        texts = BlockTexts(lines, head)
        return any(texts.search(pattern) for pattern in family.patterns)

    def _rank_errors(self, lines: list[Line], anchored: dict[int, list[Family]]) -> list[RankError]:
        """The traceback lines of the window that a rank prefix names, in order: errors of
        their own, not the DDP errors the rules know (those are findings)."""
        return [
            RankError(line.rank, line.number, line.text.strip()[:300])
            for j, line in enumerate(lines)
            if line.rank is not None and j not in anchored and self.kb.error_line.search(line.text)
        ]

    def _window_facts(self, lines: list[Line]) -> dict[str, Any]:
        """Facts the text around an error reveals (`hints`): a framework's frames, a
        checkpoint warning printed before the traceback, LoRA names, launch flags."""
        text = "\n".join(line.text for line in lines)
        facts: dict[str, Any] = {}
        for hint in self.kb.hints:
            if hint.pattern.search(text):
                facts.update(hint.sets)
        return facts

    def _families(self, line: Line) -> list[Family]:
        return [f for f in self.kb.families if any(a in line.text for a in f.anchors)]

    @staticmethod
    def _block(
        lines: list[Line], index: int, family: Family, anchored: dict[int, list[Family]]
    ) -> tuple[list[int], int | None]:
        """Indices of the anchor line and the lines after it that continue its message, and
        the rank that printed it.

        The message ends where another error starts: a traceback, a line anchoring another
        family, or the same message printed again. Lines of other ranks are skipped, since
        launchers interleave the ranks' output. A message copied from its first line has no
        rank prefix there but on the lines after it: it takes the rank of the next line.
        """
        rank = lines[index].rank
        opening = {a for a in family.anchors if a in lines[index].text}
        if rank is None and index + 1 < len(lines):
            following = lines[index + 1]
            if not any(a in following.text for a in opening):  # not the next rank's message
                rank = following.rank
        block = [index]
        for j in range(index + 1, min(len(lines), index + 1 + MESSAGE_LINES)):
            line = lines[j]
            if line.rank != rank:
                continue
            if line.text.lstrip().startswith(TRACEBACK_START):
                break
            if j in anchored and (
                family not in anchored[j] or any(a in line.text for a in opening)
            ):
                break
            block.append(j)
            if len(block) >= BLOCK_LINES:
                break
        return block, rank


def _first_of_another_rank(errors: list[RankError], rank: int | None) -> RankError | None:
    """The first error a rank other than `rank` printed; none when the ranks cannot be told
    apart (no rank prefix on the error's line)."""
    if rank is None:
        return None
    return next((e for e in errors if e.rank != rank), None)
