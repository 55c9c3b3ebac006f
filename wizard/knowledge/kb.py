"""Load the YAML knowledge base into typed, frozen objects.

The rules are read once per process. Parsing YAML is the slowest part of start-up, so the
validated raw data is cached (rules_cache.py), keyed by the rules files' bytes (see
`_cache_key`); a changed rules file simply misses the cache. A broken rules file raises
`RulesError` with the file, the line and what is wrong, never a traceback.

Start-up matters (`ddp-doctor triage` runs on busy login nodes), so a cache hit imports
neither PyYAML, nor pathlib, nor hashlib (OpenSSL), nor the schema checker: paths are plain
strings here and the rest is imported where a cache miss needs it.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator, Mapping
from types import MappingProxyType

from ..common.record import field, record
from ..common.version import __version__

# typing is only read by type checkers: importing it costs start-up time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

LANGS = ("en", "zh")
RULE_FILES = ("signatures.yaml", "causes.yaml", "fixes.yaml", "questions.yaml", "lexicon.yaml")
LEXICON_SECTIONS = ("cues", "terms", "readings", "topics", "aspects", "names")  # lexicon.yaml
# the fact holding the modules a description names (a tuple of attribute paths under the
# unwrapped model): set by reading/module_names.py from lexicon.yaml `names`, read by the
# snippets' {module} (output/render.py) when the error named none
NAMED_MODULES = "named_modules"
MESSAGES_DIR = "messages"
# examples for the retrieval reader: read only by `ask` (wizard/reading/retrieve.py), on first use,
# so that no other command pays for them
EXAMPLES_FILE = "examples.yaml"
RULES_ENV = "DDP_DOCTOR_RULES"


class RulesError(Exception):
    """A rules file is broken. `str()` is one line: file:line: what is wrong."""

    def __init__(self, file: str, line: int | None, message: str):
        self.file, self.line, self.message = file, line, message
        where = f"{file}:{line}" if line else file
        super().__init__(f"{where}: {message}")


@record
class Text:
    """A user-facing text in both languages."""

    en: str
    zh: str

    def get(self, lang: str) -> str:
        return self.zh if lang == "zh" else self.en


@record
class Example:
    """A positive or negative example of a signature: inline text or a fixture file."""

    text: str | None = None
    file: str | None = None  # relative to tests/


@record
class FactRule:
    """A regex that sets facts when it matches: over an error message (a family's `facts`)
    or over the traceback around it (`hints`: framework, checkpointing...)."""

    pattern: re.Pattern
    sets: Mapping[str, Any]


@record
class Family:
    """One error family: how to recognise it in a log and what it implies."""

    id: str
    severity: str
    title: Text
    summary: Text
    anchors: tuple[str, ...]
    patterns: tuple[re.Pattern, ...]
    sets: Mapping[str, Any]
    facts: tuple[FactRule, ...]
    positive: tuple[Example, ...]
    negative: tuple[Example, ...]
    tip: str | None = None  # a message key `run` shows after a job that ends well


@record
class Extractor:
    """A regex that pulls a value (ranks, parameter names, version) out of a message."""

    field: str
    pattern: re.Pattern
    split: str | None = None


@record
class Note:
    """An observation about the pasted text, shown under the report when `when` holds."""

    id: str
    when: Mapping[str, Any]
    text: Text


@record
class Evidence:
    """A condition on the facts that raises (or lowers) a cause's score."""

    when: Mapping[str, Any]
    weight: float
    reason: Text | None


@record
class Cause:
    """A root cause of the error, with the evidence for it and the fixes that cure it."""

    id: str
    title: Text
    explanation: Text
    prior: float
    evidence: tuple[Evidence, ...]
    fixes: tuple[str, ...]
    # what is true of a user with this cause (case_baseline + each case's truths, the facts a
    # user would not know left out): how such a user answers, for the question planner
    typical: tuple[Mapping[str, Any], ...] = ()


@record
class Snippet:
    """The code of a fix for one framework."""

    language: str
    code: Text
    any_framework: bool = False  # placeholders ({wrap}) spell it for every framework


@record
class Outcome:
    """What a fix measurably does for one cause on real DDP (a tests/ddp scenario)."""

    cause: str
    when: Mapping[str, Any]  # facts narrowing the case; empty: always
    result: str  # works | error | wrong
    scenario: str
    note: Text | None  # required for error / wrong: the warning's reason


@record
class Fix:
    """A fix or a diagnostic step, with why it works and what it costs."""

    id: str
    kind: str  # fix | diagnostic
    title: Text
    why: Text
    cost: Text | None
    snippets: Mapping[str, Snippet]
    avoid_when: Mapping[str, Any] | None
    warning: Text | None
    outcomes: tuple[Outcome, ...] = ()  # no outcome for a cause: unproven, never advised for it
    already_on: Mapping[str, Any] | None = None  # the text shows the fix is already applied
    pointless_when: Mapping[str, Any] | None = None  # nothing left to learn/do: not shown
    # fixes this one already does (as their special case): once it is advice, a report's
    # table does not offer them as further fixes
    covers: tuple[str, ...] = ()


@record
class Option:
    """One answer to an interview question and the facts it sets."""

    value: str
    label: Text
    sets: Mapping[str, Any]
    # offered only where this holds (a condition on the facts, like a question's `ask_when`):
    # an answer that means nothing for the error at hand is not offered (optional)
    offer_when: Mapping[str, Any] | None = None


@record
class Question:
    """An interview question."""

    id: str
    kind: str  # select | text
    purpose: str  # diagnose | tailor
    text: Text
    help: Text | None
    fact: str | None
    ask_when: Mapping[str, Any] | None
    for_each: str | None
    limit: int
    options: tuple[Option, ...]
    # a few words naming what the question asks about ("the framework", "框架"), used where
    # a sentence is assembled around an answer instead of the whole question (optional)
    short: Text | None = None
    # answers the search toward a fix counts this question as saving (engine's
    # question_toward_a_fix): a question a user answers at a glance, whose answers lead to the
    # root cause's own fix rather than a flag, goes first when it costs at most this much more
    head_start: float = 0.0


@record
class KnowledgeBase:
    """Everything the rules say, validated and frozen."""

    families: tuple[Family, ...]
    extractors: tuple[Extractor, ...]
    hints: tuple[FactRule, ...]
    causes: tuple[Cause, ...]
    fixes: Mapping[str, Fix]
    questions: tuple[Question, ...]
    messages: Mapping[str, Text]
    line_prefixes: tuple[re.Pattern, ...] = ()
    library_paths: re.Pattern = re.compile(r"(?!)")
    error_line: re.Pattern = re.compile(r"(?!)")  # the last line of a Python traceback
    engine: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[Note, ...] = ()
    # lexicon.yaml as read (plain data); wizard/reading/understand.py compiles it on first use, so
    # commands that never read a sentence pay nothing for it
    lexicon: Mapping[str, Any] = field(default_factory=dict)
    # snippet {name} -> ((when, value), ...): the first whose `when` holds fills it in
    placeholders: Mapping[str, tuple[tuple[Mapping[str, Any], str], ...]] = field(
        default_factory=dict
    )

    def family(self, family_id: str) -> Family | None:
        return next((f for f in self.families if f.id == family_id), None)

    def cause(self, cause_id: str) -> Cause | None:
        return next((c for c in self.causes if c.id == cause_id), None)

    def question(self, question_id: str) -> Question | None:
        return next((q for q in self.questions if q.id == question_id), None)


# ---------------------------------------------------------------------------- locating


def builtin_rules_dir() -> Path:
    """The rules shipped with the package: `ddp_doctor/rules` in a wheel, `rules/` in a checkout."""
    from pathlib import Path

    return Path(_builtin_rules_dir())


def _builtin_rules_dir() -> str:
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # above knowledge/
    packaged = os.path.join(package, "rules")
    return packaged if os.path.isdir(packaged) else os.path.join(os.path.dirname(package), "rules")


def _rule_paths(rules_dir: str) -> list[str]:
    """The rules files of a folder. A FIFO or a device named like one is listed too, so that
    reading it gives a clear error instead of being skipped in silence."""
    paths = [os.path.join(rules_dir, name) for name in RULE_FILES]
    paths = [p for p in paths if os.path.lexists(p)]
    messages = os.path.join(rules_dir, MESSAGES_DIR)
    if os.path.isdir(messages):
        from .rules_guard import RulesProblem, list_yaml

        try:
            paths += [os.path.join(messages, name) for name in list_yaml(messages)]
        except RulesProblem as exc:
            raise RulesError(messages, None, exc.message) from None
    return paths


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _read_rules_text(path: str) -> str:
    """A rules file's text; RulesError for anything but a readable regular UTF-8 file."""
    from .rules_guard import RulesProblem, read_text

    try:
        return read_text(path)
    except RulesProblem as exc:
        raise RulesError(path, exc.line, exc.message) from None
    except OSError as exc:
        raise RulesError(path, None, f"cannot read: {exc.strerror or exc}") from None


# ---------------------------------------------------------------------------- reading


def _read_yaml(path: str, trusted: bool = True) -> Any:
    """Parse one rules file. An untrusted (user) file is first checked for nesting and alias
    expansion (rules_guard.check_structure): parsing is safe, building a bomb is not."""
    import yaml  # lazily: a cache hit never needs PyYAML

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml is ~11x faster
    text = _read_rules_text(path)
    try:
        if not trusted:
            from .rules_guard import RulesProblem, check_structure

            try:
                check_structure(text, loader)
            except RulesProblem as exc:
                raise RulesError(path, exc.line, exc.message) from None
        return yaml.load(text, Loader=loader)  # noqa: S506 - a SafeLoader, never the full one
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise RulesError(path, line, f"invalid YAML: {problem}") from None
    except ValueError:  # an integer of over 4300 digits: Python refuses to convert it
        raise RulesError(path, None, TOO_LONG_NUMBER) from None


TOO_LONG_NUMBER = "a number with more than 4300 digits (put it in quotes if it is text)"


def _merge_by_id(base: list, extra: list) -> list:
    """User rules extend the built-in ones; an entry with an existing id replaces it."""
    ids = {item.get("id"): i for i, item in enumerate(base) if isinstance(item, dict)}
    merged = list(base)
    for item in extra:
        key = item.get("id") if isinstance(item, dict) else None
        if key is not None and key in ids:
            merged[ids[key]] = item
        else:
            merged.append(item)
    return merged


def _read_raw(rules_dirs: list[str]) -> dict[str, Any]:
    """Read and merge every rules file; validate each file before merging.

    The user's files (after the first folder) are read and checked first: a hostile one
    (an alias bomb, a catastrophic regex) is refused before any time goes into parsing the
    built-in rules."""
    from .rules_check import check_rules  # only a cache miss validates

    files = [
        (path, number == 0)  # the built-in rules; the tests hold them to the same checks
        for number, rules_dir in enumerate(rules_dirs)
        for path in _rule_paths(rules_dir)
    ]
    parsed: dict[str, Any] = {}
    patterns: list[str] = []
    for path, trusted in sorted(files, key=lambda item: item[1]):  # the user's first
        data = _read_yaml(path, trusted)
        regexes: list[tuple[tuple, str]] = []
        problem = check_rules(_kind(path), data, regexes)
        patterns += [pattern for _, pattern in regexes]
        if problem is None and not trusted:
            problem = _slow_regex(regexes)
        if problem is not None:
            where, message = problem
            raise RulesError(path, _line_of(path, where), message)
        parsed[path] = data
    raw: dict[str, Any] = {"messages": {}}
    for path, trusted in files:
        data, kind = parsed[path], _kind(path)
        problem = _check_texts(kind, data, raw["messages"], trusted)
        if problem is not None:
            where, message = problem
            raise RulesError(path, _line_of(path, where), message)
        if kind == "messages":
            for key, value in data.items():
                raw["messages"][key] = value
            continue
        for section, value in data.items():
            if isinstance(value, list) and isinstance(raw.get(section), list):
                raw[section] = _merge_by_id(raw[section], value)
            elif isinstance(value, dict) and isinstance(raw.get(section), dict):
                raw[section] = {**raw[section], **value}
            else:
                raw[section] = value
    _check_references(raw, rules_dirs)
    raw = _tidy_chinese(raw)
    from .regex_pieces import required_pieces

    raw[PIECES_KEY] = {p: required_pieces(p, re.MULTILINE) for p in dict.fromkeys(patterns)}
    raw[CODE_KEY] = _regex_codes(raw, patterns)
    return raw


def _regex_codes(raw: dict[str, Any], patterns: list[str]) -> dict[str, Any]:
    """What `re` compiles each rules regex to (regex_code.py), by flags and pattern, for the
    flags the loader compiles it with (`_build`): multi-line, but the line prefixes and the
    library and error lines."""
    from .regex_code import regex_code

    single = [*(raw.get("line_prefixes") or []), raw.get("library_paths"), raw.get("error_line")]
    wanted = {(re.MULTILINE, p) for p in patterns} | {(0, p) for p in single if p}
    codes: dict[str, Any] = {}
    for flags, pattern in sorted(wanted):
        stored = regex_code(pattern, flags)
        if stored is not None:
            codes[f"{int(flags)}/{pattern}"] = stored
    return codes


def _kind(path: str) -> str:
    """`messages` for a file in messages/, else the file's name: `signatures`, `causes`..."""
    if os.path.basename(os.path.dirname(path)) == MESSAGES_DIR:
        return "messages"
    return os.path.splitext(os.path.basename(path))[0]


def _check_texts(kind: str, data: Any, messages: dict, trusted: bool) -> tuple | None:
    """Every {en, zh} text may use only the placeholders the code fills in for it: for an
    interface message those of the built-in message it replaces, elsewhere TEXT_FIELDS."""
    from .rules_guard import TEXT_FIELDS, placeholder_problem, placeholders

    def texts(node: Any, where: tuple):
        if isinstance(node, dict):
            if isinstance(node.get("en"), str) and isinstance(node.get("zh"), str):
                yield where, node
                return
            for key, value in node.items():
                yield from texts(value, where + (key,))
        elif isinstance(node, list):
            for index, value in enumerate(node):
                yield from texts(value, where + (index,))

    # fixes.yaml may also use the placeholders it defines (and the built-in ones)
    defined = set(data.get("placeholders") or {}) if isinstance(data, dict) else set()
    for where, text in texts(data, ()):
        if kind != "messages":
            allowed = TEXT_FIELDS | defined
        elif trusted:
            allowed = placeholders(text["en"]) | placeholders(text["zh"])
        else:  # a user's message may use what the built-in one it replaces uses
            builtin = messages.get(where[0]) if where else None
            allowed = placeholders(builtin["en"]) if isinstance(builtin, dict) else set()
        for lang in ("en", "zh"):
            problem = placeholder_problem(text[lang], allowed)
            if problem is not None:
                return where + (lang,), problem
    return None


# seconds each user regex may take on runs of its own characters when rules are loaded
REGEX_BUDGET = 1.0


def _slow_regex(regexes: list[tuple[tuple, str]]) -> tuple | None:
    from .regex_guard import PROBE_LENGTH, runs_in_time

    for where, pattern in regexes:
        if not runs_in_time(pattern, re.MULTILINE, REGEX_BUDGET):
            return where, (
                f"regex {pattern!r} takes more than {REGEX_BUDGET:g} s, or time that grows "
                f"faster than its input, on runs of {PROBE_LENGTH} repeated characters "
                "(catastrophic backtracking: the rules' "
                "regexes must stay linear); start it with a literal word, avoid .* twice"
            )
    return None


def _line_of(path: str, where: tuple) -> int | None:
    """The line of the YAML node at `where` (a path of keys and indices), for error messages."""
    import yaml

    try:
        node = yaml.compose(_read_rules_text(path), Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RulesError, RecursionError):
        return None
    line = node.start_mark.line + 1 if node is not None else None
    for step in where:
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if k.value == step), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int):
            match = node.value[step] if step < len(node.value) else None
        else:
            match = None
        if match is None:
            break
        node, line = match, match.start_mark.line + 1
    return line


