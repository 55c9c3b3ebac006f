"""Check one rules file against `rules/schema.json` without the jsonschema package.

jsonschema is too heavy to import at run time, and the rules only use a small part of JSON
Schema, so this walks that part (type, enum, required, properties, additionalProperties,
items, min/max counts, pattern, anyOf, local $ref) and compiles every regex. The test
suite validates the same files with the real jsonschema, which keeps the two honest.
The answer is the path of the first bad node and what is wrong, so the loader can point at
a line.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from .regex_guard import static_problem

Problem = tuple[tuple, str]

_TYPES = {
    "object": dict,
    "array": list,
    "string": str,
    "number": (int, float),
    "integer": int,
    "boolean": bool,
    "null": type(None),
}


@lru_cache(maxsize=1)
def _schema() -> dict:
    package = Path(__file__).resolve().parent.parent  # above knowledge/
    for candidate in (package / "rules" / "schema.json", package.parent / "rules" / "schema.json"):
        if candidate.is_file():
            return json.loads(candidate.read_text(encoding="utf-8"))
    raise FileNotFoundError("rules/schema.json is missing from the installation")


def _is_type(value: Any, name: str) -> bool:
    if isinstance(value, bool) and name in ("number", "integer"):
        return False  # JSON Schema: true is not a number
    return isinstance(value, _TYPES[name])


def _describe(path: tuple) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def _rule_id(root: Any, path: tuple) -> str:
    """The id of the rule that contains `path`, to name it in the message."""
    node, found = root, None
    for step in path:
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            break
        if isinstance(node, dict) and isinstance(node.get("id"), str):
            found = node["id"]
    return f"rule {found!r}: " if found else ""


def _walk(value: Any, schema: dict, path: tuple, defs: dict, regexes: list) -> Problem | None:
    """The first problem of `value` under `schema`; the regexes met are added to `regexes`."""
    if "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    if "anyOf" in schema:
        # JSON Schema applies every keyword: the rest of this schema first (its message is
        # the most precise), then the choice
        rest = {key: value for key, value in schema.items() if key != "anyOf"}
        problem = _walk(value, rest, path, defs, regexes)
        if problem:
            return problem
        problems = [_walk(value, s, path, defs, regexes) for s in schema["anyOf"]]
        if all(problems):
            if "errorMessage" in schema:  # the schema says best what a failed choice means
                return path, f"{_describe(path) or 'value'}: {schema['errorMessage']}"
            return max(problems, key=lambda p: len(p[0]))  # the deepest
        return None
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(map(str, schema["enum"]))
        return path, f"{_describe(path) or 'value'}: {value!r} is not one of {allowed}"
    types = schema.get("type")
    if types is not None:
        names = types if isinstance(types, list) else [types]
        if not any(_is_type(value, n) for n in names):
            return path, f"{_describe(path) or 'file'}: expected {' or '.join(names)}"
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            return path, f"{_describe(path)}: must not be empty"
        if "pattern" in schema and not re.search(schema["pattern"], value):
            return path, f"{_describe(path)}: {value!r} is not a valid id (a-z, 0-9, _)"
        fmt = schema.get("format")
        if fmt == "lexicon_entry" and value.startswith("re:"):  # lexicon.yaml: 're:' is a regex
            fmt, value = "regex", value[3:]
        if fmt == "regex":
            try:
                re.compile(value)
            except re.error as exc:
                return path, f"{_describe(path)}: invalid regex: {exc}"
            danger = static_problem(value)
            if danger is not None:
                return path, f"{_describe(path)}: regex {value!r}: {danger}"
            regexes.append((path, value))
    if isinstance(value, (int, float)) and "minimum" in schema and value < schema["minimum"]:
        return path, f"{_describe(path)}: must be at least {schema['minimum']}"
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            return path, f"{_describe(path)}: needs at least {schema['minItems']} item(s)"
        for index, item in enumerate(value):
            problem = "items" in schema and _walk(
                item, schema["items"], path + (index,), defs, regexes
            )
            if problem:
                return problem
    if isinstance(value, dict):
        return _walk_object(value, schema, path, defs, regexes)
    return None


def _walk_object(
    value: dict, schema: dict, path: tuple, defs: dict, regexes: list
) -> Problem | None:
    if len(value) < schema.get("minProperties", 0):
        return path, f"{_describe(path) or 'file'}: must not be empty"
    if len(value) > schema.get("maxProperties", len(value)):
        return path, f"{_describe(path)}: only one of {', '.join(value)} may be given"
    for key in schema.get("required", []):
        if key not in value:
            return path, f"{_describe(path) or 'file'}: missing required key {key!r}"
    properties = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        if key in properties:
            problem = _walk(item, properties[key], path + (key,), defs, regexes)
        elif extra is False:
            problem = path + (key,), f"{_describe(path + (key,))}: unknown key"
        elif isinstance(extra, dict):
            problem = _walk(item, extra, path + (key,), defs, regexes)
        else:
            problem = None
        if problem:
            return problem
    return None


def check_rules(kind: str, data: Any, regexes: list | None = None) -> Problem | None:
    """None if `data` is a valid rules file of `kind`, else (path, one-line message).

    Every regex must compile and pass regex_guard's backtracking check; the regexes found
    are added to `regexes` as (path, pattern) when it is given."""
    regexes = [] if regexes is None else regexes
    schema = _schema()
    defs = schema["$defs"]
    if kind not in defs:
        return (), f"unknown rules file {kind!r} (expected one of {', '.join(_KINDS)})"
    problem = _walk(data, defs[kind], (), defs, regexes)
    if problem is None:
        problem = _check_ids_unique(data)
    if problem is None and kind == "fixes":
        problem = placeholder_values_problem(data)
    if problem is None:
        return None
    path, message = problem
    return path, _rule_id(data, path) + message


_KINDS = ("signatures", "causes", "fixes", "questions", "lexicon", "messages", "examples")


def _check_ids_unique(data: Any) -> Problem | None:
    if not isinstance(data, dict):
        return None
    for section, items in data.items():
        if not isinstance(items, list):
            continue
        seen: set[str] = set()
        for index, item in enumerate(items):
            key = item.get("id") if isinstance(item, dict) else None
            if key is None:
                continue
            if key in seen:
                return (section, index, "id"), f"duplicate id {key!r}"
            seen.add(key)
    return None


# ---------------------------------------------------------------------------- placeholders

# fixes.yaml's `placeholders:` values are filled into snippet code, and may use each other
# ({wrap} uses {device_ids}). Each is a template like any rules text: bare known names only
# (`{module:>999999999}` would allocate gigabytes). No placeholder may lead back to itself,
# and one filled in completely (every placeholder it uses, and theirs) stays this short
# (a value naming another a thousand times, three levels deep, is 10^9 copies).
MAX_FILLED_CHARS = 16_384


def placeholder_values_problem(data: Any) -> Problem | None:
    """Why the `placeholders:` section of a fixes file cannot be filled safely, or None."""
    from .rules_guard import TEXT_FIELDS, placeholder_problem

    section = data.get("placeholders") if isinstance(data, dict) else None
    if not isinstance(section, dict):
        return None
    allowed = TEXT_FIELDS | set(section)
    uses: dict[str, list[tuple[int, list[str]]]] = {}  # name -> (literal length, names used)
    for name, entries in section.items():
        for index, entry in enumerate(entries if isinstance(entries, list) else []):
            value = entry.get("value") if isinstance(entry, dict) else None
            texts = [value] if isinstance(value, str) else []
            if isinstance(value, dict):
                texts = [value[lang] for lang in ("en", "zh") if isinstance(value.get(lang), str)]
            for text in texts:
                where = ("placeholders", name, index, "value")
                problem = placeholder_problem(text, allowed)
                if problem is not None:
                    return where, f"placeholder {name!r}: {problem}"
                used = _fields_used(text)
                uses.setdefault(name, []).append((len(text), used))
    return _filled_size_problem(uses)


def _fields_used(template: str) -> list[str]:
    from string import Formatter

    return [f for _, f, _, _ in Formatter().parse(template) if f]


def _filled_size_problem(uses: dict) -> Problem | None:
    """A cycle among the placeholders, or one whose value filled in is too long."""
    sizes: dict[str, int] = {}
    visiting: list[str] = []

    def size(name: str) -> int:
        if name in sizes:
            return sizes[name]
        if name in visiting:
            loop = " -> ".join([*visiting[visiting.index(name) :], name])
            raise _Cycle(name, loop)
        visiting.append(name)
        longest = 0
        for literal, used in uses.get(name, ()):
            total = literal
            for other in used:
                # a name from the log ({module}...) is counted as one character here
                total += size(other) if other in uses else 1
                if total > MAX_FILLED_CHARS:
                    raise _TooLong(name)
            longest = max(longest, total)
        visiting.pop()
        sizes[name] = longest
        return longest

    for name in uses:
        try:
            size(name)
        except _Cycle as exc:
            return ("placeholders", exc.name), (
                f"placeholder {exc.name!r} uses itself ({exc.loop}): it could never be filled"
            )
        except _TooLong as exc:
            return ("placeholders", exc.name), (
                f"placeholder {exc.name!r} filled in would be longer than "
                f"{MAX_FILLED_CHARS} characters"
            )
    return None


class _Cycle(Exception):
    def __init__(self, name: str, loop: str):
        super().__init__(loop)
        self.name, self.loop = name, loop


class _TooLong(Exception):
    def __init__(self, name: str):
        super().__init__(name)
        self.name = name
