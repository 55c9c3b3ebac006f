"""The JSON document of an error: under `--json` a script gets one JSON document on stdout,
whether the command worked or not (the one-line message still goes to stderr).

    {"schema_version": 2, "tool": {...}, "status": "error",
     "error": {"exit_code": 3, "id": "err_no_such_file", "message": "no such file: x.log"}}
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ..common.foreign import dumps
from ..common.version import __version__

SCHEMA_VERSION = 2  # the version of every JSON document ddp-doctor prints (render.py's too)


def error_document(exit_code: int, key: str, message: str) -> str:
    data = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "ddp-doctor", "version": __version__},
        "status": "error",
        "error": {"exit_code": int(exit_code), "id": key, "message": message},
    }
    return dumps(data)


def write_error_document(exit_code: int, key: str, message: str) -> None:
    sys.stdout.write(error_document(exit_code, key, message) + "\n")
    sys.stdout.flush()


def json_in_argv(argv: Sequence[str]) -> bool:
    """`--json` or `--format json` among the options (before a lone `--`): known even when
    the command line does not parse."""
    for i, word in enumerate(argv):
        if word == "--":
            return False
        if word == "--json" or word == "--format=json":
            return True
        if word == "--format" and i + 1 < len(argv) and argv[i + 1] == "json":
            return True
    return False
