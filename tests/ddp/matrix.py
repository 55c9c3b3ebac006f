"""The fix matrix: each scenario's real texts through every path ddp-doctor offers.

A *case* is a scenario as a user meets it: the job (maybe with a fix already applied: a
follow-up text), the texts it wrote (tests/fixtures/real/scenarios/<case>/), a sentence a
user would type to `ask` (English and Chinese) and an honest `--answers` file. A *path* is
one way of asking ddp-doctor: `triage` of the combined output, of each rank's own log
(debug unset and TORCH_DISTRIBUTED_DEBUG=INFO), of both INFO logs together, `ask` en / zh,
`--answers` with the paste, and `run` (the wrapper on the live job; test_fix_matrix.py).

Everything here runs without torch: the paths read captured texts, and the results of
applying a fix come from tests/ddp/measured.json, which `matrix_doc.py --measure` records
from real DDP jobs and test_fix_matrix.py re-checks against live ones.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
TEXTS = ROOT / "tests" / "fixtures" / "real" / "scenarios"
MEASURED = HERE / "measured.json"
MATRIX_DOC = ROOT / "docs" / "fix-matrix.md"

# ---------------------------------------------------------------------------- the bridge
# fix id -> the scenario code paths its printed snippet stands for (each one visible
# `if FIX in fixes:` branch or DDP keyword in scenarios.py), and text the snippet holds.


@dataclass(frozen=True)
class Bridge:
    applies: tuple[str, ...]
    snippet_has: tuple[str, ...]
    # what the printed change comes down to on a model without the code `applies` needs (its
    # job recorded n/a): "use_reentrant=False if you checkpoint" on a model that does not
    otherwise: str | None = None


BRIDGE = {
    "find_unused_parameters": Bridge(("find_unused_parameters",), ("find_unused_parameters=True",)),
    "static_graph": Bridge(("static_graph",), ("static_graph=True",)),
    # the constructor keyword; the debug level the job's environment gets (issue 20)
    "broadcast_buffers_false": Bridge(("broadcast_buffers_false",), ("broadcast_buffers=False",)),
    "debug_level_info": Bridge(("debug_level_info",), ("TORCH_DISTRIBUTED_DEBUG=INFO",)),
    "sum_losses_single_backward": Bridge(
        ("sum_losses_single_backward",), ("loss = loss1 + loss2", "loss.backward()")
    ),
    "sum_losses_with_flag": Bridge(
        ("sum_losses_single_backward+find_unused_parameters",),
        ("loss = loss1 + loss2", "loss.backward()", "find_unused_parameters=True"),
    ),
    # the snippet: the first forward AND backward inside no_sync(), the last ones outside
    "no_sync_first_backward": Bridge(("no_sync_first_backward",), ("with model.no_sync():",)),
    "zero_weight_aux_loss": Bridge(("zero_weight_aux_loss",), ("0.0 *",)),
    "include_all_task_losses": Bridge(("include_all_task_losses",), ("loss = sum(",)),
    # seed fix 4: the head is not computed in training, and DDP is told to skip it
    "drop_unused_outputs": Bridge(
        ("drop_unused_outputs+find_unused_parameters",),
        ("if self.training:", "find_unused_parameters=True"),
    ),
    # the snippet freezes the module before wrapping, its comment says "or delete it": both
    "remove_unused_module": Bridge(
        ("remove_unused_module", "freeze_before_wrapping"), (".requires_grad_(False)",)
    ),
    # freeze before wrapping, or (staged training) wrap again at each switch
    "freeze_before_wrapping": Bridge(("freeze_before_wrapping",), (".requires_grad_(",)),
    "checkpoint_non_reentrant": Bridge(("checkpoint_non_reentrant",), ("use_reentrant=False",)),
    "checkpoint_non_reentrant_with_flag": Bridge(
        ("checkpoint_non_reentrant+find_unused_parameters",),
        ("use_reentrant=False", "find_unused_parameters=True"),
    ),
    # the flag, and non-reentrant checkpointing where the model checkpoints (a model without
    # checkpointing runs the flag alone: its outcomes name `scenario.find_unused_parameters`)
    "find_unused_parameters_any_checkpointing": Bridge(
        ("checkpoint_non_reentrant+find_unused_parameters",),
        ("use_reentrant=False", "find_unused_parameters=True"),
        otherwise="find_unused_parameters",
    ),
    "tie_before_wrapping": Bridge(("tie_before_wrapping",), ("lm_head.weight = ",)),
    "disable_find_unused": Bridge(("disable_find_unused",), ("find_unused_parameters=False",)),
    # the speed warning on a model that needs the flag: the job runs with it, as before
    "keep_find_unused": Bridge(("find_unused_parameters",), ("find_unused_parameters=True",)),
    # forward returns the tensors the loss uses, plain; the flag while an output is left out
    "loss_from_forward_outputs": Bridge(
        ("loss_from_forward_outputs+find_unused_parameters",),
        ("return out, feat", "find_unused_parameters=True"),
    ),
}


def applied_path(base: str | None, path: str) -> str:
    """The fix combination a job runs: what was already on, plus the snippet's path."""
    parts = [p for p in (base or "").split("+") if p]
    parts += [p for p in path.split("+") if p not in parts]
    return "+".join(parts)