# A folded YAML scalar (`>-`) joins its lines with a space, which is right in English and a
# stray gap in Chinese ("梯度。 把它删掉"): drop a space that sits between two CJK characters
# or next to full-width punctuation ("梯度， DDP"). Done once, before the rules are cached.
_CJK = "\u3000-\u303f\u4e00-\u9fff\uff00-\uffef"
# compiled on first use (a cache miss): its 24,000-character classes take ~10 ms to compile
_FULL_PUNCT = "\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\u201c\u201d\u2018\u2019"
_CJK_GAP = f"(?<=[{_CJK}]) (?=[{_CJK}])|(?<=[{_FULL_PUNCT}]) | (?=[{_FULL_PUNCT}])"


def _tidy_chinese(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            key: (
                re.sub(_CJK_GAP, "", value)
                if key == "zh" and isinstance(value, str)
                else _tidy_chinese(value)
            )
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_tidy_chinese(item) for item in node]
    return node


def _check_references(raw: dict[str, Any], rules_dirs: list[str]) -> None:
    """Cross-file checks: every fix a cause names or a fix covers exists, every outcome names
    a cause."""
    fix_ids = {f["id"] for f in raw.get("fixes", [])}
    cause_ids = {c["id"] for c in raw.get("causes", [])}
    for fix in raw.get("fixes", []):
        for position, outcome in enumerate(fix.get("outcomes", [])):
            if outcome["cause"] not in cause_ids:
                path, line = _locate_fix(rules_dirs, fix["id"], ("outcomes", position, "cause"))
                raise RulesError(
                    path,
                    line,
                    f"fix {fix['id']!r}: outcome names unknown cause {outcome['cause']!r}",
                )
    for fix in raw.get("fixes", []):
        for position, covered in enumerate(fix.get("covers", [])):
            if covered not in fix_ids:
                path, line = _locate_fix(rules_dirs, fix["id"], ("covers", position))
                raise RulesError(path, line, f"fix {fix['id']!r}: covers unknown fix {covered!r}")
    for index, cause in enumerate(raw.get("causes", [])):
        for fix_id in cause.get("fixes", []):
            if fix_id not in fix_ids:
                path = _find_file(rules_dirs, "causes.yaml")
                line = _line_of(path, ("causes", index, "fixes")) if path else None
                raise RulesError(
                    path or "causes.yaml",
                    line,
                    f"cause {cause['id']!r} names unknown fix {fix_id!r}",
                )
    _check_settings_references(raw, rules_dirs)


