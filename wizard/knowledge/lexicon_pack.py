"""The lexicon (lexicon.yaml) in the rules cache as one packed value, read on first use.

Only `ask` and the interview read the lexicon; the reports never do. Unmarshalling its
~57 KB of sections with the rest of the rules cost every report ~0.7 ms of its start-up
(the `readings` alone ~0.4 ms). In the cache the sections are one `marshal` byte string
inside the payload (covered by the payload's digest like the rest, see rules_cache.py),
which `marshal.loads` copies without looking into; `kb._PackedLexicon` unpacks it
(`unpack`) the first time the lexicon is asked for: the mapping lives in kb.py, so that a
report never imports this module (~0.2 ms). What it unpacks is checked for the shape the
loader stores; anything else (a planted or hand-edited cache) is read again from the YAML
files, as a cache of the wrong shape is.
"""

from __future__ import annotations

import marshal

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def pack(raw: dict[str, Any], sections: tuple[str, ...], key: str) -> dict[str, Any]:
    """A copy of the raw rules to store in the cache, the lexicon's sections packed under
    `key` (kb.PACKED_KEY)."""
    stored = {k: v for k, v in raw.items() if k not in sections}
    stored[key] = marshal.dumps({k: raw[k] for k in sections if k in raw})
    return stored


def unpack(packed: bytes, sections: tuple[str, ...], reread: Callable[[], dict]) -> dict:
    """The lexicon's sections from what `pack` stored; from `reread` (the YAML files) when
    `packed` is anything else."""
    try:
        data = marshal.loads(packed)
    except (ValueError, EOFError, TypeError, RecursionError, MemoryError):
        data = None
    if not _plausible(data, sections):
        raw = reread()
        data = {k: raw[k] for k in sections if k in raw}
    return data


def _plausible(data: Any, sections: tuple[str, ...]) -> bool:
    """The shape `pack` stores: known sections, each a list of mappings (or a mapping)."""
    if not isinstance(data, dict) or not all(k in sections for k in data):
        return False
    for value in data.values():
        if isinstance(value, list):
            if not all(isinstance(item, dict) for item in value):
                return False
        elif not isinstance(value, dict):
            return False
    return True
