"""A module the user names in a description goes into the printed code (rules/lexicon.yaml
`names`, wizard/reading/module_names.py): "I freeze `body` after wrapping" prints
`model.body.requires_grad_(False)`, not `model.YOUR_MODULE`, and that code runs on the
model it names. A name the error gives wins; a word that is no name gives none.
"""

from __future__ import annotations

import json
import os
import sys

import pytest
import yaml
from ddp_doctor.knowledge.kb import load
from ddp_doctor.reading.understand import understand
from helpers import FIXTURES, ROOT, TESTS, cli

KB = load()
LEXICON = yaml.safe_load((ROOT / "rules" / "lexicon.yaml").read_text(encoding="utf-8"))
FREEZE_SENTENCE = "I unfreeze `body` at epoch 5, after wrapping the model in DDP"
FREEZE_SENTENCE_ZH = "在包了 DDP 之后，第 5 个 epoch 解冻 body_net"


@pytest.mark.parametrize("example", LEXICON["names"]["examples"], ids=lambda e: e["text"][:40])
def test_each_example_gives_the_names_it_promises(example):
    facts = understand(KB, example["text"]).facts
    assert list(facts.get("named_modules", ())) == example["names"]


def _code_of(report: dict, fix_id: str) -> str:
    fix = next(f for f in report["fixes"] if f["id"] == fix_id)
    return fix["snippet"]


def test_ask_prints_the_named_module_in_the_fix_and_says_where_it_read_it():
    result = cli("ask", "--json", FREEZE_SENTENCE)
    assert result.returncode == 0, result.err
    report = json.loads(result.out)
    code = _code_of(report, "freeze_before_wrapping")
    assert "model.body.requires_grad_(False)" in code
    assert "YOUR_MODULE" not in code
    named = [r for r in report["understood"] if r["reading"] == "named_modules"]
    assert named and named[0]["quote"] == "unfreeze `body`" and named[0]["used"]

    shown = cli("ask", "--format", "markdown", FREEZE_SENTENCE)
    assert "the module you named: `body`" in shown.out
    assert "model.body.requires_grad_(True)" in shown.out


def test_a_chinese_description_names_its_module_too():
    result = cli("--lang", "zh", "ask", "--format", "markdown", FREEZE_SENTENCE_ZH)
    assert result.returncode == 0, result.err
    assert "你提到的模块 `body_net`" in result.out
    assert "model.body_net.requires_grad_(False)" in result.out


def test_a_word_that_is_no_name_keeps_the_placeholder():
    result = cli(
        "ask", "--json", "I unfreeze some layers at epoch 5, after wrapping the model in DDP"
    )
    report = json.loads(result.out)
    assert "named_modules" not in report["facts"]
    assert "model.YOUR_MODULE.requires_grad_(False)" in _code_of(report, "freeze_before_wrapping")


def test_the_module_the_error_names_wins_over_the_sentence():
    paste = FIXTURES / "real" / "requires_grad_after_wrap__info__spawn.txt"
    sentence = "I unfreeze `backbone` at epoch 5, after wrapping the model in DDP"
    result = cli("ask", "--json", "--paste", str(paste), sentence)
    report = json.loads(result.out)
    codes = "\n".join(f["snippet"] or "" for f in report["fixes"] + report["diagnostics"])
    assert "model.body." in codes and "model.backbone" not in codes


# ---------------------------------------------------------------------------- real torch

if os.environ.get("CI"):
    import torch
else:
    torch = pytest.importorskip("torch")


@pytest.mark.torch
def test_the_printed_snippet_runs_on_the_model_it_names():
    """The fix as `ask` prints it for a CPU/gloo job (rendered by ddp-doctor's own code, see
    tests/ddp/printed.py), run on the real scenario model in a one-process gloo group: the
    name resolves, and the wrapper rebuilt after unfreezing trains the body."""
    import torch.distributed as dist

    sys.path.insert(0, str(TESTS / "ddp"))
    import printed
    from scenarios import Clean, regression_batch

    facts = understand(KB, FREEZE_SENTENCE).facts
    code = printed.render("freeze_before_wrapping", facts=tuple(facts.items()))
    assert "model.body.requires_grad_(False)" in code
    scope = {}
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        model = Clean(frozenset())
        scope.update(model=model, local_rank=0, torch=torch)
        exec(compile(code, "<printed snippet>", "exec"), scope)  # noqa: S102 - the snippet
        inputs, targets = regression_batch(0, 0)
        loss = torch.nn.functional.mse_loss(scope["ddp_model"](inputs), targets)
        loss.backward()
        assert all(p.grad is not None for p in model.body.parameters())
    finally:
        # The wrappers go before their group: dropped after it, the last one frees the
        # group from inside its own destructor, holding the GIL while it joins gloo's
        # worker threads, and a worker still freeing the all-reduce of `backward` waits
        # for that GIL (a deadlock of torch 2.13, ~1 run in 15; it hung CI for 20 min).
        scope.clear()
        dist.destroy_process_group()
