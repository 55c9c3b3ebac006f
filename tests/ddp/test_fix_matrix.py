"""Every fix ddp-doctor prints for plain PyTorch, proved on real DDP (gloo, 2 CPU ranks).

For each scenario:
1. the real error happens (TORCH_DISTRIBUTED_DEBUG=INFO) and `ddp-doctor triage --json`
   on the captured text names the family, the rank and the unused modules;
2. `ddp-doctor --answers` with an honest description of the scenario (plus the paste)
   ranks the right cause first;
3. every fix the report recommends (and every other fix its top cause lists and does not
   warn against) is applied to the scenario through BRIDGE and removes the error, AND
   every rank's parameters after every step equal a single-process run without DDP;
4. every fix the report warns against really fails here: an error, or wrong parameters.

The rows are written to docs/fix-matrix.md (English and Chinese) at the end of the run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

try:
    import torch  # noqa: F401
except ImportError:
    if os.environ.get("CI"):
        raise  # in CI a missing torch is a failure, never a skip
    pytest.skip("torch is not installed", allow_module_level=True)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402
import scenarios  # noqa: E402

pytestmark = pytest.mark.ddp
MATRIX_DOC = ROOT / "docs" / "fix-matrix.md"


# ---------------------------------------------------------------------------- the bridge
# fix id -> (the scenario code paths that stand for it, text its printed snippet contains).
# Each scenario path is one visible `if FIX in fixes:` branch or DDP keyword in scenarios.py;
# the text ties that branch to what the user is told to type.


@dataclass(frozen=True)
class Bridge:
    applies: tuple[str, ...]
    snippet_has: tuple[str, ...]


BRIDGE = {
    "find_unused_parameters": Bridge(("find_unused_parameters",), ("find_unused_parameters=True",)),
    "static_graph": Bridge(("static_graph",), ("static_graph=True",)),
    "sum_losses_single_backward": Bridge(
        ("sum_losses_single_backward",), ("loss = loss1 + loss2", "loss.backward()")
    ),
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
    "freeze_before_wrapping": Bridge(("freeze_before_wrapping",), (".requires_grad_(False)",)),
    "checkpoint_non_reentrant": Bridge(("checkpoint_non_reentrant",), ("use_reentrant=False",)),
    "tie_before_wrapping": Bridge(
        ("tie_before_wrapping",), ("model.lm_head.weight = model.emb.weight",)
    ),
    "disable_find_unused": Bridge(("disable_find_unused",), ("find_unused_parameters=False",)),
}


# ---------------------------------------------------------------------------- scenarios

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
    "framework": "pytorch",
}


@dataclass(frozen=True)
class Case:
    scenario: str
    cause: str  # must rank first
    family: str  # what PyTorch raises (a harness.classify name)
    modules: frozenset  # what TORCH_DISTRIBUTED_DEBUG=INFO names
    answers: dict  # an honest --answers file for this scenario
    warning_only: bool = False  # the problem is a warning, not a crash


def case(scenario, cause, family, modules, warning_only=False, **answers):
    honest = {**ORDINARY, **answers}
    honest = {k: v for k, v in honest.items() if v is not None}
    return Case(scenario, cause, family, frozenset(modules), honest, warning_only)


CASES = [
    case(
        "unused_module",
        "unused_module",
        "unfinished_reduction",
        {"unused"},
        revealed_module="not_called",
    ),
    case(
        "unused_forward_output",
        "unused_forward_output",
        "unfinished_reduction",
        {"aux_head"},
        step_pattern="extra_outputs",
        forward_unused_outputs="yes",
        revealed_module="output_ignored",
    ),
    case(
        "multitask_missing_loss",
        "multitask_missing_loss",
        "unfinished_reduction",
        {"head_b"},
        step_pattern="several_losses",
        multitask="yes",
        all_losses_summed="no",
        forward_unused_outputs=None,  # a user may well not know: the loss module gets both
        revealed_module="output_ignored",
    ),
    case(
        "two_backward_intermediate",  # the seed author's case: a forward per backward
        "multiple_backward",
        "unfinished_reduction",
        {"out", "tail"},
        step_pattern="backward_many",
        backward_calls="many",
        backward_layout="separate",
        backward_from_intermediate="yes",
        revealed_module="used",
    ),
    case(
        "two_backward_retain_graph",  # both losses from one forward
        "multiple_backward",
        "ready_twice",
        {"stem"},
        step_pattern="backward_many",
        backward_calls="many",
        backward_layout="shared",
        backward_from_intermediate="yes",
    ),
    case(
        "branch_some_steps",
        "conditional_branch",
        "unfinished_reduction",
        {"extra"},
        step_pattern="branches",
        conditional_modules="steps",
        revealed_module="sometimes",
    ),
    case(
        "branch_some_ranks",
        "conditional_branch",
        "unfinished_reduction",
        {"extra"},
        step_pattern="branches",
        conditional_modules="ranks",
        revealed_module="sometimes",
    ),
    case(
        "requires_grad_after_wrap",
        "frozen_params",
        "unfinished_reduction",
        {"body"},
        step_pattern="freezing",
        requires_grad_changed="yes",
        revealed_module="used",
    ),
    case(
        "checkpoint_reentrant",
        "gradient_checkpointing",
        "ready_twice",
        {"block"},
        step_pattern="checkpointing",
        gradient_checkpointing="reentrant",
    ),
    case(
        "tied_weights_after_wrap",
        "shared_params",
        "unfinished_reduction",
        {"lm_head"},
        tied_weights="yes",
        revealed_module="used",
    ),
    case(
        "clean_with_find_unused",
        "needless_find_unused",
        "find_unused_warning",
        set(),
        warning_only=True,
        find_unused_enabled="yes",
    ),
]
BY_SCENARIO = {c.scenario: c for c in CASES}

# Whichever rank dies first is the one reported; for a rank-dependent branch the other
# rank may only see its peer hang up.
ALSO_ACCEPTED = {"branch_some_ranks": {"peer_closed"}}


# ---------------------------------------------------------------------------- running


def ddp_doctor(*args: str, stdin: str | None = None) -> dict:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    env.pop("DDP_DOCTOR_LANG", None)
    proc = subprocess.run(
        [sys.executable, "-m", "ddp_doctor", *args, "--json", "--lang", "en"],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def unfixed(scenario: str):
    return harness.submit(scenario, None, "INFO").result()


def report_for(case: Case, tmp_path: Path) -> dict:
    paste = tmp_path / f"{case.scenario}.txt"
    paste.write_text(unfixed(case.scenario).output, encoding="utf-8")
    answers = dict(case.answers)
    if not case.modules or case.warning_only:
        answers.pop("revealed_module", None)  # no names in the paste: nothing to ask about
    answers_file = tmp_path / f"{case.scenario}.answers.json"
    answers_file.write_text(json.dumps(answers), encoding="utf-8")
    return ddp_doctor("--answers", str(answers_file), "--paste", str(paste))


def fixes_to_prove(case: Case, report: dict) -> list[str]:
    """What the report recommends, plus the rest of the top cause's list it does not warn
    against: a fix the rules can print for this cause must work here."""
    from ddp_doctor import kb as kb_module

    kb = kb_module.load()
    recommended = [f["id"] for f in report["fixes"]]
    warned = {w["id"] for w in report["warnings"]}
    top = kb.cause(report["causes"][0]["id"])
    extra = [
        f
        for f in top.fixes
        if kb.fixes[f].kind == "fix" and f not in warned and f not in recommended
    ]
    return recommended + extra


# ---------------------------------------------------------------------------- results

ROWS: list[dict] = []


def _shown(fix_id: str, applied: str) -> str:
    """The fix as the matrix names it: with the scenario code path when that differs."""
    return fix_id if applied == fix_id else f"{fix_id}` via `{applied}"


def record(case: Case, fix: str, status: str, note: str = "") -> None:
    ROWS.append(
        {"scenario": case.scenario, "cause": case.cause, "fix": fix, "status": status, "note": note}
    )


# what each scenario has code for: its own `if FIX in fixes:` branches, plus the DDP
# constructor keywords, which apply to any model
_DDP_KEYWORD_FIXES = {"find_unused_parameters", "static_graph", "disable_find_unused"}
_MEASURABLE = {
    name: {part for f in spec.fixes_to_measure for part in f.split("+") if part}
    | _DDP_KEYWORD_FIXES
    for name, spec in scenarios.SCENARIOS.items()
}


def implemented(scenario: str, applied: str) -> bool:
    return all(part in _MEASURABLE[scenario] for part in applied.split("+"))


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict:
    """Reproduce every scenario, diagnose it, and start every fix run it calls for.

    Two phases on the shared 2-worker pool: all unfixed runs first; then, as each one's
    report is ready, the runs of the fixes it recommends or warns against. The tests below
    only wait for results.
    """
    for c in CASES:
        harness.submit(c.scenario, None, "INFO")
    tmp = tmp_path_factory.mktemp("matrix")
    by_scenario = {}
    for c in CASES:
        report = report_for(c, tmp)
        by_scenario[c.scenario] = report
        wanted = fixes_to_prove(c, report) + [w["id"] for w in report["warnings"]]
        for fix_id in wanted:
            for applied in BRIDGE[fix_id].applies if fix_id in BRIDGE else ():
                if implemented(c.scenario, applied):
                    harness.submit(c.scenario, applied)
    yield by_scenario
    write_matrix(ROWS)


def proved(scenario: str, applied: str) -> tuple[bool, str]:
    """(works, note): no error and the parameters equal the single-process reference.
    The note is a NOTES key (the document gives it in both languages) plus a detail."""
    result = harness.submit(scenario, applied).result()
    if not result.ok:
        return False, f"error|{result.family}"
    if BY_SCENARIO[scenario].warning_only and harness.FIND_UNUSED_WARNING in result.output:
        return False, "still_warns|"
    mismatches = harness.param_mismatches(
        result.params, harness.reference_params(scenario, applied)
    )
    if mismatches:
        return False, "wrong_params|" + mismatches[0]
    return True, "same_params|"


# ---------------------------------------------------------------------------- tests


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.scenario)
def test_scenario_is_diagnosed_and_every_printed_fix_works(case: Case, reports: dict):
    result = unfixed(case.scenario)
    accepted = {case.family} | ALSO_ACCEPTED.get(case.scenario, set())
    assert result.family in accepted, result.output[-2000:]
    assert case.warning_only == result.ok

    # 1. triage of the real text
    triage = ddp_doctor("triage", "-", stdin=result.output)
    assert triage["findings"], "the real error text was not recognised"
    if result.family != "peer_closed":
        finding = triage["findings"][0]
        assert finding["ranks"], "the rank that raised is named"
        assert set(finding["unused_modules"]) == set(case.modules)

    # 2. the honest interview ranks the right cause first
    report = reports[case.scenario]
    assert report["causes"][0]["id"] == case.cause, report["causes"][:3]
    assert report["fixes"], "the report recommends at least one fix"

    # 3. every fix it can print for this cause works
    snippets = {f["id"]: f["snippet"] for f in report["fixes"]}
    failures = []
    for fix_id in fixes_to_prove(case, report):
        assert fix_id in BRIDGE, f"no bridge for recommended fix {fix_id}: prove it first"
        bridge = BRIDGE[fix_id]
        if fix_id in snippets:
            for text in bridge.snippet_has:
                assert text in snippets[fix_id], f"{fix_id}: the snippet lacks {text!r}"
        for applied in bridge.applies:
            if not implemented(case.scenario, applied):
                failures.append(f"{fix_id} is printed for {case.scenario}, which it cannot fix")
                continue
            works, note = proved(case.scenario, applied)
            record(case, _shown(fix_id, applied), "works" if works else "FAILS", note)
            if not works:
                failures.append(f"{fix_id} ({applied}): {note}")
    assert not failures, failures

    # 4. what it warns against really does not work here
    for warning in report["warnings"]:
        fix_id = warning["id"]
        bridge = BRIDGE.get(fix_id)
        if bridge is None or not all(implemented(case.scenario, a) for a in bridge.applies):
            record(case, fix_id, "warned", "not_run|")
            continue
        for applied in bridge.applies:
            works, note = proved(case.scenario, applied)
            status = "warned, and it works" if works else "warned: does not work"
            record(case, _shown(fix_id, applied), status, note)
            assert not works, f"{fix_id} is warned against but works: {note}"


# ---------------------------------------------------------------------------- the document

HEADER = {
    "en": (
        "# Fix matrix: what ddp-doctor recommends, proved on real DDP\n\n"
        "Generated by `scripts/test` (tests/ddp/test_fix_matrix.py) on torch {torch}, gloo, "
        "2 CPU processes. *works* = no error and every rank's parameters after every step "
        "equal a single-process run without DDP on the same data. *warned* = the report shows "
        "the fix as a warning, never as advice.\n\n"
        "| scenario | top cause | fix | result | note |\n|---|---|---|---|---|\n"
    ),
    "zh": (
        "## 修复矩阵（中文）\n\n"
        "由 `scripts/test`（tests/ddp/test_fix_matrix.py）在 torch {torch}、gloo、2 个 CPU 进程上生成。"
        "“有效”= 不报错，且每个进程每一步之后的参数都和不用 DDP 的单进程结果一致；"
        "“已警告”= 报告里把它作为警告列出，而不是推荐。\n\n"
        "| 场景 | 首要原因 | 修复 | 结果 | 说明 |\n|---|---|---|---|---|\n"
    ),
}
NOTES = {
    "same_params": {
        "en": "no error; parameters equal the single-process run",
        "zh": "不报错；参数与单进程结果一致",
    },
    "error": {"en": "still fails: {detail}", "zh": "仍然报错：{detail}"},
    "still_warns": {"en": "the speed warning is still printed", "zh": "仍然打印性能警告"},
    "wrong_params": {
        "en": "runs without error, but the parameters are WRONG ({detail})",
        "zh": "不报错，但参数是错的（{detail}）",
    },
    "not_run": {
        "en": "not run: the scenario has no code for it",
        "zh": "未运行：该场景没有对应代码",
    },
}
STATUS_ZH = {
    "works": "有效",
    "FAILS": "失败",
    "warned": "已警告",
    "warned: does not work": "已警告：确实无效",
    "warned, and it works": "已警告，但其实有效",
}


NOT_COVERED_HEADER = {
    "en": "Causes with no scenario of their own here, and why:",
    "zh": "这里没有专门场景的原因，以及理由：",
}
NOT_COVERED = {
    "framework_config": {
        "en": "its fixes are the DDP flags proved above, spelled for each framework; Lightning, "
        "Accelerate, the HF Trainer, MMEngine and Detectron2 are not installed in this suite, so "
        "their spellings are checked against their documentation, not run.",
        "zh": "它的修复就是上面验证过的 DDP 参数，只是按各框架的写法给出；Lightning、Accelerate、HF Trainer、"
        "MMEngine、Detectron2 没有装在测试环境里，所以这些写法是对照各自文档核对的，没有实际运行。",
    },
    "buffer_inplace": {
        "en": "the in-place buffer error did not reproduce on CPU with gloo (BatchNorm in train and "
        "eval mode, two forwards before one backward, with and without `broadcast_buffers`), so "
        "`broadcast_buffers_false` is not proved here.",
        "zh": "在 CPU + gloo 上没能复现 buffer 被原地修改的报错（BatchNorm 训练和 eval 模式、一次 backward 前两次前向、"
        "开关 `broadcast_buffers` 都试过），所以 `broadcast_buffers_false` 在这里没有得到验证。",
    },
}


def not_covered() -> list[str]:
    from ddp_doctor import kb as kb_module

    covered = {c.cause for c in CASES}
    return [c.id for c in kb_module.load().causes if c.id not in covered]


def test_every_cause_without_a_scenario_says_why():
    assert set(not_covered()) <= set(NOT_COVERED)


def write_matrix(rows: list[dict]) -> None:
    if {r["scenario"] for r in rows} != set(BY_SCENARIO):
        return  # a partial run (-k, -x) must not overwrite the whole matrix
    import torch as _torch

    rows = sorted(rows, key=lambda r: (r["scenario"], r["status"] != "works", r["fix"]))
    parts = []
    for lang in ("en", "zh"):
        text = HEADER[lang].format(torch=_torch.__version__.split("+")[0])
        for r in rows:
            status = r["status"] if lang == "en" else STATUS_ZH.get(r["status"], r["status"])
            key, _, detail = r["note"].partition("|")
            note = NOTES[key][lang].format(detail=detail.replace("|", "/"))
            text += f"| {r['scenario']} | `{r['cause']}` | `{r['fix']}` | {status} | {note} |\n"
        text += "\n" + NOT_COVERED_HEADER[lang] + "\n\n"
        for cause_id in not_covered():
            text += f"- `{cause_id}`: {NOT_COVERED[cause_id][lang]}\n"
        parts.append(text)
    MATRIX_DOC.parent.mkdir(exist_ok=True)
    MATRIX_DOC.write_text("\n".join(parts), encoding="utf-8")
