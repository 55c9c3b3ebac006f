"""What the advice would print, reduced to what a tailoring answer can change.

A tailoring question (the framework, the backward layout, the direction of a freeze) is
worth a keypress only when some answer changes the code or the words of the advice: a fix
spelled for that framework, or a rules placeholder (`{wrap}`, `{model}`) whose value depends
on the answer. `printed_key` is that part of the advice; two fact sets with the same key print
the same fixes. May import `knowledge/` and `common/`.
"""

from __future__ import annotations

from ..common.memo import per_object

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

    from ..knowledge.kb import Fix, KnowledgeBase

FRAMEWORK_FACT = "framework"
DEFAULT_FRAMEWORK = "pytorch"


def spelling(fix: Fix, framework: str) -> str:
    """The framework whose snippet is printed for `fix`: the user's when the fix has one,
    else plain PyTorch (spelled for every framework by placeholders, or the fallback)."""
    return framework if framework in fix.snippets else DEFAULT_FRAMEWORK


def printed_key(kb: KnowledgeBase, fixes: Iterable[Fix], facts: Mapping[str, Any]) -> tuple:
    """What of these fixes' printed text depends on the facts: each fix, the snippet it is
    spelled with, and which value each placeholder its texts use takes."""
    framework = str(facts.get(FRAMEWORK_FACT, DEFAULT_FRAMEWORK))
    key = []
    for fix in fixes:
        chosen = spelling(fix, framework)
        names = _placeholders_used(kb, fix, chosen)
        key.append((fix.id, chosen, tuple(_choice(kb, name, facts) for name in names)))
    return tuple(key)


def _choice(kb: KnowledgeBase, name: str, facts: Mapping[str, Any]) -> int:
    """Which of a placeholder's values the facts select (its first `when` that holds)."""
    from ..knowledge.conditions import condition_holds

    for index, (when, _value) in enumerate(kb.placeholders[name]):
        if condition_holds(when, facts):
            return index
    return -1


def _placeholders_used(kb: KnowledgeBase, fix: Fix, chosen: str) -> tuple[str, ...]:
    """The rules placeholders a fix's texts and chosen snippet use, and those their values
    use in turn ({wrap} uses {device_ids}); made once per fix and snippet."""
    return per_object(_USED, fix, _find_used, 256, kb, fix, chosen, key=chosen)


def _find_used(kb: KnowledgeBase, fix: Fix, chosen: str) -> tuple[str, ...]:
    from ..knowledge.rules_guard import placeholders

    texts = [fix.title, fix.why, fix.cost, fix.warning, fix.snippets[chosen].code]
    pending = [t for text in texts if text is not None for t in (text.en, text.zh)]
    used: set[str] = set()
    while pending:
        for name in placeholders(pending.pop()):
            if name in kb.placeholders and name not in used:
                used.add(name)
                for _when, value in kb.placeholders[name]:
                    pending += [value.en, value.zh] if hasattr(value, "en") else [str(value)]
    return tuple(sorted(used))


_USED: dict = {}