def measure_key(scenario: str, applied: str | None) -> str:
    return f"{scenario}|{applied or 'none'}"


# ---------------------------------------------------------------------------- the cases

ORDINARY = {
    "step_pattern": "none",
    "multitask": "no",
    "backward_calls": "one",
    "forward_unused_outputs": "no",
    "conditional_modules": "none",
    "requires_grad_changed": "no",
    "gradient_checkpointing": "none",
    "tied_weights": "no",
    "find_unused_enabled": "no",
    # issue 20's questions: what every scenario's code is like unless its case says otherwise
    "module_never_called": "no",
    "loss_uses_hidden_tensors": "no",
    "static_graph_enabled": "no",
    "framework": "pytorch",
}


@dataclass(frozen=True)
class Case:
    scenario: str
    base: str | None  # fix(es) already applied when the text was written: a follow-up
    cause: str | None  # the true cause id (None when no cause of the rules fits)
    ask_en: str
    ask_zh: str
    answers: dict = field(default_factory=dict)
    crashes: bool = True  # the job dies (False: a warning, or silently wrong training)
    # the speed warning is the problem: a fix works only if the warning is gone too
    warning_is_problem: bool = False

    @property
    def name(self) -> str:
        return self.scenario + (f".{self.base}" if self.base else "")

    @property
    def already_on(self) -> tuple[str, ...]:
        return tuple(p for p in (self.base or "").split("+") if p)


def case(scenario, cause, ask_en, ask_zh, base=None, crashes=True, warning=False, **answers):
    honest = {**ORDINARY, **answers}
    honest = {k: v for k, v in honest.items() if v is not None}
    if base and "find_unused_parameters" in base:
        honest["find_unused_enabled"] = "yes"
    if base and "static_graph" in base:
        honest["static_graph_enabled"] = "yes"
    return Case(scenario, base, cause, ask_en, ask_zh, honest, crashes, warning)


SEED_SENTENCE = (
    "在一个for loop中有两次loss.backward()，第一次backward的loss1是由模型的某个中间层的feature map"
    "计算出的，第二次backward的loss2是由模型最终的输出计算出的"
)

