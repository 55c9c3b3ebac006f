"""rules/README.md matches rules/schema.json: every field a rules file can hold is documented,
(issue 9)."""

from __future__ import annotations

import json
import re

import pytest
from helpers import ROOT

RULES = ROOT / "rules"


RULES_README = (RULES / "README.md").read_text("utf-8")
SCHEMA = json.loads((RULES / "schema.json").read_text("utf-8"))


def _schema_fields(node, defs, seen=()) -> set[str]:
    """Every property name a rules file of this kind can hold."""
    fields: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref", "")
        if ref.startswith("#/$defs/"):
            name = ref.rsplit("/", 1)[1]
            if name not in seen:
                fields |= _schema_fields(defs[name], defs, (*seen, name))
        for key, value in node.items():
            if key == "properties":
                fields |= set(value)
                for sub in value.values():
                    fields |= _schema_fields(sub, defs, seen)
            elif key != "$ref":
                fields |= _schema_fields(value, defs, seen)
    elif isinstance(node, list):
        for item in node:
            fields |= _schema_fields(item, defs, seen)
    return fields


KINDS = sorted(ref["$ref"].rsplit("/", 1)[1] for ref in SCHEMA["anyOf"] if "$ref" in ref)


@pytest.mark.parametrize("kind", KINDS)
def test_rules_readme_documents_every_schema_field(kind):
    fields = _schema_fields(SCHEMA["$defs"][kind], SCHEMA["$defs"], (kind,))
    assert fields or kind == "messages"
    undocumented = sorted(
        f
        for f in fields
        if not re.search(rf"(^|[\s{{\[,`])({re.escape(f)}):|`{re.escape(f)}`", RULES_README, re.M)
    )
    assert not undocumented
