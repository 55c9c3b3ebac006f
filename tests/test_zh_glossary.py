"""The mechanical rules of ../shared/reference/zh-glossary.md over every Chinese text.

Every `{en, zh}` text in rules/ (knowledge files and interface messages) is checked; code
spans (`...`) and snippet code are code, where half-width punctuation belongs. What a
machine cannot judge (translationese) is left to a reader; what it can is enforced here:
full-width punctuation in Chinese sentences, one space between Chinese and Latin text and
none next to full-width punctuation, one word per concept, no internal names.
"""

from __future__ import annotations

import re

import pytest
import yaml
from ddp_doctor.knowledge.kb import _tidy_chinese  # what the loader does to folded YAML
from helpers import ROOT

RULES = ROOT / "rules"
CJK = "\u4e00-\u9fff"
FULL_PUNCT = "，。、；：？！（）“”‘’《》【】…"


def _texts(node, path=()):
    if isinstance(node, dict):
        if set(node) >= {"en", "zh"} and all(isinstance(node[k], str) for k in ("en", "zh")):
            yield path, node
            return
        for key, value in node.items():
            yield from _texts(value, path + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _texts(value, path + (index,))


def _all_texts():
    out = []
    for file in sorted(RULES.rglob("*.yaml")):
        data = _tidy_chinese(yaml.safe_load(file.read_text(encoding="utf-8")))
        for path, text in _texts(data):
            out.append((f"{file.name}:{'.'.join(map(str, path))}", path, text))
    return out


ALL = _all_texts()
PROSE = [(name, text) for name, path, text in ALL if "code" not in path]
SNIPPETS = [(name, text) for name, path, text in ALL if "code" in path]


def _prose(text: str) -> str:
    """The text outside code spans and placeholders (code keeps its own punctuation)."""
    return re.sub(r"`[^`]*`|\"[^\"]*\"", "`", text)


def problems(en: str, zh: str) -> list[str]:
    """Every glossary rule a Chinese text breaks (empty: it follows the rules)."""
    found = []
    zh = re.sub(r"\{said\}", "你确认", zh)  # the renderer's own words; other fields are names
    zh = re.sub(r"%\(\w+\)[sdr]", "{x}", zh)  # argparse's placeholders are placeholders too
    prose = _prose(zh)
    if re.search(rf"[{CJK}][,;:?!()]|[,;:?!(][{CJK}]", prose):
        found.append("half-width punctuation in a Chinese sentence")
    # a placeholder may hold Chinese or Latin: it counts as neither
    if re.search(rf"[{CJK}][A-Za-z0-9`]|[A-Za-z0-9`][{CJK}]", re.sub(r"\{\w*\}", "", prose)):
        found.append("no space between Chinese and Latin text")
    if re.search(rf" [{FULL_PUNCT}]|[{FULL_PUNCT}] ", zh):
        found.append("space next to full-width punctuation")
    found += avoided_terms(en, zh)
    if "轮" in zh and "epoch" not in en.lower():
        found.append("轮 is for epochs only (step/迭代)")
    if "任务" in zh and "task" not in en.lower():
        found.append("任务 is for the tasks of multi-task training only (训练进程)")
    if "参数" in zh and not re.search(r"parameter|param|weight", en, re.I):
        found.append("参数 is for model parameters only (选项/开关)")
    return found + _internal_ids(prose)


def avoided_terms(en: str, zh: str) -> list[str]:
    """The glossary's "avoid" column: words that stand for a concept it spells otherwise.
    Checked in prose and in the comments and strings of code snippets alike."""
    found = []
    if "损失" in zh:
        found.append("损失: loss is written loss (one word per report)")
    if "平均" in zh and not re.search(r"\bmean\b|\.mean\(", en):
        found.append("平均 for the reduction: use 梯度同步（all-reduce）")
    if re.search(r"(其他|对端|各|每个|某个|有)进程", zh):
        found.append("进程 for a rank: use rank (训练进程 is the job)")
    if "分支" in zh and "branch" not in en.lower():
        found.append("分支 is for if/else control flow only (a head is a head)")
    for word, why in (
        ("autograd 图", "计算图"),
        ("归约", "梯度同步（all-reduce）"),
        ("下标", "参数索引"),
        ("标记为 ready", "标记为就绪"),
        ("包装", "包 DDP"),
        ("包一层", "包 DDP"),
        ("训练图", "计算图"),
        ("随机丢层", "LayerDrop / DropPath（随机深度）"),
        ("非 reentrant", "非可重入"),
        ("种子文章", "no internal names"),
        ("unfinished reduction", "quote PyTorch's message, not a family id"),
    ):
        if word in zh:
            found.append(f"{word}: use {why}")
    return found


def _internal_ids(prose: str) -> list[str]:
    if re.search(r"(?<![-\w.])[a-z]+_[a-z_]+\b(?!=)", prose):
        return ["an internal id outside code"]
    return []


# causes.yaml is edited by another branch; its two texts that break the glossary are to be
# fixed there (issue 22, item 22): 平均 → 梯度同步, autograd 图 → 计算图. Listed, so that the
# rest of rules/ is held to the glossary now; the test below fails once they are fixed, and
# then this set goes.
PENDING = {
    "causes.yaml:causes.6.explanation": ["平均 for the reduction: use 梯度同步（all-reduce）"],
    "causes.yaml:causes.10.explanation": ["autograd 图: use 计算图"],
}


@pytest.mark.parametrize(("name", "text"), PROSE, ids=[n for n, _ in PROSE])
def test_chinese_prose_follows_the_glossary(name, text):
    assert problems(text["en"], text["zh"]) == PENDING.get(name, [])


@pytest.mark.parametrize(("name", "text"), SNIPPETS, ids=[n for n, _ in SNIPPETS])
def test_chinese_snippets_use_the_glossary_terms(name, text):
    """Comments and strings inside zh code are read as Chinese too (`# aux 分支` for a head)."""
    assert avoided_terms(text["en"], text["zh"]) == []


def test_the_glossary_terms_are_caught():
    assert avoided_terms("x", "多任务损失")
    assert avoided_terms("averaged across ranks", "梯度在各 rank 之间平均")
    assert not avoided_terms("the mean of the losses", "各个 loss 的平均值")
    assert avoided_terms("x", "遍历整张 autograd 图")
    assert avoided_terms("the head is not trained", "这个分支不会被训练")
    assert not avoided_terms("a branch skipped on some steps", "某个分支在部分 step 被跳过")
    assert avoided_terms("one rank waits for the others", "某个进程一直等不到其他进程")
    assert not avoided_terms("the job", "训练进程退出了")


@pytest.mark.parametrize(("name", "text"), SNIPPETS, ids=[n for n, _ in SNIPPETS])
def test_strings_printed_by_chinese_snippets_are_chinese(name, text):
    """Glossary rule 5: `print("no grad:", name)` reads `print("没有梯度：", name)` in zh."""
    for literal in re.findall(r"print\(\s*f?\"([^\"]*)\"", text["zh"]):
        words = re.sub(r"\{[^}]*\}", "", literal)
        if re.search(r"[A-Za-z]{3,}", words) and not re.search(f"[{CJK}]", words):
            pytest.fail(f"English string in a Chinese snippet: {literal!r}")


def test_the_checker_catches_what_it_claims():
    """The rules above fail on the mistakes they name (a checker that cannot fail proves
    nothing)."""
    assert problems("x", "你好,世界")
    assert problems("x", "用ddp-doctor 诊断")
    assert problems("x", "代价： 没有")
    assert problems("in the previous iteration", "上一轮迭代")
    assert problems("the job hangs", "任务卡住")
    assert problems("pass the option", "加上这个参数")
    assert problems("x", "这是 unfinished reduction 报错")
    assert problems("x", "hf_trainer 没有专门的写法")
    assert not problems("the job's parameters", "训练进程的参数（`aux_head.weight`）没有梯度。")
    assert not problems("the first epoch", "第一轮 epoch 结束时")


def test_answers_match_the_questions_verb():
    """Glossary rule 2: 有没有…？ is answered 有 / 没有; 是否已设置…？ 已设置 / 未设置."""
    from ddp_doctor.knowledge.kb import load

    wrong = []
    for question in load().questions:
        text = question.text.zh
        for option in question.options:
            if option.value not in ("yes", "no"):
                continue
            label = option.label.zh
            if "有没有" in text and not label.startswith(("有", "没有")):
                wrong.append((question.id, label))
            set_question = "已设置" in text or "已经设置" in text
            if set_question and not label.startswith(("已设置", "未设置")):
                wrong.append((question.id, label))
    assert wrong == []