CASES = [
    case(
        "unused_module",
        "unused_module",
        "My model has a head that I defined in __init__ but never call in forward.",
        "模型里有一个在 __init__ 里定义了、但 forward 里从来没调用的 head。",
        step_pattern=None,
        revealed_module="not_called",
        module_never_called="yes",
    ),
    case(
        "unused_module_adamw",
        "unused_module",
        "A module defined in __init__ is never called in forward; I train with AdamW.",
        "__init__ 里定义的一个模块在 forward 里没被调用，优化器用的是 AdamW。",
        step_pattern=None,
        revealed_module="not_called",
        module_never_called="yes",
    ),
    case(
        "unused_forward_output",
        "unused_forward_output",
        "forward returns (main, aux) but the loss only uses the first output.",
        "forward 返回了 (main, aux) 两个输出，但 loss 只用了第一个，aux 输出没用到。",
        step_pattern="extra_outputs",
        forward_unused_outputs="yes",
        revealed_module="output_ignored",
    ),
    case(
        "multitask_missing_loss",
        "multitask_missing_loss",
        "Multi-task model with two heads; I forgot to add the second task's loss to the total.",
        "多任务模型有两个 head，第二个任务的 loss 忘了加进总 loss。",
        step_pattern="several_losses",
        multitask="yes",
        all_losses_summed="no",
        forward_unused_outputs=None,
        revealed_module="output_ignored",
    ),
    case(
        "two_backward_intermediate",
        "multiple_backward",
        "I call backward twice per step: loss1 from an intermediate layer's feature map, "
        "then a second forward and loss2 from the final output.",
        "每个 step 里调用两次 backward：先前向一次，用中间层特征图算 loss1 并 backward；"
        "再前向一次，用最终输出算 loss2 并 backward。",
        step_pattern="backward_many",
        backward_calls="many",
        backward_layout="separate",
        backward_from_intermediate="yes",
        revealed_module="used",
    ),
    case(
        "two_backward_intermediate_head",
        "multiple_backward",
        "Two forward+backward passes per step; loss1 goes through a small head on an "
        "intermediate layer that loss2 never touches.",
        "每个 step 两次前向加 backward；loss1 经过中间层上的一个小 head，loss2 完全不经过它。",
        step_pattern="backward_many",
        backward_calls="many",
        backward_layout="separate",
        backward_from_intermediate="yes",
        revealed_module="used",
    ),
    case(
        "two_backward_retain_graph",
        "multiple_backward",
        "One forward, then loss1.backward(retain_graph=True) on an intermediate feature map "
        "and loss2.backward() on the final output.",
        SEED_SENTENCE,
        step_pattern="backward_many",
        backward_calls="many",
        backward_layout="shared",
        backward_from_intermediate="yes",
    ),
    case(
        "backward_twice_no_retain",
        "multiple_backward",
        "One forward, then loss1.backward() and loss2.backward() without retain_graph.",
        "一次前向之后先 loss1.backward() 再 loss2.backward()，没有加 retain_graph。",
        step_pattern="backward_many",
        backward_calls="many",
        backward_layout="shared",
        backward_from_intermediate="yes",
    ),
    case(
        "branch_some_steps",
        "conditional_branch",
        "An extra layer is used only on even steps (an if on the step number in forward).",
        "forward 里有个 if，额外的那一层只在偶数 step 才用到。",
        step_pattern="branches",
        conditional_modules="steps",
        revealed_module="sometimes",
    ),
    case(
        "branch_some_steps_adamw",
        "conditional_branch",
        "An extra layer runs only on some steps; the optimizer is AdamW with weight decay.",
        "有一层只在部分 step 执行；优化器是带 weight decay 的 AdamW。",
        step_pattern="branches",
        conditional_modules="steps",
        revealed_module="sometimes",
    ),
    case(
        "branch_some_ranks",
        "conditional_branch",
        "One branch of the model is only used on some GPUs, depending on the data.",
        "模型里有个分支只在部分 GPU 上执行，取决于各卡拿到的数据。",
        step_pattern="branches",
        conditional_modules="ranks",
        revealed_module="sometimes",
    ),
    case(
        "branch_moving_ranks",
        "conditional_branch",
        "A mixture-of-experts layer: on each step some experts get no tokens, and which ones "
        "changes from step to step and from GPU to GPU.",
        "模型里有个 MoE 层：每个 step 都有专家分不到 token，而且是哪几个专家，每个 step、每张卡都不一样。",
        step_pattern="branches",
        conditional_modules="ranks",
        revealed_module="sometimes",
    ),
    case(
        "branch_data_chosen",
        "conditional_branch",
        "A head runs only when the batch holds a positive label, so on some steps one GPU "
        "uses it and the other does not.",
        "有个 head 只在 batch 里有正样本时才执行，所以有些 step 一张卡用到了它，另一张卡没用到。",
        step_pattern="branches",
        conditional_modules="steps",
        revealed_module="sometimes",
    ),
    case(
        "requires_grad_after_wrap",
        "frozen_params",
        "I freeze the backbone with requires_grad_(False) after wrapping the model in DDP.",
        "把模型包进 DDP 之后，我用 requires_grad_(False) 冻结了 backbone。",
        step_pattern="freezing",
        requires_grad_changed="yes",
        revealed_module="used",
    ),
    case(
        "freeze_later_step",
        "frozen_params",
        "After the first epoch I freeze the backbone (requires_grad_(False)); DDP was built at the start.",
        "第一个 epoch 之后我把 backbone 冻结了（requires_grad_(False)），DDP 是一开始就包好的。",
        step_pattern="freezing",
        requires_grad_changed="yes",
        revealed_module="used",
    ),
    case(
        "unfreeze_after_wrap",
        "frozen_params",
        "I unfreeze the backbone after wrapping the model in DDP, for the second training stage.",
        "第二阶段训练时，我在模型包进 DDP 之后才解冻 backbone。",
        crashes=False,
        step_pattern="freezing",
        requires_grad_changed="yes",
    ),
    case(
        "checkpoint_reentrant",
        "gradient_checkpointing",
        "One block is reused twice, each time under torch.utils.checkpoint with use_reentrant=True.",
        "同一个 block 用了两次，每次都包在 use_reentrant=True 的 torch.utils.checkpoint 里。",
        step_pattern="checkpointing",
        gradient_checkpointing="reentrant",
        tied_weights="yes",
    ),
    case(
        "checkpoint_input_no_grad",
        "gradient_checkpointing",
        "I wrap the first layer in checkpoint(..., use_reentrant=True) applied directly to the "
        "input batch.",
        "我把第一层用 checkpoint(..., use_reentrant=True) 包起来，直接作用在输入数据上。",
        step_pattern="checkpointing",
        gradient_checkpointing="reentrant",
        revealed_module="used",
    ),
    case(
        "tied_weights_after_wrap",
        "shared_params",
        "I tie lm_head.weight to the embedding weight after building DDP.",
        "我在构造 DDP 之后才把 lm_head.weight 和 embedding 的权重绑定在一起。",
        tied_weights="yes",
        revealed_module="used",
    ),
    case(
        "clean_with_find_unused",
        "needless_find_unused",
        "PyTorch warns that find_unused_parameters=True did not find any unused parameters.",
        "PyTorch 警告说 find_unused_parameters=True 但没有找到任何未使用的参数。",
        crashes=False,
        warning=True,
        find_unused_enabled="yes",
    ),
    # ---- follow-ups: the text written after a fix was applied
    case(
        "branch_some_steps",
        "conditional_branch",
        "With static_graph=True, DDP says my training graph has changed; a layer runs on even steps only.",
        "开了 static_graph=True 之后 DDP 报训练图变了；有一层只在偶数 step 执行。",
        base="static_graph",
        step_pattern="branches",
        conditional_modules="steps",
        revealed_module="sometimes",
    ),
    case(
        "unused_forward_output",
        "unused_forward_output",
        "I set static_graph=True and now DDP says my training graph has changed; forward "
        "returns an aux output the loss ignores.",
        "开了 static_graph=True 之后 DDP 报训练图变了；forward 返回的 aux 输出 loss 没有用到。",
        base="static_graph",
        step_pattern="extra_outputs",
        forward_unused_outputs="yes",
        revealed_module="output_ignored",
    ),
    case(
        "two_backward_retain_graph",
        "multiple_backward",
        "I set static_graph=True; now 'Your training graph has changed'. One forward, two backward calls.",
        "设置了 static_graph=True 之后报 'Your training graph has changed'。一次前向，两次 backward。",
        base="static_graph",
        step_pattern="backward_many",
        backward_calls="many",
        backward_layout="shared",
        backward_from_intermediate="yes",
    ),
    case(
        "two_backward_retain_graph",
        "multiple_backward",
        "With find_unused_parameters=True I get 'Encountered gradient which is undefined, but "
        "still allreduced'. One forward, two backward calls.",
        "开了 find_unused_parameters=True 之后报 'Encountered gradient which is undefined, but "
        "still allreduced'。一次前向，两次 backward。",
        base="find_unused_parameters",
        step_pattern="backward_many",
        backward_calls="many",
        backward_layout="shared",
        backward_from_intermediate="yes",
    ),
    case(
        "checkpoint_reentrant",
        "gradient_checkpointing",
        "find_unused_parameters=True is on and reentrant checkpointing: marked ready twice.",
        "开了 find_unused_parameters=True，还用了 reentrant 检查点：报参数被标记就绪两次。",
        base="find_unused_parameters",
        step_pattern="checkpointing",
        gradient_checkpointing="reentrant",
        tied_weights="yes",
    ),
    case(
        "two_backward_intermediate_head",
        "multiple_backward",
        "I put the first forward and backward under model.no_sync() and still get the "
        "unfinished reduction error; loss1 goes through a head loss2 never reaches.",
        "我把第一次前向和 backward 放进了 model.no_sync()，还是报 unfinished reduction；"
        "loss1 经过一个 loss2 不经过的 head。",
        base="no_sync_first_backward",
        step_pattern="backward_many",
        backward_calls="many",
        backward_layout="separate",
        backward_from_intermediate="yes",
        revealed_module="used",
    ),
    case(
        "unused_forward_output",
        "unused_forward_output",
        "find_unused_parameters=True is on and PyTorch says it did not find any unused "
        "parameters; forward returns an aux output the loss ignores.",
        "开了 find_unused_parameters=True，PyTorch 说没找到未使用的参数；forward 返回的 aux 输出 loss 没用。",
        base="find_unused_parameters",
        crashes=False,
        forward_unused_outputs="yes",
    ),
    case(
        "branch_some_steps",
        "conditional_branch",
        "find_unused_parameters=True is on and PyTorch says it did not find any unused "
        "parameters; one layer runs on even steps only.",
        "开了 find_unused_parameters=True，PyTorch 说没找到未使用的参数；有一层只在偶数 step 执行。",
        base="find_unused_parameters",
        crashes=False,
        conditional_modules="steps",
    ),
]
BY_NAME = {c.name: c for c in CASES}


