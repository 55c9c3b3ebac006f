"""Language choice and interface-text lookup.

Every text lives in the rules (`rules/messages/*.yaml` and the knowledge files) as
`{en, zh}`; this module only decides which one to show and fills in the placeholders.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

SUPPORTED = ("en", "zh")
LANG_ENV = "DDP_DOCTOR_LANG"


def detect_lang(environ: Mapping[str, str] | None = None) -> str:
    """`zh` when the user's locale is Chinese, else `en`.

    Follows gettext's order: LANGUAGE (a colon-separated preference list), then LC_ALL,
    LC_MESSAGES, LANG. A locale that is neither (`fr_FR`, `C`, garbage) means English.
    """
    env = os.environ if environ is None else environ
    explicit = env.get(LANG_ENV, "").strip().lower()
    if explicit in SUPPORTED:
        return explicit
    for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(name, "").strip()
        if not value:
            continue
        first = value.split(":", 1)[0].lower()
        if first in ("c", "posix") and name == "LANGUAGE":
            continue
        return "zh" if first.startswith("zh") else "en"
    return "en"


def resolve_lang(requested: str | None, environ: Mapping[str, str] | None = None) -> str:
    return requested if requested in SUPPORTED else detect_lang(environ)


def tr(kb, key: str, lang: str, **fields: object) -> str:
    """The interface text `key` in `lang`, with `{placeholders}` filled in."""
    text = kb.messages.get(key)
    if text is None:  # a test guarantees every key the code uses exists; never crash a user
        return key
    template = text.get(lang)
    return template.format(**fields) if fields else template
