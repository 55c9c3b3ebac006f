"""Every text a user can see exists in English and Chinese with the same placeholders."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest
import yaml
from ddp_doctor.common.i18n import detect_lang
from ddp_doctor.knowledge import kb as kb_module
from helpers import ROOT, has_chinese

RULES = ROOT / "rules"
WIZARD = ROOT / "wizard"
KB = kb_module.load()


def _texts(node, path=()):
    """Every {en, zh} mapping in a YAML document, with where it is."""
    if isinstance(node, dict):
        if set(node) >= {"en", "zh"} and all(isinstance(node[k], str) for k in ("en", "zh")):
            yield path, node
            return
        for key, value in node.items():
            yield from _texts(value, path + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _texts(value, path + (index,))


def _placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def _code_spans(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text)


ALL_TEXTS = [
    pytest.param(path, text, id=f"{file.name}:{'.'.join(map(str, path))}")
    for file in sorted(RULES.rglob("*.yaml"))
    for path, text in _texts(yaml.safe_load(file.read_text(encoding="utf-8")))
]


def test_there_are_texts():
    assert len(ALL_TEXTS) > 100


@pytest.mark.parametrize(("path", "text"), ALL_TEXTS)
def test_same_placeholders(path, text):
    assert _placeholders(text["en"]) == _placeholders(text["zh"])


# product names are written the same way in Chinese
PROPER_NAMES = {
    "PyTorch Lightning",
    "Hugging Face Accelerate",
    "Hugging Face `Trainer`",
    "Detectron2",
    "MMEngine",
    "PyTorch",
}
# terms the glossary keeps in English in Chinese text
TERMS = {"rank"}


@pytest.mark.parametrize(("path", "text"), ALL_TEXTS)
def test_chinese_text_is_chinese(path, text):
    zh = text["zh"]
    if "code" in path:  # a snippet: the code is shared, its comments must be Chinese
        if "#" in text["en"]:
            assert has_chinese(zh), "snippet comments are not translated"
        return
    if zh in PROPER_NAMES or zh in TERMS:
        return
    for term in TERMS:  # "（rank {ranks}）" is a layout around a term kept in English
        zh = zh.replace(term, "")
    if not re.sub(
        r"`[^`]*`|\{\w*\}|[\s:：,，、()（）%*—]", "", zh
    ):  # a pure layout pattern ("{label}：{value}") or an API name
        assert zh != text["en"], "the Chinese layout keeps its own punctuation"
        return
    assert has_chinese(zh), f"not Chinese: {zh!r}"


@pytest.mark.parametrize(("path", "text"), ALL_TEXTS)
def test_api_names_stay_untranslated(path, text):
    """Code spans in backticks are API names: the Chinese text keeps the English ones."""
    en_spans = set(_code_spans(text["en"]))
    zh_spans = set(_code_spans(text["zh"]))
    missing = {s for s in en_spans if s not in zh_spans and s.isascii() and "(" in s}
    assert not missing, f"API names missing in zh: {missing}"


def test_every_message_key_used_in_code_exists():
    used = set()
    for source in WIZARD.rglob("*.py"):
        used |= set(re.findall(r"""\btr\(\s*\w+,\s*["']([a-z_0-9]+)["']""", source.read_text()))
        used |= set(
            re.findall(r"""UserError\(\s*\w+,\s*["']([a-z_0-9]+)["']""", source.read_text())
        )
    assert used, "no message keys found: the pattern is stale"
    missing = sorted(k for k in used if k not in KB.messages)
    assert not missing


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"LANG": "zh_CN.UTF-8"}, "zh"),
        ({"LC_ALL": "zh_TW.UTF-8", "LANG": "en_US.UTF-8"}, "zh"),
        ({"LANGUAGE": "zh_CN:en", "LANG": "en_US.UTF-8"}, "zh"),
        ({"LANG": "en_US.UTF-8"}, "en"),
        ({"LANG": "fr_FR.UTF-8"}, "en"),
        ({"LANG": "C"}, "en"),
        ({}, "en"),
        ({"LANG": "zh_CN.UTF-8", "DDP_DOCTOR_LANG": "en"}, "en"),
    ],
)
def test_language_follows_the_locale(env, expected):
    assert detect_lang(env) == expected


def test_message_files_do_not_repeat_keys():
    seen: dict[str, Path] = {}
    for file in sorted((RULES / "messages").glob("*.yaml")):
        for key in yaml.safe_load(file.read_text(encoding="utf-8")) or {}:
            assert key not in seen, f"{key} in {file.name} and {seen[key].name}"
            seen[key] = file


def test_chinese_texts_have_no_gap_between_chinese_characters():
    """Folded YAML joins lines with a space; the loader removes it between CJK characters."""
    import re as _re

    gap = _re.compile(
        "[\u4e00-\u9fff\u3000-\u303f\uff00-\uffef] [\u4e00-\u9fff\u3000-\u303f\uff00-\uffef]"
    )
    texts = [f.why.zh for f in KB.fixes.values()] + [c.explanation.zh for c in KB.causes]
    texts += [q.help.zh for q in KB.questions if q.help]
    assert not [t for t in texts if gap.search(t)]