def _check_settings_references(raw: dict[str, Any], rules_dirs: list[str]) -> None:
    """A family's `tip` names a message; the engine's `default_family` names a family."""
    families = raw.get("families", [])
    for index, family in enumerate(families):
        tip = family.get("tip")
        if tip is not None and tip not in raw["messages"]:
            path = _find_file(rules_dirs, "signatures.yaml") or "signatures.yaml"
            line = _line_of(path, ("families", index, "tip"))
            raise RulesError(
                path, line, f"family {family['id']!r}: tip names unknown message {tip!r}"
            )
    default = raw.get("engine", {}).get("default_family")
    if default is not None and default not in {f["id"] for f in families}:
        path = _find_file(rules_dirs, "causes.yaml") or "causes.yaml"
        line = _line_of(path, ("engine", "default_family"))
        raise RulesError(path, line, f"engine: default_family names unknown family {default!r}")


def _locate_fix(rules_dirs: list[str], fix_id: str, inside: tuple) -> tuple[str, int | None]:
    """The file and line of something inside fix `fix_id` (the last rules dir defining it)."""
    for rules_dir in reversed(rules_dirs):
        path = os.path.join(rules_dir, "fixes.yaml")
        if not os.path.isfile(path):
            continue
        fixes = (_read_yaml(path) or {}).get("fixes") or []
        for index, fix in enumerate(fixes):
            if isinstance(fix, dict) and fix.get("id") == fix_id:
                return path, _line_of(path, ("fixes", index, *inside))
    return "fixes.yaml", None


