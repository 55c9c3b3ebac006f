"""Every fact a rule's condition names can be set by something: a question, the paste, a
sentence. A `when` on a fact nothing sets keeps an outcome pending forever (the fix is then
never advised), or a piece of evidence that can never fire.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from ddp_doctor.knowledge.kb import load
from ddp_doctor.reading.triage import triage_text

RULES = Path(__file__).resolve().parents[1] / "rules"
KB = load()


def _yaml(name: str):
    return yaml.safe_load((RULES / name).read_text(encoding="utf-8"))


def _keys(condition) -> set[str]:
    """The fact names a condition tests (`any:` lists included)."""
    if not isinstance(condition, dict):
        return set()
    names = set()
    for key, value in condition.items():
        if key == "any":
            for sub in value:
                names |= _keys(sub)
        else:
            names.add(key)
    return names


def settable() -> set[str]:
    """Every fact some source can set."""
    names = set()
    for question in _yaml("questions.yaml")["questions"]:
        for option in question.get("options", []):
            names |= set(option.get("sets") or {})
    signatures = _yaml("signatures.yaml")
    for family in signatures["families"]:
        names |= set(family.get("sets") or {})
        names.add(f"seen_{family['id']}")  # triage: that family's error is in the paste
        for rule in family.get("facts") or []:
            names |= set(rule["sets"])
    for hint in signatures.get("hints") or []:
        names |= set(hint["sets"])
    lexicon = _yaml("lexicon.yaml")
    for reading in lexicon["readings"]:
        names |= set(reading.get("sets") or {}) | set(reading.get("negated") or {})
    for topic in lexicon.get("topics") or []:
        names |= set(topic.get("implies") or {})
    # what triage itself computes, read off real pastes; `run` sets under_run and the
    # debug level the job ran with (wizard/run/wrapper.py)
    for path in sorted((Path(__file__).parent / "fixtures" / "real").glob("*.txt")):
        names |= set(triage_text(KB, path.read_text(encoding="utf-8")).facts)
    return names | {"under_run", "debug_level"}


def conditions() -> list[tuple[str, dict]]:
    """(where, condition) for every condition in the rules."""
    found = []
    for cause in _yaml("causes.yaml")["causes"]:
        for e in cause.get("evidence", []):
            found.append((f"cause {cause['id']} evidence", e["when"]))
    fixes = _yaml("fixes.yaml")
    for fix in fixes["fixes"]:
        for key in ("avoid_when", "pointless_when", "already_on"):
            if fix.get(key):
                found.append((f"fix {fix['id']} {key}", fix[key]))
        for outcome in fix.get("outcomes", []):
            if outcome.get("when"):
                found.append((f"fix {fix['id']} outcome {outcome['scenario']}", outcome["when"]))
    for name, entries in (fixes.get("placeholders") or {}).items():
        for entry in entries:
            if entry.get("when"):
                found.append((f"placeholder {name}", entry["when"]))
    for question in _yaml("questions.yaml")["questions"]:
        if question.get("ask_when"):
            found.append((f"question {question['id']} ask_when", question["ask_when"]))
    for note in _yaml("signatures.yaml").get("notes") or []:
        found.append((f"note {note['id']}", note["when"]))
    return found


def test_every_condition_names_facts_that_something_sets():
    can_set = settable()
    unset = [
        f"{where}: {sorted(_keys(condition) - can_set)}"
        for where, condition in conditions()
        if _keys(condition) - can_set
    ]
    assert not unset, "facts nothing sets:\n" + "\n".join(unset)


def test_the_check_sees_a_fact_nothing_sets():
    assert "family" in settable()
    assert "static_graph_enabled" in settable()
    assert "a_fact_no_rule_sets" not in settable()
    assert _keys({"any": [{"a": 1}, {"b": 2}], "c": 3}) == {"a", "b", "c"}


def test_a_topics_context_names_readings_of_the_lexicon():
    """`context` (lexicon.yaml topics) lists the readings that prose about the fix in general
    may hold without telling a set-up; an id no reading has would never match, so it is dead."""
    lexicon = _yaml("lexicon.yaml")
    readings = {reading["id"] for reading in lexicon["readings"]}
    for topic in lexicon.get("topics") or []:
        assert set(topic.get("context") or ()) <= readings, (topic["id"], topic.get("context"))