# ---------------------------------------------------------------------------- the texts
# tests/fixtures/real/scenarios/<case>/<text>.txt, made by make_fixtures.py --matrix

TEXT_FILES = {
    "combined": "nodebug.txt",  # the whole job output, debug unset
    "combined_info": "info.txt",  # the same with TORCH_DISTRIBUTED_DEBUG=INFO
    "rank0": "rank0.nodebug.txt",
    "rank1": "rank1.nodebug.txt",
    "rank0_info": "rank0.info.txt",
    "rank1_info": "rank1.info.txt",
}


def text_path(case_: Case, text: str) -> Path:
    return TEXTS / case_.name / TEXT_FILES[text]


# ---------------------------------------------------------------------------- the paths
# path id -> how the offline paths call ddp-doctor (argv, without --json/--lang);
# `run` needs the live job and is added by test_fix_matrix.py.

PATHS = (
    "triage",
    "triage rank0",
    "triage rank1",
    "triage rank0 INFO",
    "triage rank1 INFO",
    "triage both INFO",
    "ask en",
    "ask zh",
    "answers",
)


def path_argv(case_: Case, path: str, answers_file: Path) -> list[str] | None:
    """The command line for one path, or None when the case has no text for it."""
    texts = {
        "triage": ["combined"],
        "triage rank0": ["rank0"],
        "triage rank1": ["rank1"],
        "triage rank0 INFO": ["rank0_info"],
        "triage rank1 INFO": ["rank1_info"],
        "triage both INFO": ["rank0_info", "rank1_info"],
    }
    if path in texts:
        files = [text_path(case_, t) for t in texts[path]]
        files = [f for f in files if f.exists() and f.stat().st_size]
        return ["triage", *map(str, files)] if files else None
    if path == "ask en":
        return ["ask", case_.ask_en]
    if path == "ask zh":
        return ["ask", case_.ask_zh]
    if path == "answers":
        answers_file.write_text(json.dumps(case_.answers), encoding="utf-8")
        paste = text_path(case_, "rank0_info")
        if case_.crashes and paste.exists():
            return ["--answers", str(answers_file), "--paste", str(paste)]
        return ["--answers", str(answers_file)]
    raise ValueError(path)