def _find_file(rules_dirs: list[str], name: str) -> str | None:
    found = [os.path.join(d, name) for d in rules_dirs if os.path.isfile(os.path.join(d, name))]
    return found[-1] if found else None


# ---------------------------------------------------------------------------- caching


# Bump when the loader changes what it stores (e.g. _tidy_chinese), so old caches miss.
# 4: a header line with the payload's size and digest; 5: PIECES_KEY; 6: marshal; 7: CODE_KEY;
# 8: PACKED_KEY; 9: the lexicon's `names` packed with it; 10: the payload checked by CRC-32
CACHE_FORMAT = 10
CACHE_CODEC = "marshal"  # rules_cache.py
# what regex_pieces.py found for each regex, stored beside the rules in the cache
PIECES_KEY = "regex_pieces"
# what `re` compiles each regex to (regex_code.py), by "flags/pattern"
CODE_KEY = "regex_code"
# lexicon.yaml's sections, packed into one value (lexicon_pack.py, imported only when the
# cache is written or the lexicon read)
PACKED_KEY = "lexicon_packed"


def _cache_key(paths: list[str]) -> str:
    # BLAKE2 from its own small module: `hashlib` would first load OpenSSL (~2 ms)
    try:
        from _blake2 import blake2b
    except ImportError:  # an interpreter without it
        from hashlib import blake2b
    from .regex_code import code_format

    # marshal's format may change with the Python version (and the regex engine's code with
    # its MAGIC): one cache per version, so two interpreters sharing a cache folder never
    # take turns rebuilding it
    python = f"{sys.version_info[:2]}/{code_format()}"
    digest = blake2b(f"{__version__}/{CACHE_FORMAT}/{python}".encode(), digest_size=16)
    for path in paths:
        digest.update(path.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(_file_stamp(path))
    return digest.hexdigest()


def _file_stamp(path: str) -> bytes:
    """What tells one version of a rules file from another without reading it, as Python's
    own bytecode cache does (reading and hashing every file cost ~1 ms of each run): any
    write changes its size or its modification time (nanoseconds), and its change time,
    which no user can set back; a file replaced by another (a checkout, an upgrade) has a
    new inode too. A FIFO or a device gets a stamp of its own, and the cache then misses,
    so reading it says what is wrong."""
    try:
        info = os.stat(path)
    except OSError:  # the cache misses; reading it again says what is wrong
        return b"<unreadable>"
    stamp = (
        info.st_mode,
        info.st_size,
        info.st_mtime_ns,
        info.st_ctime_ns,
        info.st_ino,
        info.st_dev,
    )
    return ("/".join(map(str, stamp)) + "\0").encode()


def _cache_name(paths: list[str]) -> str:
    return f"rules-{_cache_key(paths)}.{CACHE_CODEC}"


def _load_raw_cached(rules_dirs: list[str]) -> tuple[dict[str, Any], bool]:
    """The merged raw rules, and whether they came from the cache (see rules_cache.py)."""
    paths = [p for d in rules_dirs for p in _rule_paths(d)]
    if os.environ.get("DDP_DOCTOR_NO_CACHE"):
        return _read_raw(rules_dirs), False
    from . import rules_cache

    name = _cache_name(paths)
    raw = rules_cache.read(name, CACHE_FORMAT, CACHE_CODEC)
    if _plausible(raw):
        return raw, True
    raw = _read_raw(rules_dirs)
    _write_cache(name, raw)
    return raw, False


def _write_cache(name: str, raw: dict[str, Any]) -> None:
    from . import rules_cache
    from .lexicon_pack import pack

    # the lexicon packed: a report never reads it (lexicon_pack.py)
    rules_cache.write(name, CACHE_FORMAT, pack(raw, LEXICON_SECTIONS, PACKED_KEY), CACHE_CODEC)


_LIST_SECTIONS = ("families", "extractors", "hints", "causes", "fixes", "questions", "notes")


def _plausible(raw: Any) -> bool:
    """The shape the loader stores; whatever else a cache holds (`null`, `[]`, `{}`, a
    planted or truncated file) is rebuilt from the YAML."""
    if not isinstance(raw, dict) or not isinstance(raw.get("messages"), dict):
        return False
    if not all(isinstance(raw.get(s), list) for s in ("families", "causes", "fixes")):
        return False
    if not isinstance(raw.get(PACKED_KEY, b""), bytes):
        return False
    for section in _LIST_SECTIONS:
        items = raw.get(section, [])
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            return False
    return all(
        isinstance(t, dict) and isinstance(t.get("en"), str) and isinstance(t.get("zh"), str)
        for t in raw["messages"].values()
    )


# ---------------------------------------------------------------------------- building


def _text(value: Any) -> Text | None:
    return Text(en=value["en"], zh=value["zh"]) if value else None


class _Messages(Mapping):
    """The interface texts, read-only, each made a `Text` when first asked for: a run shows
    a few dozen of the ~600, and building them all is a millisecond of start-up."""

    def __init__(self, raw: dict[str, Any]):
        self._raw = raw
        self._made: dict[str, Text] = {}

    def __getitem__(self, key: str) -> Text:
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = _text(self._raw[key])
        return made

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __contains__(self, key: object) -> bool:
        return key in self._raw

    def __repr__(self) -> str:
        return f"<{len(self)} messages>"


def _frozen(mapping: Mapping | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping or {}))


