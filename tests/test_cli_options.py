"""Issue 13, command line: every common option works before or after the command (or is
refused), and --help / usage errors speak Chinese with --lang zh or a Chinese locale.
Driven through `python -m ddp_doctor` as a user runs it."""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import subprocess
import sys

import pytest
import yaml
from helpers import FIXTURES, ROOT, cli, has_chinese

ERROR = str(FIXTURES / "versions" / "torch_1_10_flag_on.txt")
COMMANDS = ("triage", "ask", "questions", "run", "probe")
ENGLISH_ARGPARSE = ("usage:", "options:", "positional arguments", "error:", "show this help")


def is_chinese_report(text: str) -> bool:
    return has_chinese(text) and "Likely causes" not in text


@pytest.mark.parametrize(
    "args",
    [
        ("--lang", "zh", "triage", ERROR),
        ("triage", "--lang", "zh", ERROR),
        ("triage", ERROR, "--lang=zh"),
    ],
)
def test_lang_works_before_and_after_the_command(args):
    done = cli(*args, "--format", "markdown")
    assert done.returncode == 0, done.err
    assert is_chinese_report(done.out)


def test_the_value_written_after_the_command_wins():
    done = cli("--lang", "zh", "triage", ERROR, "--lang", "en", "--format", "markdown")
    assert done.returncode == 0 and "Likely causes" in done.out and not has_chinese(done.out)


@pytest.mark.parametrize(
    "args",
    [
        ("--json", "triage", ERROR),
        ("triage", ERROR, "--json"),
        ("--format", "json", "triage", ERROR),
        ("--json", "ask", "backward twice"),
        ("--format", "json", "questions"),
        ("questions", "--json"),
    ],
)
def test_json_and_format_work_before_and_after_the_command(args):
    done = cli(*args)
    assert done.returncode == 0, done.err
    json.loads(done.out)  # one JSON document, nothing else


def test_ask_takes_paste_before_the_command_too():
    done = cli("--paste", ERROR, "--json", "ask", "backward twice")
    assert done.returncode == 0, done.err
    assert json.loads(done.out)["findings"][0]["source"].endswith("torch_1_10_flag_on.txt")


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("--answers", "a.yaml", "triage", ERROR), "--answers"),
        (("--save", "r.md", "triage", ERROR), "--save"),
        (("--paste", ERROR, "questions"), "--paste"),
    ],
)
def test_interview_options_with_a_command_are_refused(args, option):
    done = cli(*args)
    assert done.returncode == 2
    assert option in done.err.strip().splitlines()[-1]
    assert done.out == ""


def help_of(*args: str, env: dict | None = None) -> str:
    done = cli(*args, "--help", env=env)
    assert done.returncode == 0, done.err
    return done.out


@pytest.mark.parametrize("command", ("", *COMMANDS))
def test_help_in_english_names_every_option(command):
    text = help_of(*filter(None, [command]))
    assert text.startswith("usage: ddp-doctor")
    assert "cli_" not in text  # no message key leaks
    assert "--lang" in text and "--format" in text


@pytest.mark.parametrize("command", ("", *COMMANDS))
def test_help_in_chinese(command):
    text = help_of(*filter(None, [command]), "--lang", "zh")
    assert text.startswith("用法：ddp-doctor")
    assert "cli_" not in text
    assert not [w for w in ENGLISH_ARGPARSE if w in text], text
    assert "界面语言" in text  # the --lang line is translated


def test_help_follows_a_chinese_locale():
    text = help_of(env={"LANG": "zh_CN.UTF-8", "LC_ALL": "", "LANGUAGE": ""})
    assert text.startswith("用法：") and "诊断" in text


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--lang", "zh", "--format", "xml", "triage"), "无效的取值"),
        (("--lang", "zh", "triage", "--bogus"), "无法识别"),
        (("ask", "--lang", "zh"), "缺少必需的输入项"),
        (("--lang", "zh", "probe", "--steps", "x", "m:f"), "不是整数"),
        (("--lang", "zh", "--answers", "a.yaml", "triage"), "只用于问答诊断"),
    ],
)
def test_usage_errors_in_chinese(args, words):
    done = cli(*args)
    assert done.returncode == 2
    last = done.err.strip().splitlines()[-1]
    assert last.startswith("ddp-doctor") and "：错误：" in last and words in last, done.err
    assert not [w for w in ENGLISH_ARGPARSE if w in done.err], done.err


def test_usage_error_in_english_stays_argparse_english():
    done = cli("--format", "xml", "triage")
    assert done.returncode == 2
    assert "ddp-doctor: error: argument --format: invalid choice: 'xml'" in done.err


def test_help_imports_no_heavy_module():
    cli("questions")  # a normal run first, so the rules cache exists as for a user
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ddp_doctor", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "ddp_doctor.cli.main" in imported  # the measurement works
    assert not imported & {"yaml", "rich", "questionary", "prompt_toolkit", "torch"}


def _imported_by(*argv: str) -> set[str]:
    """The modules a run of `ddp-doctor ARGV` imports, rules cache warm as for a user."""
    cli("questions")
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ddp_doctor", *argv],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}


# what a report run never needs (issue 23: start-up near its floors): PyYAML only when the
# rules cache is stale, the terminal libraries only for the terminal, gettext's `locale`
# only for help, the schema checker and the sentence readers never
WHAT_A_REPORT_LEAVES = {
    "yaml",
    "questionary",
    "prompt_toolkit",
    "torch",
    "locale",
    "hashlib",
    "shutil",
    "pygments",
    "ddp_doctor.knowledge.rules_check",
    "ddp_doctor.reading.understand",
    "ddp_doctor.reading.retrieve",
    "ddp_doctor.talk",
}


def test_triage_json_imports_only_what_it_needs():
    imported = _imported_by(
        "triage", "--json", str(ROOT / "examples" / "torchrun-unused-module.log")
    )
    assert "ddp_doctor.reasoning.engine" in imported  # the measurement works
    # nor rich, nor the wrapping by display width the terminal report needs
    assert not imported & (WHAT_A_REPORT_LEAVES | {"rich", "ddp_doctor.common.wrap"})


def test_the_rich_report_imports_rich_but_nothing_else_heavy():
    example = str(ROOT / "examples" / "torchrun-unused-module.log")
    imported = _imported_by("triage", "--format", "rich", example)
    assert "rich.console" in imported
    assert not imported & WHAT_A_REPORT_LEAVES
    # nor json: the rules cache's header is plain words, its payload marshal (issue 23)
    assert "json" not in imported


def _argparse_msgids() -> set[str]:
    tree = ast.parse(inspect.getsource(argparse))
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("_", "ngettext"):
            ids |= {a.value for a in node.args if isinstance(a, ast.Constant)}
    return ids


def test_argparse_translations_are_keyed_by_argparses_real_english():
    messages = yaml.safe_load((ROOT / "rules" / "messages" / "cli.yaml").read_text("utf-8"))
    ours = {k: v["en"] for k, v in messages.items() if k.startswith("argparse_")}
    stale = {k: en for k, en in ours.items() if en not in _argparse_msgids()}
    assert not stale
