"""A user rules folder (`--rules`, DDP_DOCTOR_RULES) can hold anything (issues 14, 15.9):
every hostile one ends at load time in one clear line naming the file (and the line) with
exit code 4, never a hang, a traceback or gigabytes of memory.

The time-outs are generous safety nets (20 s), not speed checks; bench/ records the real
times (well under a second)."""

from __future__ import annotations

import os

import pytest
from helpers import cli

LINE = "a" * 40 + "!\n"  # what a catastrophic regex chokes on


def triage_with(rules, tmp_path, text: str = LINE):
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    return cli("triage", "--rules", str(rules), "-", input=text, env=env, timeout=20)


def assert_rules_error(result, *parts: str) -> None:
    assert result.returncode == 4, (result.returncode, result.err)
    assert "Traceback" not in result.err
    assert len(result.err.strip().splitlines()) == 1, result.err
    for part in parts:
        assert part in result.err, result.err


def test_alias_bomb_in_notes_when_is_refused(tmp_path):
    """Conditions aliased ten deep in notes[].when (each `any` of ten of the previous one):
    valid by the schema, and 10^9 conditions once expanded."""
    rules = tmp_path / "rules"
    rules.mkdir()
    levels = ["        - &c0 {family: x}"]
    for i in range(1, 10):
        levels.append(f"        - &c{i} {{any: [" + ", ".join([f"*c{i - 1}"] * 10) + "]}")
    (rules / "signatures.yaml").write_text(
        "families: []\nnotes:\n  - id: bomb\n    when:\n      any:\n"
        + "\n".join(levels)
        + "\n    text: {en: boom, zh: 炸}\n",
        encoding="utf-8",
    )
    result = triage_with(rules, tmp_path)
    assert_rules_error(result, "signatures.yaml:", "aliases")


def test_deep_nesting_is_refused(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "signatures.yaml").write_text(
        "families: []\nnotes:\n  - id: deep\n    when: {a: " + "[" * 5000 + "]" * 5000 + "}\n"
        "    text: {en: deep, zh: 深}\n",
        encoding="utf-8",
    )
    result = triage_with(rules, tmp_path)
    assert_rules_error(result, "signatures.yaml:", "nest")


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(\w+\s?)+$", r"(a|aa)+$", r"(.*a){12}"])
def test_catastrophic_user_regex_is_refused(tmp_path, pattern):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "signatures.yaml").write_text(
        f"families: []\nhints:\n  - pattern: '{pattern}'\n    sets: {{framework: plain}}\n",
        encoding="utf-8",
    )
    result = triage_with(rules, tmp_path)
    assert_rules_error(result, "signatures.yaml:3", "hints[0].pattern", "catastrophic backtracking")


def test_slow_regex_the_shape_check_cannot_see_is_refused(tmp_path):
    """No nested repeat, yet cubic on a long line: the timed probe at load time sees it."""
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "signatures.yaml").write_text(
        "families: []\nhints:\n  - pattern: 'a.*a.*a.*b'\n    sets: {framework: plain}\n",
        encoding="utf-8",
    )
    result = triage_with(rules, tmp_path)
    assert_rules_error(result, "signatures.yaml:3", "catastrophic")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_in_messages_is_refused(tmp_path):
    rules = tmp_path / "rules"
    (rules / "messages").mkdir(parents=True)
    os.mkfifo(rules / "messages" / "extra.yaml")
    result = triage_with(rules, tmp_path)
    assert_rules_error(result, "extra.yaml", "not a regular file")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_dev_zero_link_in_messages_is_refused(tmp_path):
    rules = tmp_path / "rules"
    (rules / "messages").mkdir(parents=True)
    os.symlink("/dev/zero", rules / "messages" / "zero.yaml")
    result = triage_with(rules, tmp_path)
    assert_rules_error(result, "zero.yaml", "not a regular file")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads everything")
def test_unreadable_messages_folder_is_reported(tmp_path):
    rules = tmp_path / "rules"
    (rules / "messages").mkdir(parents=True)
    os.chmod(rules / "messages", 0)
    try:
        result = triage_with(rules, tmp_path)
    finally:
        os.chmod(rules / "messages", 0o700)
    assert_rules_error(result, "messages", "cannot list")


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{file} is binary", "unknown placeholder {file}"),
        ("{path is binary", "broken placeholder"),
        ("{0} is binary", "unknown placeholder {0}"),
        ("{path:>9999999999} is binary", "format spec"),
        ("{path.__class__} is binary", "unknown placeholder"),
        ("{path!r} is binary", "conversion"),
    ],
)
def test_message_placeholders_are_checked_at_load(tmp_path, template, expected):
    rules = tmp_path / "rules"
    (rules / "messages").mkdir(parents=True)
    (rules / "messages" / "mine.yaml").write_text(
        f"err_binary:\n  en: '{template}'\n  zh: '{template}'\n", encoding="utf-8"
    )
    result = triage_with(rules, tmp_path, text="\x00\x01\x02\x03" * 4000)
    assert_rules_error(result, "mine.yaml:", expected)


