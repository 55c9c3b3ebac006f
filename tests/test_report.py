"""The report as a user reads it: through the installed command, on an 80- or 40-column
terminal, in English and Chinese.

- the short report puts the first fix's code on the first screen (24 lines at 80 columns);
- code is never broken by us: every snippet line is a whole line of the output;
- Chinese wraps between characters (a run of CJK is not one long word) and nothing is lost;
- a reason says "You said" only for an answer; a fact from the paste is "the error shows".
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from ddp_doctor.common.wrap import line_spans, text_width
from ddp_doctor.knowledge.kb import load
from ddp_doctor.output.render import _Out, build_report
from ddp_doctor.reading.triage import triage_text
from ddp_doctor.reasoning import engine
from helpers import FIXTURES, ROOT

KB = load()
CLI = Path(sys.executable).with_name("ddp-doctor")
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
REAL = sorted((FIXTURES / "real").glob("*.txt"))
# one fixture per error family, so every family's report is looked at
BY_FAMILY: dict[str, Path] = {}
for _path in REAL + sorted((FIXTURES / "versions").glob("*.txt")):
    _result = triage_text(KB, _path.read_text(encoding="utf-8"))
    if _result.findings:
        BY_FAMILY.setdefault(_result.findings[0].family, _path)
FAMILY_FILES = [pytest.param(p, id=f) for f, p in sorted(BY_FAMILY.items())]


def run_cli(*args: str, width: int = 80) -> str:
    """The installed `ddp-doctor`, its rich output as a terminal `width` columns wide shows it."""
    exe = [str(CLI)] if CLI.exists() else [sys.executable, "-m", "ddp_doctor"]
    env = {**os.environ, "COLUMNS": str(width), "LINES": "24", "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    env.pop("DDP_DOCTOR_LANG", None)
    proc = subprocess.run(
        [*exe, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60
    )
    assert proc.returncode in (0, 1), proc.stderr
    return ANSI.sub("", proc.stdout)


def report_for(path: Path, lang: str):
    return build_report(KB, engine.diagnose(KB, triage_text(KB, path.read_text("utf-8"))), lang)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("path", FAMILY_FILES)
def test_the_first_fix_is_on_the_first_screen(path, lang):
    report = report_for(path, lang)
    if not report.fixes:
        pytest.skip("no fix for this family")
    lines = run_cli("triage", "--lang", lang, "--format", "rich", str(path)).splitlines()
    code = report.fixes[0].code.splitlines()
    where = [i for i, line in enumerate(lines) if line.rstrip() == code[0].rstrip()]
    assert where, "\n".join(lines)
    assert where[0] + min(len(code), 3) <= 24, "\n".join(lines[:30])
    for code_line in code:  # and the code is whole (see below for 40 columns)
        assert code_line.rstrip() in {line.rstrip() for line in lines}


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("path", FAMILY_FILES)
def test_code_is_never_broken_across_lines(path, lang, width=40):
    """A snippet copied from the screen must run: each of its lines is one output line."""
    report = report_for(path, lang)
    shown = run_cli("triage", "--lang", lang, "--format", "rich", str(path), width=width)
    lines = {line.rstrip() for line in shown.splitlines()}
    for view in report.fixes[:1]:
        for code_line in view.code.splitlines():
            assert code_line.rstrip() in lines, f"{code_line!r} broken in:\n{shown}"


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("path", FAMILY_FILES)
def test_markdown_keeps_code_whole(path, lang):
    report = report_for(path, lang)
    shown = run_cli("triage", "--lang", lang, "--format", "markdown", str(path))
    for view in report.fixes + report.diagnostics:
        assert view.code in shown


# ---------------------------------------------------------------------------- Chinese wrapping


def _paragraphs_zh() -> list[str]:
    texts = [f.why.zh for f in KB.fixes.values()] + [f.cost.zh for f in KB.fixes.values() if f.cost]
    texts += [c.explanation.zh for c in KB.causes] + [f.summary.zh for f in KB.families]
    return [t for t in texts if "{" not in t]


def _first_unit(text: str) -> str:
    """What must move to the next line together: one CJK character (with the closing
    punctuation after it), or a Latin word."""
    match = re.match(r"[\u4e00-\u9fff][，。、；：？！）」』”’》…]*|[^\s\u4e00-\u9fff]+", text)
    return match.group(0) if match else text[:1]


@pytest.mark.parametrize("width", [40, 80])
def test_chinese_lines_are_not_broken_early_and_nothing_is_lost(width):
    for text in _paragraphs_zh():
        out = io.StringIO()
        from rich.console import Console

        console = Console(file=out, width=width, color_system=None, highlight=False)
        _Out(KB, "zh", console).para(text, indent=2)
        lines = [line[2:] for line in out.getvalue().rstrip("\n").split("\n")]
        # nothing lost: the lines put back together are the text (spaces at breaks dropped)
        assert re.sub(r"\s", "", "".join(lines)) == re.sub(r"[\s`]", "", text)
        for line, after in zip(lines, lines[1:]):
            assert text_width(line) <= width - 2, line
            unit = _first_unit(after)
            # Chinese and Latin text are spaced apart (glossary), and a space is also dropped
            latin = re.search(r"[\x21-\x7e]$", line) or re.match(r"[\x21-\x7e]", after)
            gap = 1 if latin else 0
            # the next line's first unit would not have fit: the break is not early
            assert text_width(line) + gap + text_width(unit) > width - 2, (line, after)


def test_line_spans_break_at_spaces_and_between_chinese_characters():
    assert [("hello world"[a:b]) for a, b in line_spans("hello world", 8)] == ["hello", "world"]
    text = "梯度同步没有完成，下一次前向报错。"
    spans = line_spans(text, 10)
    assert [text[a:b] for a, b in spans] == ["梯度同步没", "有完成，下", "一次前向报", "错。"]


# ---------------------------------------------------------------------------- who said it


def test_a_fact_from_the_paste_is_what_the_error_shows_not_what_you_said():
    path = (
        FIXTURES / "real" / "two_backward_retain_graph.find_unused_parameters__nodebug__spawn.txt"
    )
    result = triage_text(KB, path.read_text("utf-8"))
    assert result.facts.get("backward_calls") == "many"  # the paste settles it, nobody answered
    for lang, said, not_said in (
        ("en", "The error shows", "You said"),
        ("zh", "根据报错", "你确认"),
    ):
        report = build_report(KB, engine.diagnose(KB, result), lang)
        reasons = " ".join(c.reason for c in report.causes)
        assert said in reasons and not_said not in reasons


def test_an_answer_is_what_you_said():
    facts, _ = engine.resolve_answers(
        KB, {"family": "unfinished_reduction"}, {"backward_calls": "many"}
    )
    diagnosis = engine.diagnose(KB, None, facts, {"backward_calls": "many"})
    assert build_report(KB, diagnosis, "en").causes[0].reason.startswith("You said")
    assert build_report(KB, diagnosis, "zh").causes[0].reason.startswith("你确认")


def test_a_framework_without_its_own_spelling_is_named_as_people_name_it():
    facts = {"family": "unfinished_reduction", "framework": "hf_trainer"}
    diagnosis = engine.diagnose(KB, None, facts, {"framework": "hf_trainer"})
    for lang in ("en", "zh"):
        report = build_report(KB, diagnosis, lang)
        from ddp_doctor.output.render import to_markdown

        markdown = to_markdown(KB, report)
        if any(v.framework_fallback for v in report.fixes + report.diagnostics):
            assert "Hugging Face Trainer" in markdown
        assert "hf_trainer" not in re.sub(r"```.*?```|`[^`]*`", "", markdown, flags=re.S)


# ---------------------------------------------------------------------------- no needless advice

INDICES_ONLY = FIXTURES / "versions" / "torch_1_10_flag_on.txt"  # bare indices, no names
NAMES = FIXTURES / "real" / "unused_module__info__spawn.txt"  # PyTorch names the parameters
DEBUG = "TORCH_DISTRIBUTED_DEBUG=INFO"


def test_debug_names_are_suggested_only_when_the_error_lacks_them():
    assert DEBUG in run_cli("triage", "--all", "--format", "markdown", str(INDICES_ONLY))
    for fmt in ("markdown", "rich", "json"):
        assert DEBUG not in run_cli("triage", "--all", "--format", fmt, str(NAMES))


def test_debug_names_are_not_suggested_under_run_which_sets_it():
    job = f"import sys; sys.stderr.write(open({str(INDICES_ONLY)!r}).read()); sys.exit(1)"
    exe = [str(CLI)] if CLI.exists() else [sys.executable, "-m", "ddp_doctor"]
    proc = subprocess.run(
        [
            *exe,
            "run",
            "--lang",
            "en",
            "--format",
            "markdown",
            "--all",
            "--",
            sys.executable,
            "-c",
            job,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    diagnosis = proc.stderr[len(INDICES_ONLY.read_text(encoding="utf-8")) :]
    assert "# ddp-doctor diagnosis" in diagnosis
    assert DEBUG not in diagnosis


# ---------------------------------------------------------------------------- no internal ids


def _code_spans_in_rules() -> set[str]:
    """Identifiers that appear as code in the rules' texts: API names, not internal ids."""

    spans: set[str] = set()
    for file in (ROOT / "rules").rglob("*.yaml"):
        if file.name == "examples.yaml":  # users' sentences as written, stray backticks too:
            continue  # no text of the rules, and its pairs of backticks are not code spans
        spans |= set(
            re.findall(
                r"[A-Za-z_][\w.]*", " ".join(re.findall(r"`([^`]+)`", file.read_text("utf-8")))
            )
        )
    return spans