def _examples(items: list | None) -> tuple[Example, ...]:
    return tuple(Example(text=i.get("text"), file=i.get("file")) for i in items or [])


class LazyPattern:
    """A rules regex compiled the first time it could match.

    A run uses a few of the rules' ~70 regexes (those of the families whose anchors the log
    holds, the extractors, the hints), and compiling all of them costs more start-up time
    than the rest of a `triage --json` run. Most of those it reaches cannot match the text
    at hand: a regex whose every match contains one of a few known pieces of text (`pieces`,
    found by regex_pieces.py when the cache was built) is not compiled while the texts it
    is asked about lack them all. After the first compile, `search` & co. are the compiled
    pattern's own bound methods, so matching costs nothing extra."""

    _METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "split")

    def __init__(self, pattern: str, flags: int = 0, pieces: tuple[str, ...] = (), code=None):
        self.pattern, self.flags, self.pieces = pattern, flags, pieces
        self.code = code  # what `re` compiled it to when the cache was built (regex_code.py)

    def could_match(self, string: str) -> bool:
        """False when `string` lacks every piece a match needs (so nothing can match)."""
        return not self.pieces or any(piece in string for piece in self.pieces)

    # the text lacks the piece every match holds: no match, without compiling
    def search(self, string: str, *args: Any) -> Any:
        if not self.could_match(string):
            return None
        return self._compiled().search(string, *args)

    def match(self, string: str, *args: Any) -> Any:
        if not self.could_match(string):
            return None
        return self._compiled().match(string, *args)

    def finditer(self, string: str, *args: Any) -> Any:
        if not self.could_match(string):
            return iter(())
        return self._compiled().finditer(string, *args)

    def findall(self, string: str, *args: Any) -> list:
        if not self.could_match(string):
            return []
        return self._compiled().findall(string, *args)

    def __getattr__(self, name: str) -> Any:  # only for what is not set yet
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._compiled(), name)

    def _compiled(self) -> re.Pattern:
        compiled = None
        if self.code is not None:
            from .regex_code import from_code

            compiled = from_code(self.pattern, self.code)
        if compiled is None:
            try:
                compiled = re.compile(self.pattern, self.flags)
            except re.error:  # rules_check compiled it before it was cached: a hand-edited cache
                compiled = re.compile(r"(?!)")
        for method in self._METHODS:  # instance attributes: found before the methods above
            setattr(self, method, getattr(compiled, method))
        self.groupindex = compiled.groupindex
        self.groups = compiled.groups
        self._compiled = lambda: compiled
        return compiled

    def __repr__(self) -> str:
        return f"LazyPattern({self.pattern!r})"