def ddp_doctor_json(argv: list[str], lang: str = "en") -> dict | None:
    """Run the CLI in-process (same code path as the installed script) and parse --json.
    None when it found nothing to diagnose."""
    from ddp_doctor.cli import main as cli

    out = io.StringIO()
    env_lang = os.environ.pop("DDP_DOCTOR_LANG", None)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = cli.main([*argv, "--json", "--lang", lang])
    finally:
        if env_lang is not None:
            os.environ["DDP_DOCTOR_LANG"] = env_lang
    if code not in (0, 1):
        raise RuntimeError(f"ddp-doctor {argv} exited {code}")
    text = out.getvalue().strip()
    return json.loads(text) if text.startswith("{") else None


@dataclass(frozen=True)
class Advice:
    """What one report tells the user to do."""

    advised: tuple[str, ...]  # JSON `fixes` of kind fix
    conditional: tuple[dict, ...]  # JSON `conditional_fixes` (engine schema 2), as given
    warned: tuple[str, ...]  # JSON `warnings` (ids)
    snippets: dict  # fix id -> snippet of the advised fixes
    top_cause: str | None
    facts: dict = field(default_factory=dict)  # what the engine knew
    # JSON `warnings` as given: schema 2 names the failing outcome (cause, result, scenario)
    warnings: tuple[dict, ...] = ()