def test_a_format_spec_in_a_fix_text_is_refused(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "fixes.yaml").write_text(
        "fixes:\n  - id: my_fix\n    kind: diagnostic\n"
        "    title: {en: 'Look at {module:>9999999999}', zh: '看 {module}'}\n"
        "    why: {en: because, zh: 因为}\n"
        "    snippets: {pytorch: {code: {en: pass, zh: pass}}}\n",
        encoding="utf-8",
    )
    result = triage_with(rules, tmp_path)
    assert_rules_error(result, "fixes.yaml:4", "format spec")


def test_user_message_keeping_the_builtin_placeholders_still_works(tmp_path):
    rules = tmp_path / "rules"
    (rules / "messages").mkdir(parents=True)
    (rules / "messages" / "mine.yaml").write_text(
        "err_binary:\n  en: 'binary junk in {path}'\n  zh: '{path} 是二进制'\n", encoding="utf-8"
    )
    result = triage_with(rules, tmp_path, text="\x00\x01\x02\x03" * 4000)
    assert result.returncode == 3
    assert "binary junk in <stdin>" in result.err


# ---------------------------------------------------------------------------- issue 22, item 26


@pytest.mark.parametrize(
    "pattern", [r"(?s).*.*.*!", r"[\s\S]*[\s\S]*[\s\S]*!", r"(?=(a+))+b", r"(?s).*.*[^a]"]
)
def test_slow_hint_regexes_that_match_a_bang_are_refused(tmp_path, pattern):
    """The timed probe's runs end in `!` and in other characters: a regex ending in `!`
    (which matches the old probe at once) is still seen to be cubic."""
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "signatures.yaml").write_text(
        f"families: []\nhints:\n  - pattern: '{pattern}'\n    sets: {{framework: plain}}\n",
        encoding="utf-8",
    )
    result = triage_with(rules, tmp_path, text="x" * 3000 + "\n")
    assert_rules_error(result, "signatures.yaml:3", "takes more than")


def _placeholders(rules, body: str) -> None:
    rules.mkdir()
    (rules / "fixes.yaml").write_text("fixes: []\nplaceholders:\n" + body, encoding="utf-8")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("  evil:\n    - value: '{module:>99999999}'\n", "format spec"),
        ("  evil:\n    - value: {en: '{module!r}', zh: x}\n", "conversion"),
        ("  evil:\n    - value: '{module.__class__}'\n", "unknown placeholder"),
        ("  evil:\n    - value: 'x{evil}{evil}'\n", "uses itself (evil -> evil)"),
        ("  a:\n    - value: 'x{b}'\n  b:\n    - value: {en: 'y{a}', zh: y}\n", "a -> b -> a"),
        (
            "  a:\n    - value: '" + "{b}" * 300 + "'\n  b:\n    - value: '" + "{c}" * 300 + "'\n"
            "  c:\n    - value: '" + "x" * 300 + "'\n",
            "longer than",
        ),
    ],
)
def test_a_rules_files_own_placeholder_values_are_checked(tmp_path, body, expected):
    rules = tmp_path / "rules"
    _placeholders(rules, body)
    result = triage_with(rules, tmp_path)
    assert_rules_error(result, "fixes.yaml:", expected)


def test_placeholder_values_that_use_each_other_sensibly_still_load(tmp_path):
    rules = tmp_path / "rules"
    _placeholders(rules, "  mine:\n    - value: 'wrap({device_ids}) around {module}'\n")
    result = triage_with(rules, tmp_path)
    assert result.returncode == 1, result.err  # loaded; the line holds no DDP error


@pytest.mark.parametrize(
    ("topic", "expected"),
    [
        ("{id: mine, fix: static_graph, turned_off: nowhere, match: [myflag]}", "'nowhere'"),
        ("{id: mine, fix: static_graph}", "no words to match"),
        (
            "{id: other, fix: static_graph, turned_off: mine, match: [myflag]}\n"
            "  - {id: mine, fix: static_graph}",
            "implies no fact",
        ),
    ],
)
def test_a_topic_that_can_never_be_asked_about_is_refused(tmp_path, topic, expected):
    """A topic's `turned_off` must name a topic that implies a fact (the text turns to it by
    saying that fact), and a topic with no words of its own must be one some topic turns off
    to: otherwise the question it stands for would never be read."""
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "lexicon.yaml").write_text(f"topics:\n  - {topic}\n", encoding="utf-8")
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    result = cli("ask", "--rules", str(rules), "what does myflag cost?", env=env, timeout=20)
    assert_rules_error(result, "lexicon.yaml", "topic 'mine'", expected)