def _internal_ids() -> list[str]:
    api = _code_spans_in_rules()
    ids = {f.id for f in KB.families} | {c.id for c in KB.causes} | set(KB.fixes)
    framework = KB.question("framework")
    ids |= {o.value for o in framework.options if o.value != "unsure"}
    ids = {i for i in ids if i not in api}
    # a family id reads like words ("unfinished reduction"); cause ids do too, but as plain
    # English ("an unused module"), so only the families' spaced forms count as leaks
    spaced = {f.id.replace("_", " ") for f in KB.families if f.id in ids}
    return sorted(ids | spaced | {"seed article", "种子文章"})


LEAKS = re.compile("|".join(rf"(?<![\w-]){re.escape(i)}(?![\w-])" for i in _internal_ids()))


def _prose_of(text: str, code_lines: set[str]) -> str:
    """What a user reads as sentences: without code blocks, code spans and code lines."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"`[^`]*`", "", text)
    return "\n".join(line for line in text.splitlines() if line.rstrip() not in code_lines)


def _all_reports():
    """Every family (one paste each), every framework (by answers), both languages."""
    for family, path in sorted(BY_FAMILY.items()):
        yield family, engine.diagnose(KB, triage_text(KB, path.read_text("utf-8")))
    for option in KB.question("framework").options:
        facts, _ = engine.resolve_answers(
            KB, {"family": "unfinished_reduction"}, {"framework": option.value}
        )
        yield option.value, engine.diagnose(KB, None, facts, {"framework": option.value})


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_internal_id_in_any_report(lang):
    import json

    from ddp_doctor.output.render import print_rich, to_json_data, to_markdown
    from rich.console import Console

    for name, diagnosis in _all_reports():
        report = build_report(KB, diagnosis, lang)
        code = {
            line.rstrip()
            for v in (*report.fixes, *report.diagnostics, *(r.fix for r in report.conditional))
            for line in v.code.splitlines()
        }
        out = io.StringIO()
        print_rich(KB, report, Console(file=out, width=80, color_system=None), full=True)
        data = to_json_data(report)
        human = [data["family_title"] or ""] + list(data["notes"])
        human += [c[k] for c in data["causes"] for k in ("title", "reason")]
        human += [
            f[k] or ""
            for f in data["fixes"] + data["diagnostics"]
            for k in ("title", "why", "cost")
        ]
        human += [w[k] or "" for w in data["warnings"] for k in ("title", "warning")]
        for fmt, text in (
            ("rich", out.getvalue()),
            ("markdown", to_markdown(KB, report)),
            ("json", "\n".join(human)),
        ):
            leaked = LEAKS.findall(_prose_of(text, code))
            assert not leaked, f"{name} {lang} {fmt}: {sorted(set(leaked))}"
        json.dumps(data)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_installed_command_leaks_no_id_either(lang):
    path = BY_FAMILY["unfinished_reduction"]
    report = report_for(path, lang)
    code = {
        line.rstrip() for v in report.fixes + report.diagnostics for line in v.code.splitlines()
    }
    for fmt in ("rich", "markdown"):
        shown = run_cli("triage", "--all", "--lang", lang, "--format", fmt, str(path))
        assert not LEAKS.findall(_prose_of(shown, code)), shown


def test_the_leak_check_can_fail():
    assert LEAKS.findall("hf_trainer has no spelling of its own")
    assert LEAKS.findall("你遇到的是 unfinished reduction 报错，见种子文章")
    assert not LEAKS.findall("Hugging Face Trainer has no setting of its own")


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out"
        " waiting 1800000ms for recv operation to complete",
        "RuntimeError: Expected to mark a variable ready only once. This error is caused by one of",
    ],
)
def test_the_quoted_error_line_is_not_cut_at_a_dot_in_a_path_or_a_name(tmp_path, line):
    paste = tmp_path / "paste.txt"
    paste.write_text(line + "\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "ddp_doctor", "triage", str(paste), "--format", "markdown"],
        capture_output=True,
        text=True,
        env={**os.environ, "LANG": "C.UTF-8"},
    )
    quoted = [row for row in done.stdout.splitlines() if row.lstrip().startswith("> ")]
    assert quoted, done.stdout + done.stderr
    first_sentence = line.split(". ")[0].rstrip(".") + ("." if ". " in line else "")
    want = first_sentence[:139] + ("…" if len(first_sentence) > 140 else "")
    # the line is quoted as inline code (text from the log is never live markdown)
    assert quoted[0].strip()[2:] == f"`{want}`"