def advice_of(report: dict | None) -> Advice:
    if not report:
        return Advice((), (), (), {}, None)
    fixes = [f for f in report.get("fixes", []) if f.get("kind", "fix") == "fix"]
    causes = report.get("causes") or [{}]
    return Advice(
        advised=tuple(f["id"] for f in fixes),
        conditional=tuple(report.get("conditional_fixes", [])),
        warned=tuple(w["id"] for w in report.get("warnings", [])),
        snippets={f["id"]: f.get("snippet") or "" for f in fixes},
        top_cause=causes[0].get("id"),
        facts=dict(report.get("facts") or {}),
        warnings=tuple(report.get("warnings", [])),
    )


def offline_advice(case_: Case, tmp: Path) -> dict[str, Advice]:
    """path -> Advice for every offline path this case has a text for."""
    result = {}
    for path in PATHS:
        argv = path_argv(case_, path, tmp / f"{case_.name}.answers.json")
        if argv is None:
            continue
        lang = "zh" if path == "ask zh" else "en"
        result[path] = advice_of(ddp_doctor_json(argv, lang))
    return result


def conditional_id(entry: dict) -> str:
    return entry.get("id") or entry.get("fix") or ""


def conditional_ids(case_: Case, advice: Advice) -> list[str]:
    """The conditional fixes that speak of this case: a row "if the cause is X" (`when.cause`)
    speaks of X's jobs only, not of another cause's."""
    return [
        conditional_id(entry)
        for entry in advice.conditional
        if not (entry.get("when") or {}).get("cause") or entry["when"]["cause"] == case_.cause
    ]


# ---------------------------------------------------------------------------- results


def load_measured() -> dict:
    return json.loads(MEASURED.read_text(encoding="utf-8")) if MEASURED.exists() else {}


def fix_jobs(case_: Case, fix_id: str) -> list[tuple[str, str]]:
    """(scenario, applied) for each code path that stands for `fix_id` in this case."""
    bridge = BRIDGE.get(fix_id)
    if bridge is None:
        return []
    jobs = []
    for path in bridge.applies:
        applied = applied_path(case_.base, path)
        if bridge.otherwise and _not_applicable(case_.scenario, applied):
            applied = applied_path(case_.base, bridge.otherwise)
        jobs.append((case_.scenario, applied))
    return jobs


def _not_applicable(scenario: str, applied: str) -> bool:
    """The scenario has no code for `applied` (measured.json records it n/a)."""
    record = _measured().get(measure_key(scenario, applied))
    return record is not None and record["result"] == "n/a"


@functools.cache
def _measured() -> dict:
    return load_measured()


# ---------------------------------------------------------------------------- outcomes
# rules/fixes.yaml: `outcomes` entries name the scenario that measures them, as
# `scenario` (the fix's own code path, BRIDGE) or `scenario.path` (that code path, e.g.
# `unused_forward_output.find_unused_parameters+disable_find_unused` for a follow-up).


def outcome_entries() -> list[tuple[str, dict]]:
    """(fix id, entry) for every `outcomes` entry in rules/fixes.yaml, read as plain YAML
    so this works whatever the knowledge base makes of them."""
    import yaml

    data = yaml.safe_load((ROOT / "rules" / "fixes.yaml").read_text(encoding="utf-8"))
    return [
        (fix["id"], entry) for fix in data.get("fixes", []) for entry in fix.get("outcomes") or []
    ]


def outcome_job(fix_id: str, entry: dict) -> tuple[str, str]:
    scenario, _, applied = str(entry["scenario"]).partition(".")
    if not applied:
        bridge = BRIDGE.get(fix_id)
        applied = bridge.applies[0] if bridge else fix_id
    return scenario, applied