class _Found:
    """What the cache holds about each regex: its pieces (regex_pieces.py) and its code
    (regex_code.py); whatever is not a dict (a hand-edited cache) counts as nothing."""

    def __init__(self, raw: dict[str, Any]):
        pieces, codes = raw.get(PIECES_KEY), raw.get(CODE_KEY)
        self.pieces = pieces if isinstance(pieces, dict) else {}
        self.codes = codes if isinstance(codes, dict) else {}


def _compile(pattern: str, found: _Found, flags: int = re.MULTILINE) -> re.Pattern:
    pieces = found.pieces.get(pattern)
    if not (isinstance(pieces, (list, tuple)) and all(isinstance(p, str) and p for p in pieces)):
        pieces = []  # none found, or a hand-edited cache: compile when first used
    code = found.codes.get(f"{int(flags)}/{pattern}")
    return LazyPattern(pattern, flags, tuple(pieces), code)  # type: ignore[return-value]


def _fact_rule(raw: dict[str, Any], found: _Found) -> FactRule:
    return FactRule(_compile(raw["pattern"], found), _frozen(raw["sets"]))


def _family(raw: dict[str, Any], found: _Found) -> Family:
    examples = raw.get("examples", {})
    return Family(
        id=raw["id"],
        severity=raw.get("severity", "error"),
        title=_text(raw["title"]),
        summary=_text(raw["summary"]),
        anchors=tuple(raw["anchors"]),
        patterns=tuple(_compile(p, found) for p in raw["patterns"]),
        sets=_frozen(raw.get("sets")),
        facts=tuple(_fact_rule(r, found) for r in raw.get("facts", [])),
        positive=_examples(examples.get("positive")),
        negative=_examples(examples.get("negative")),
        tip=raw.get("tip"),
    )


