"""Module names in a description ("I freeze `backbone` after wrapping"), for the snippets.

What counts as a name is data (rules/lexicon.yaml `names`): regexes whose group `name` sits
next to words that say a module is frozen, unfrozen or unused, the plain words taken as
names, and the prefixes dropped. A name is taken only when it reads as code, so "I freeze
the first layers" gives none and the snippet keeps `model.YOUR_MODULE`: a made-up name
would fail as printed, and so would a wrong one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..common.memo import per_object
from ..knowledge.kb import KnowledgeBase, Text

# an attribute path as Python writes it: `text_encoder`, `layers.3.attn`
_PATH = re.compile(r"[A-Za-z_]\w*(?:\.\w+)*\Z", re.ASCII)
_LOOK_BACK = 40  # characters before a name that `not_after` reads
_CODE_LIKE = re.compile(r"[_.\d]|[a-z][A-Z]")


@dataclass(frozen=True)
class NameRules:
    patterns: tuple[re.Pattern[str], ...]
    not_after: tuple[re.Pattern[str], ...]
    plain: frozenset[str]
    prefixes: tuple[str, ...]
    bare_prefixes: frozenset[str]  # `model`, `self`, ...: the prefixes alone are no name
    says: Text


_COMPILED: dict = {}


def name_rules(kb: KnowledgeBase) -> NameRules | None:
    """The `names` section compiled once per set of rules; None when the rules have none."""
    return per_object(_COMPILED, kb, _compiled, 64, kb.lexicon.get("names"))


def _compiled(raw: Mapping[str, Any] | None) -> NameRules | None:
    if not raw:
        return None
    says = raw["says"]
    # longest first, so `self.model.` goes before `self.`
    prefixes = tuple(sorted(raw.get("prefixes") or (), key=len, reverse=True))
    return NameRules(
        # ASCII: `backbone的参数` names `backbone`
        patterns=tuple(re.compile(p, re.IGNORECASE | re.ASCII) for p in raw["patterns"]),
        not_after=tuple(re.compile(p, re.IGNORECASE) for p in raw.get("not_after") or ()),
        plain=frozenset(w.lower() for w in raw.get("plain") or ()),
        prefixes=prefixes,
        bare_prefixes=frozenset(p.rstrip(".").lower() for p in prefixes),
        says=Text(says["en"], says["zh"]),
    )


def module_names(rules: NameRules, text: str) -> list[tuple[str, tuple[int, int]]]:
    """The module names the text gives, in text order, each once, with the words that gave
    it (the span of the whole match)."""
    found: dict[str, tuple[int, int]] = {}
    for pattern in rules.patterns:
        for match in pattern.finditer(text):
            before = text[max(0, match.start("name") - _LOOK_BACK) : match.start("name")]
            if any(p.search(before) for p in rules.not_after):
                continue  # "a layer of the neck is never used": the neck is used
            name = _as_name(rules, match.group("name"))
            if name and name not in found:
                found[name] = match.span()
    return sorted(found.items(), key=lambda item: item[1])


def _as_name(rules: NameRules, written: str) -> str | None:
    """The attribute path under the unwrapped model, or None when the word is no name."""
    quoted = written.startswith("`")
    name = written.strip("`").rstrip(".")
    stripped = True
    while stripped:  # `model.module.backbone` -> `backbone`
        stripped = False
        for prefix in rules.prefixes:
            if name.lower().startswith(prefix.lower()) and len(name) > len(prefix):
                name, stripped = name[len(prefix) :], True
                break
    if not _PATH.match(name) or name.lower() in rules.bare_prefixes:
        return None
    if quoted or _CODE_LIKE.search(name) or name.lower() in rules.plain:
        return name
    return None


def named_says(rules: NameRules, names: Iterable[str]) -> Text:
    """What the user is shown for these names ("the module you named: `body`, ...")."""
    listed = ", ".join(f"`{name}`" for name in names)
    return Text(rules.says.en.format(modules=listed), rules.says.zh.format(modules=listed))
