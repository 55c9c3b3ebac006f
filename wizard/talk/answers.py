"""The `--answers` file: load it, apply it, write it, and the command that reproduces a run.

An answers file is a flat YAML (or JSON) mapping `question id: answer`, e.g.

    backward_calls: many
    module_use__aux_head: never

plus, from a session, what the user typed whose facts no answer can say (`said`: the
description, read before the answers; `said_later`: details typed after the report, read
after them), one line each, so that the file gives the session's diagnosis again.

Loading is defensive: the file may be a FIFO, huge, deeply nested or an alias bomb. The
YAML event stream is checked before anything is built, so none of these can hang, exhaust
memory or recurse: only a single mapping of scalars is accepted.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ..common.errors import ExitCode, UserError
from ..output.reproduce import reproduce_command  # noqa: F401  (the session imports it from here)
from ..reading.inputs import open_input

MAX_ANSWERS_BYTES = 1 << 20  # a real answers file has a few dozen lines
SAID, SAID_LATER = "said", "said_later"  # typed text, read as the session read it


def load_answers(path: str) -> dict[str, str]:
    """`question id -> answer` from the file at `path`, or a UserError."""
    import yaml

    text = _read_text(path)
    try:
        _check_shape(yaml.parse(text, Loader=yaml.SafeLoader), path)
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        raise UserError(ExitCode.INPUT, "err_answers_format", path=path) from None
    except ValueError:  # an integer of over 4300 digits: Python refuses to convert it
        raise UserError(ExitCode.INPUT, "err_answers_long_number", path=path) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UserError(ExitCode.INPUT, "err_answers_format", path=path)
    return {str(key): answer_value(value) for key, value in data.items()}


def _read_text(path: str) -> str:
    stream = open_input(path)
    try:
        raw = stream.read(MAX_ANSWERS_BYTES + 1)
    except OSError as exc:
        raise UserError(ExitCode.INPUT, "err_unreadable", path=path, reason=exc.strerror) from None
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    if len(raw) > MAX_ANSWERS_BYTES:
        raise UserError(ExitCode.INPUT, "err_answers_too_large", path=path, limit=MAX_ANSWERS_BYTES)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UserError(ExitCode.INPUT, "err_unreadable", path=path, reason=str(exc)) from None


def _check_shape(events, path: str) -> None:
    """Refuse anything but one mapping of scalars, from the parser's events (no recursion)."""
    import yaml

    depth = 0
    for event in events:
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise UserError(ExitCode.INPUT, "err_answers_format", path=path)
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > 1 or isinstance(event, yaml.SequenceStartEvent):
                raise UserError(ExitCode.INPUT, "err_answers_format", path=path)
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def answer_value(value: Any) -> str:
    if isinstance(value, bool):  # YAML reads a bare yes/no as a boolean
        return "yes" if value else "no"
    return str(value)


def apply_answers(kb, facts: Mapping[str, Any], answers: Mapping[str, str], modules=()):
    """The facts after the answers; a UserError (usage) names unknown ids or values."""
    from ..reasoning.engine import resolve_answers

    facts, problems = resolve_answers(kb, facts, answers, modules)
    if problems:
        raise UserError(ExitCode.USAGE, "err_answers_unknown", items=", ".join(problems))
    return facts


def modules_in_answers(kb, answers: Mapping[str, str]) -> tuple[str, ...]:
    """The module names per-module answers speak of (`revealed_module:aux_head`).

    Without a paste nothing names the modules, yet the answers file of a session does; the
    names are taken from it, so the command printed after a session works as printed (issue
    22, item 17). A key whose question is not per-module names no module.
    """
    per_module = {q.id for q in kb.questions if q.for_each is not None}
    names: list[str] = []
    for key in answers:
        question, colon, module = str(key).partition(":")
        if colon and question in per_module and module and module not in names:
            names.append(module)
    return tuple(names)


def answers_for_file(  # noqa: PLR0913
    kb,
    text_facts: Mapping[str, Any],
    given: Mapping[str, str],
    description: str = "",
    said_later: Sequence[str] = (),
) -> dict:
    """The answers that reproduce a session with `--answers`.

    Facts the description set are written as the answers that set them, so the file shows
    them in the interview's words; answers given in the interview win. When a fact of the
    description has no answer that says it alone (`find_unused_parameters=True` read without
    "and it still fails"), the description is kept too (`said`); details typed after the
    report always are (`said_later`), since they were read after the answers.
    """
    from ..reasoning.readings import explain_facts

    answers: dict[str, str] = {}
    carried: set[str] = set()
    for question, option in explain_facts(kb, text_facts):
        if question.for_each is None:
            answers[question.id] = option.value
            carried |= set(option.sets)
    if (
        not set(facts_said(kb, {}, _whole(description), description=True)) <= carried
    ):  # a fact no answer says
        answers = {SAID: description.strip(), **answers}
    answers.update(given)
    if said_later:  # read after the answers, as typed: a later detail wins over an answer
        answers[SAID_LATER] = "\n".join(said_later)
    return answers


def split_said(answers: Mapping[str, str]) -> tuple[list[str], dict[str, str], list[str]]:
    """(the description, the answers proper, the details said after, a line each) of a loaded
    answers file: the session read the description whole and each detail on its own."""
    rest = {k: v for k, v in answers.items() if k not in (SAID, SAID_LATER)}
    return _whole(answers.get(SAID)), rest, _lines(answers.get(SAID_LATER))


def _whole(text: str | None) -> list[str]:
    return [text.strip()] if text and text.strip() else []


def _lines(text: str | None) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def facts_said(
    kb, facts: Mapping[str, Any], lines: Sequence[str], description: bool = False
) -> dict[str, Any]:
    """`facts` after reading each typed line as the session did, the later line winning; a
    `description` also by its nearest examples (`text_leans`), as the session reads one."""
    from ..reasoning.engine import facts_from_text
    from .readers import facts_with_leans

    facts = dict(facts)
    for line in lines:
        found = facts_from_text(kb, line)
        facts.update(facts_with_leans(kb, found, line) if description else found)
    return facts


def dump_answers(answers: Mapping[str, str]) -> str:
    """The text of an answers file."""
    import yaml

    return yaml.safe_dump(dict(answers), allow_unicode=True, sort_keys=False)