def _extractor(raw: dict[str, Any], found: _Found) -> Extractor:
    return Extractor(raw["field"], _compile(raw["pattern"], found), raw.get("split"))


def _evidence(raw: dict[str, Any]) -> Evidence:
    return Evidence(_frozen(raw["when"]), float(raw["weight"]), _text(raw.get("reason")))


def _cause(raw: dict[str, Any], baseline: Mapping[str, Any]) -> Cause:
    return Cause(
        id=raw["id"],
        title=_text(raw["title"]),
        explanation=_text(raw["explanation"]),
        prior=float(raw.get("prior", 0.0)),
        evidence=tuple(_evidence(e) for e in raw.get("evidence", [])),
        fixes=tuple(raw.get("fixes", [])),
        typical=tuple(_truths(baseline, case.get("truths")) for case in raw.get("cases") or []),
    )


def _truths(baseline: Mapping[str, Any], truths: Mapping[str, Any] | None) -> Mapping[str, Any]:
    merged = {**baseline, **(truths or {})}
    return _frozen({k: v for k, v in merged.items() if v is not None})


def _snippet(raw: dict[str, Any]) -> Snippet:
    return Snippet(
        raw.get("language", "python"), _text(raw["code"]), bool(raw.get("any_framework"))
    )


def _fix(raw: dict[str, Any]) -> Fix:
    return Fix(
        id=raw["id"],
        kind=raw.get("kind", "fix"),
        title=_text(raw["title"]),
        why=_text(raw["why"]),
        cost=_text(raw.get("cost")),
        snippets=_frozen({name: _snippet(s) for name, s in raw.get("snippets", {}).items()}),
        avoid_when=_frozen(raw["avoid_when"]) if raw.get("avoid_when") else None,
        warning=_text(raw.get("warning")),
        pointless_when=_frozen(raw["pointless_when"]) if raw.get("pointless_when") else None,
        outcomes=tuple(_outcome(o) for o in raw.get("outcomes", [])),
        already_on=_frozen(raw["already_on"]) if raw.get("already_on") else None,
        covers=tuple(raw.get("covers") or ()),
    )


def _outcome(raw: dict[str, Any]) -> Outcome:
    return Outcome(
        raw["cause"],
        _frozen(raw.get("when")),
        raw["result"],
        raw["scenario"],
        _text(raw.get("note")),
    )


def _option(raw: dict[str, Any]) -> Option:
    offer_when = _frozen(raw["offer_when"]) if raw.get("offer_when") else None
    return Option(str(raw["value"]), _text(raw["label"]), _frozen(raw.get("sets")), offer_when)


def _question(raw: dict[str, Any]) -> Question:
    return Question(
        id=raw["id"],
        kind=raw.get("kind", "select"),
        purpose=raw.get("purpose", "diagnose"),
        text=_text(raw["text"]),
        help=_text(raw.get("help")),
        fact=raw.get("fact"),
        ask_when=_frozen(raw["ask_when"]) if raw.get("ask_when") else None,
        for_each=raw.get("for_each"),
        limit=int(raw.get("limit", 1)),
        options=tuple(_option(o) for o in raw.get("options", [])),
        short=_text(raw.get("short")),
        head_start=float(raw.get("head_start", 0.0)),
    )


def _note(raw: dict[str, Any]) -> Note:
    return Note(raw["id"], _frozen(raw["when"]), _text(raw["text"]))


def _lexicon(raw: dict[str, Any], dirs: tuple[str, ...]) -> Mapping[str, Any]:
    """lexicon.yaml's sections; from the cache, packed until first read (lexicon_pack.py)."""
    if PACKED_KEY not in raw:
        return _frozen({k: raw[k] for k in LEXICON_SECTIONS if k in raw})
    return _PackedLexicon(raw[PACKED_KEY], lambda: _read_raw(list(dirs)))


