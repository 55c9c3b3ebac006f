"""The rules files validate against rules/schema.json, and broken rules fail clearly."""

from __future__ import annotations

import json
import shutil

import jsonschema
import pytest
import yaml
from ddp_doctor.knowledge import kb as kb_module
from ddp_doctor.knowledge.rules_check import check_rules
from helpers import ROOT, cli

RULES = ROOT / "rules"
SCHEMA = json.loads((RULES / "schema.json").read_text())
FILES = sorted(RULES.glob("*.yaml")) + sorted((RULES / "messages").glob("*.yaml"))


def _kind(path):
    return "messages" if path.parent.name == "messages" else path.stem


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_rules_file_matches_schema(path):
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    schema = {**SCHEMA, "$ref": f"#/$defs/{_kind(path)}"}
    schema.pop("anyOf")
    jsonschema.validate(data, schema, format_checker=jsonschema.FormatChecker())
    assert check_rules(_kind(path), data) is None  # the run-time checker agrees


def _fix(**broken) -> dict:
    """A fixes file of one fix, valid but for the keys given."""
    fix = {
        "id": "f",
        "title": {"en": "a", "zh": "乙"},
        "why": {"en": "a", "zh": "乙"},
        "snippets": {"pytorch": {"code": {"en": "x", "zh": "x"}}},
    }
    return {"fixes": [{**fix, **broken}]}


@pytest.mark.parametrize(
    ("broken", "expected"),
    [
        (
            {
                "causes": [
                    {
                        "id": "x",
                        "title": {"en": "a"},
                        "explanation": {"en": "a", "zh": "乙"},
                        "fixes": ["find_unused_parameters"],
                    }
                ]
            },
            "missing required key 'zh'",
        ),
        (
            {
                "causes": [
                    {
                        "id": "Bad Id",
                        "title": {"en": "a", "zh": "乙"},
                        "explanation": {"en": "a", "zh": "乙"},
                        "fixes": ["x"],
                    }
                ]
            },
            "not a valid id",
        ),
        (_fix(kind="maybe"), "'maybe' is not one of"),
        (_fix(outcomes=[{"cause": "c", "result": "wrong", "scenario": "s"}]), "needs a note"),
        (
            _fix(outcomes=[{"cause": "c", "result": "fine", "scenario": "s"}]),
            "'fine' is not one of works, error, wrong",
        ),
    ],
)
def test_runtime_checker_agrees_with_jsonschema_on_broken_rules(broken, expected):
    kind = next(iter(broken))
    schema = {**SCHEMA, "$ref": f"#/$defs/{kind}"}
    schema.pop("anyOf")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)
    problem = check_rules(kind, broken)
    assert problem is not None and expected in problem[1]


def test_broken_user_rules_name_the_file_and_line(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "causes.yaml").write_text(
        "causes:\n  - id: my_cause\n    title: {en: Mine, zh: 我的}\n"
        "    explanation: {en: Why, zh: 原因}\n    prior: high\n    fixes: [static_graph]\n",
        encoding="utf-8",
    )
    result = cli("triage", "--rules", str(rules), "-", input="x", env={"DDP_DOCTOR_NO_CACHE": "1"})
    assert result.returncode == 4
    assert "causes.yaml:5" in result.err and "my_cause" in result.err and "prior" in result.err
    assert "Traceback" not in result.err


def test_invalid_yaml_names_the_line(tmp_path):
    rules = tmp_path / "rules"
    shutil.copytree(RULES, rules)
    (rules / "fixes.yaml").write_text("fixes:\n  - id: a\n   title: [unclosed\n", encoding="utf-8")
    with pytest.raises(kb_module.RulesError) as info:
        kb_module._read_raw([rules])
    assert "fixes.yaml:" in str(info.value) and "invalid YAML" in str(info.value)


def test_unknown_fix_reference_is_reported(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "causes.yaml").write_text(
        "causes:\n  - id: my_cause\n    title: {en: Mine, zh: 我的}\n"
        "    explanation: {en: Why, zh: 原因}\n    fixes: [no_such_fix]\n",
        encoding="utf-8",
    )
    result = cli("triage", "--rules", str(rules), "-", input="x", env={"DDP_DOCTOR_NO_CACHE": "1"})
    assert result.returncode == 4 and "no_such_fix" in result.err


def test_user_rules_can_add_a_family_without_code(tmp_path):
    """Adding an error family is a YAML change: a user rules dir teaches triage a new one."""
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "signatures.yaml").write_text(
        yaml.safe_dump(
            {
                "families": [
                    {
                        "id": "my_error",
                        "title": {"en": "My error", "zh": "我的错误"},
                        "summary": {"en": "Mine.", "zh": "我的。"},
                        "anchors": ["FrobnicatorFailure"],
                        "patterns": ["FrobnicatorFailure: \\w+"],
                        "examples": {
                            "positive": [{"text": "FrobnicatorFailure: boom"}],
                            "negative": [{"text": "all good"}],
                        },
                    }
                ]
            },
            allow_unicode=True,
        ),
        encoding="utf-8",
    )
    result = cli(
        "triage",
        "--rules",
        str(rules),
        "--json",
        "-",
        input="log\nFrobnicatorFailure: boom\n",
        env={"DDP_DOCTOR_NO_CACHE": "1"},
    )
    assert result.returncode == 0, result.err
    assert json.loads(result.out)["findings"][0]["family"] == "my_error"


def test_outcome_naming_an_unknown_cause_is_reported_with_its_line(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "fixes.yaml").write_text(
        "fixes:\n  - id: my_fix\n    title: {en: Mine, zh: 我的}\n    why: {en: Why, zh: 原因}\n"
        "    outcomes:\n      - {cause: no_such_cause, result: works, scenario: s}\n"
        "    snippets: {pytorch: {code: {en: x, zh: x}}}\n",
        encoding="utf-8",
    )
    result = cli("triage", "--rules", str(rules), "-", input="x", env={"DDP_DOCTOR_NO_CACHE": "1"})
    assert result.returncode == 4
    assert "fixes.yaml:6" in result.err and "no_such_cause" in result.err


def test_a_fix_covering_an_unknown_fix_is_reported_with_its_line(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "fixes.yaml").write_text(
        "fixes:\n  - id: my_fix\n    title: {en: Mine, zh: 我的}\n    why: {en: Why, zh: 原因}\n"
        "    covers: [find_unused_parameters, no_such_fix]\n"
        "    snippets: {pytorch: {code: {en: x, zh: x}}}\n",
        encoding="utf-8",
    )
    result = cli("triage", "--rules", str(rules), "-", input="x", env={"DDP_DOCTOR_NO_CACHE": "1"})
    assert result.returncode == 4
    assert "fixes.yaml:5" in result.err and "no_such_fix" in result.err
