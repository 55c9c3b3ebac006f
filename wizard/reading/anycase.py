"""Typed text in another case: give the rules' wording back its own case.

A message copied from a terminal keeps PyTorch's case, and the scan looks for it
case-sensitively (a literal search at C speed). A message typed or retyped by a person,
an issue title, a chat line, is often lower-cased ("expected to have finished reduction in
the prior iteration") or shouted, and then nothing is found. For a short input in which
nothing was found, `restore_case` rewrites every stretch that equals, ignoring ASCII case,
a piece of the rules' own wording (an anchor, or text every match of a family's, fact's or
extractor's regex must hold) in the rules' case, so the same rules read it. Everything
else, parameter names included, stays as typed. A stretch that only looks like an anchor
("we expected to have finished reduction of the learning rate") still has to satisfy a
family's whole pattern, which the rest of its wording does not.
"""

from __future__ import annotations

from ..knowledge.kb import KnowledgeBase
from .findings import Finding

# str.lower() may change a text's length (U+0130), this folds ASCII letters only, as bytes.lower()
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")

# Shorter pieces ("rank ", "Error") are words of ordinary prose: rewriting them would not
# find a message, only change a user's text.
MIN_PIECE = 12


def wording_pieces(kb: KnowledgeBase) -> tuple[bytes, ...]:
    """The rules' wording whose case is restored: the regexes' fixed pieces, then the
    anchors (each text once; where two overlap, the later one's case is what is left)."""
    patterns = [p for f in kb.families for p in f.patterns]
    patterns += [r.pattern for f in kb.families for r in f.facts]
    patterns += [e.pattern for e in kb.extractors]
    pieces = [piece for p in patterns for piece in getattr(p, "pieces", ())]
    anchors = [a for f in kb.families for a in f.anchors]
    wanted = dict.fromkeys(t.encode("utf-8") for t in pieces + anchors if len(t) >= MIN_PIECE)
    return tuple(wanted)


def restore_case(data: bytes, pieces: tuple[bytes, ...]) -> bytes | None:
    """`data` with each stretch equal to a piece, ignoring ASCII case, spelled as the piece;
    None when no stretch differs from its piece (nothing to read again)."""
    folded = data.lower()  # ASCII only: every byte keeps its place
    restored = bytearray(data)
    for piece in pieces:
        key = piece.lower()
        at = folded.find(key)
        while at != -1:
            restored[at : at + len(piece)] = piece
            at = folded.find(key, at + 1)
    return None if restored == data else bytes(restored)


def quoted_as_typed(finding: Finding, typed: str) -> Finding:
    """`finding` with its quote as the user typed it: that is the line they will recognise."""
    from ..common.record import replace

    at = typed.translate(_ASCII_LOWER).find(finding.quote.translate(_ASCII_LOWER))
    if at == -1:  # a quote joined from several lines: kept in the rules' case
        return finding
    return replace(finding, quote=typed[at : at + len(finding.quote)])
