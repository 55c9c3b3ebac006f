"""The shell command that gives a report again without questions.

Its own module: the report (render.py) prints such commands for the fixes of its decision
table, and the answers file's module sits above the report in the import order.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping


def reproduce_command(
    lang: str,
    answers: Mapping[str, str],
    answers_path: str | None = None,
    paste_path: str | None = None,
) -> str:
    """The shell command that gives the same report without questions.

    `paste_path` must be a file that exists (the `--paste` log, or the saved copy of a
    pasted error): the command never names a file that was not written.
    """
    parts = ["ddp-doctor", "--lang", lang]
    if answers_path:
        parts += ["--answers", shlex.quote(answers_path)]
    else:
        parts += ["--answers", f"<(echo {shlex.quote(_inline(answers))})"]
    if paste_path:
        parts += ["--paste", shlex.quote(paste_path)]
    return " ".join(parts)


def _inline(answers: Mapping[str, str]) -> str:
    """The answers as one line: plain `{id: value}` while every value is one word, else JSON
    (a typed sentence holds commas, colons and quotes; JSON is also YAML)."""
    if all(_PLAIN.fullmatch(str(v)) for v in answers.values()):
        return "{" + ", ".join(f"{k}: {v}" for k, v in answers.items()) + "}"
    import json

    return json.dumps(dict(answers), ensure_ascii=False)


_PLAIN = re.compile(r"[\w.-]+")