class _PackedLexicon(Mapping):
    """The lexicon's sections, unpacked (lexicon_pack.unpack) when first read; `reread`
    gives the raw rules from the YAML files when the packed copy is damaged."""

    def __init__(self, packed: bytes, reread):
        self._packed, self._reread = packed, reread
        self._data: dict[str, Any] | None = None

    def _unpacked(self) -> dict[str, Any]:
        if self._data is None:
            from .lexicon_pack import unpack

            self._data = unpack(self._packed, LEXICON_SECTIONS, self._reread)
        return self._data

    def __getitem__(self, key: str) -> Any:
        return self._unpacked()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._unpacked())

    def __len__(self) -> int:
        return len(self._unpacked())

    def __repr__(self) -> str:
        return "<lexicon, packed>" if self._data is None else repr(self._data)


def _build(raw: dict[str, Any], dirs: tuple[str, ...] = ()) -> KnowledgeBase:
    """The knowledge base from validated raw data: one builder per object above (`dirs`:
    the rules folders, to read the lexicon again if its packed copy is damaged)."""
    fixes = {f["id"]: _fix(f) for f in raw.get("fixes", [])}
    messages = _Messages(raw.get("messages", {}))
    found = _Found(raw)
    return KnowledgeBase(
        families=tuple(_family(f, found) for f in raw.get("families", [])),
        extractors=tuple(_extractor(e, found) for e in raw.get("extractors", [])),
        hints=tuple(_fact_rule(h, found) for h in raw.get("hints", [])),
        causes=tuple(_cause(c, raw.get("case_baseline") or {}) for c in raw.get("causes", [])),
        fixes=_frozen(fixes),
        questions=tuple(_question(q) for q in raw.get("questions", [])),
        messages=messages,
        line_prefixes=tuple(_compile(p, found, 0) for p in raw.get("line_prefixes", [])),
        notes=tuple(_note(n) for n in raw.get("notes", [])),
        library_paths=_compile(raw.get("library_paths") or r"(?!)", found, 0),
        error_line=_compile(raw.get("error_line") or r"(?!)", found, 0),
        engine=_frozen(raw.get("engine")),
        lexicon=_lexicon(raw, dirs),
        placeholders=_frozen(
            {
                name: tuple(
                    (
                        _frozen(e.get("when")),
                        _text(e["value"]) if isinstance(e["value"], dict) else e["value"],
                    )
                    for e in entries
                )
                for name, entries in (raw.get("placeholders") or {}).items()
            }
        ),
    )


_LOADED: dict[tuple[str, ...], KnowledgeBase] = {}


def load(extra_dir: str | os.PathLike | None = None) -> KnowledgeBase:
    """The built-in rules, extended by `extra_dir` (or $DDP_DOCTOR_RULES) when given."""
    dirs = [_builtin_rules_dir()]
    extra = extra_dir or os.environ.get(RULES_ENV)
    if extra:
        extra_path = os.fspath(extra)
        if not os.path.isdir(extra_path):
            raise RulesError(extra_path, None, "rules directory not found")
        dirs.append(extra_path)
    key = tuple(dirs)
    if key not in _LOADED:
        raw, cached = _load_raw_cached(dirs)
        try:
            _LOADED[key] = _build(raw, key)
        except (KeyError, TypeError, ValueError, AttributeError, re.error, RecursionError):
            if not cached:
                raise
            # a cache of the right shape that does not build (planted, or written by a
            # different loader): read the YAML again and replace it
            raw = _read_raw(dirs)
            _write_cache(_cache_name([p for d in dirs for p in _rule_paths(d)]), raw)
            _LOADED[key] = _build(raw, key)
        _FOLDERS[id(_LOADED[key])] = key
    return _LOADED[key]


_FOLDERS: dict[int, tuple[str, ...]] = {}  # id(knowledge base) -> the rules folders it came from


def example_paths(kb: KnowledgeBase) -> list[str]:
    """The examples files (rules/examples.yaml, then the user's) of a loaded knowledge base."""
    folders = _FOLDERS.get(id(kb), (_builtin_rules_dir(),))
    paths = [os.path.join(folder, EXAMPLES_FILE) for folder in folders]
    return [p for p in paths if os.path.lexists(p)]


def example_cache_key(paths: list[str]) -> str:
    return _cache_key(paths)


def load_examples(paths: list[str]) -> dict[str, Any]:
    """The examples files read (safe_load), each checked against the schema, and merged: the
    user's lists add to the built-in ones, their `calibration` settings replace its."""
    from .rules_check import check_rules

    merged: dict[str, Any] = {}
    for number, path in enumerate(paths):
        data = _read_yaml(path, trusted=number == 0)
        problem = check_rules("examples", data)
        if problem is not None:
            where, message = problem
            raise RulesError(path, _line_of(path, where), message)
        for section, value in (data or {}).items():
            if isinstance(value, list):
                merged[section] = [*merged.get(section, []), *value]
            elif isinstance(value, dict):
                merged[section] = {**merged.get(section, {}), **value}
    return _tidy_chinese(merged)
