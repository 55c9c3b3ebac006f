"""Every code snippet the report can show parses, in both languages, for every framework.

Snippets are rendered through the real path (`render.fix_view`), so the framework fallback
and the placeholder filling are what a user sees. The en and zh code must be the same
program: only comments may differ.
"""

from __future__ import annotations

import ast
import configparser
import re
import subprocess

import pytest
import yaml
from ddp_doctor.common.record import replace
from ddp_doctor.knowledge.kb import load
from ddp_doctor.output.render import fix_view
from ddp_doctor.reading.triage import triage_text
from ddp_doctor.reasoning import engine

KB = load()
FRAMEWORKS = [o.value for o in KB.question("framework").options if o.value != engine.UNSURE]
PLACEHOLDER = re.compile(r"\{(module|modules|param_names)\}")

# what the paste can reveal: nothing, one top-level module, nested and indexed modules
PASTES = {
    "no-names": "",
    "one": "Parameters which did not receive grad for rank 0: aux_head.weight, aux_head.bias",
    "nested": "Parameters which did not receive grad for rank 1: decoder.aux_head.weight, "
    "module.layers.3.attn.proj.weight, blocks.0.mlp.fc2.bias",
}
HEAD = (
    "RuntimeError: Expected to have finished reduction in the prior iteration before starting "
    "a new one. This error indicates that your module has parameters that were not used in "
    "producing loss.\n"
)


def diagnosis_for(paste: str, framework: str) -> engine.Diagnosis:
    result = triage_text(KB, HEAD + paste)
    diagnosis = engine.diagnose(KB, result, {"framework": framework})
    assert diagnosis.framework == framework
    return diagnosis


def python_shape(code: str) -> str:
    """The program without its words: printed strings are translated (glossary rule 5)."""
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = ""
    return ast.dump(tree)


def shell_shape(code: str) -> list[str]:
    return [
        line for line in code.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]


def check_language(language: str, code: str, tmp_path) -> None:
    if language == "python":
        ast.parse(code)
    elif language == "bash":
        script = tmp_path / "snippet.sh"
        script.write_text(code, encoding="utf-8")
        proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    elif language == "yaml":
        yaml.safe_load(code)
    elif language == "ini":
        configparser.ConfigParser().read_string(code)
    else:
        pytest.fail(f"unknown snippet language {language!r}")


CASES = [
    (fix_id, framework, paste)
    for fix_id in sorted(KB.fixes)
    for framework in FRAMEWORKS
    for paste in PASTES
]


@pytest.mark.parametrize(("fix_id", "framework", "paste"), CASES)
def test_snippet_is_valid_and_the_same_program_in_both_languages(
    fix_id, framework, paste, tmp_path
):
    diagnosis = diagnosis_for(PASTES[paste], framework)
    entry = engine.RankedFix(KB.fixes[fix_id], 1.0, ())
    views = {lang: fix_view(entry, diagnosis, lang) for lang in ("en", "zh")}
    for lang, view in views.items():
        assert view.code.strip(), (fix_id, lang)
        assert not PLACEHOLDER.search(view.code), (fix_id, lang, view.code)
        check_language(view.language, view.code, tmp_path)
        # a snippet written for every framework ({wrap}) is stored under pytorch
        snippets = KB.fixes[fix_id].snippets
        shown = snippets.get(view.framework) or snippets["pytorch"]
        if paste == "nested" and "{module}" in shown.code.en:
            assert "model.decoder.aux_head" in view.code  # the user's own module, indexed right
    en, zh = views["en"], views["zh"]
    assert en.language == zh.language and en.framework == zh.framework
    if en.language == "python":
        assert python_shape(en.code) == python_shape(zh.code), fix_id
    elif en.language == "bash":
        assert shell_shape(en.code) == shell_shape(zh.code), fix_id


@pytest.mark.parametrize("fix_id", sorted(KB.fixes))
def test_zh_snippet_comments_are_chinese(fix_id):
    """Comments follow the chosen language: a zh snippet with comments has Chinese in them."""
    for snippet in KB.fixes[fix_id].snippets.values():
        comments = [line.split("#", 1)[1] for line in snippet.code.zh.splitlines() if "#" in line]
        if comments and snippet.code.zh != snippet.code.en:
            assert any(re.search(r"[\u4e00-\u9fff]", c) for c in comments), fix_id


def test_every_fix_a_cause_names_exists_and_has_plain_pytorch_code():
    for cause in KB.causes:
        for fix_id in cause.fixes:
            assert fix_id in KB.fixes, (cause.id, fix_id)
    for fix in KB.fixes.values():
        assert "pytorch" in fix.snippets, fix.id
        assert set(fix.snippets) <= set(FRAMEWORKS), fix.id


def test_fixes_for_answer_combinations_render():
    """Every combination of the diagnose answers yields fixes whose snippets parse."""
    questions = [
        q for q in KB.questions if q.purpose == "diagnose" and q.for_each is None and q.fact
    ]
    seen = set()
    base = {"family": "unfinished_reduction"}
    for question in questions:
        for option in question.options:
            for framework in FRAMEWORKS:
                facts = {**base, **option.sets, "framework": framework}
                diagnosis = engine.diagnose(KB, None, facts)
                for entry in (*diagnosis.fixes, *diagnosis.diagnostics, *diagnosis.avoided):
                    key = (entry.id, framework)
                    if key in seen:
                        continue
                    seen.add(key)
                    view = fix_view(entry, diagnosis, "zh")
                    if view.language == "python":
                        ast.parse(view.code)
    assert len(seen) >= len(FRAMEWORKS)


def test_a_module_name_that_is_not_an_identifier_still_parses():
    """Odd names from a paste (numbers, `module.` prefix) never break the generated code."""
    diagnosis = diagnosis_for(PASTES["nested"], "pytorch")
    odd = replace(diagnosis, unused_modules=("0", "layers.10.ffn", "module.encoder"))
    for fix in KB.fixes.values():
        view = fix_view(engine.RankedFix(fix, 1.0, ()), odd, "en")
        if view.language == "python":
            ast.parse(view.code)
