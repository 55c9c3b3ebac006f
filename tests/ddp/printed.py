"""Fixes run as ddp-doctor prints them: the snippet text of rules/fixes.yaml, rendered by
ddp-doctor's own code (render.fields_for) for a CPU/gloo job, then executed.

- DDP keyword fixes (find_unused_parameters, static_graph, disable_find_unused): the
  printed constructor snippet runs with `DistributedDataParallel` standing for the user's
  own constructor call, so the keywords it passes are added to (or replace) the ones the
  user already has; run_scenario.py then builds the real wrapper with them.
- zero_weight_aux_loss (where a scenario uses this module): the generic form, rendered
  for the module the scenario's real error names, runs on the real DDP-wrapped model.
- remove_unused_module and freeze_before_wrapping: the lines before the wrapping line,
  rendered for the module the scenario's real error names (`model.unused.requires_grad_(False)`),
  run on the model before DDP wraps it.

A snippet that fails as printed (a wrong name, a missing keyword) fails the job, as it
would fail the user.
"""

from __future__ import annotations

import functools
from pathlib import Path

HERE = Path(__file__).resolve().parent
REAL = HERE.parent / "fixtures" / "real"

# What every scenario job is: CPU processes on gloo (no device_ids in the snippets).
JOB_FACTS = {"device": "cpu", "backend": "gloo"}
KEYWORD_FIXES = (
    "find_unused_parameters",
    "static_graph",
    "disable_find_unused",
    "broadcast_buffers_false",
)
# static_graph=True in the constructor, but ddp-doctor was not told: later snippets are
# rendered without `static_graph_enabled` (what a user who pastes nothing else gets)
STATIC_GRAPH_UNTOLD = "static_graph_untold"


@functools.cache
def _kb():
    from ddp_doctor.knowledge import kb

    return kb.load()


def render(fix_id: str, facts: tuple = (), modules: tuple = ()) -> str:
    """The pytorch snippet of `fix_id`, in English, as ddp-doctor fills it in for these
    facts (a tuple of (name, value) pairs) and the modules an error named."""
    from ddp_doctor.output import render as rendering

    kb = _kb()
    all_facts = {**JOB_FACTS, **dict(facts)}
    fields = rendering.fields_for(kb, "en", all_facts, modules)
    code = kb.fixes[fix_id].snippets["pytorch"].code.get("en")
    return code.format(**fields)


def error_modules(scenario: str) -> tuple[str, ...]:
    """The modules ddp-doctor reads from the scenario's real error (its captured INFO
    output, tests/fixtures/real/<scenario>__info__spawn.txt, made by make_fixtures.py)."""
    from ddp_doctor.reading import triage

    paste = REAL / f"{scenario}__info__spawn.txt"
    if not paste.exists():
        raise FileNotFoundError(f"run: python tests/ddp/make_fixtures.py --only {scenario}")
    return triage.triage_text(_kb(), paste.read_text(encoding="utf-8")).unused_modules


# ----------------------------------------------------------------- constructor keywords


def ddp_kwargs(fix: str | None, base: dict | None = None) -> dict:
    """The keywords of the user's DDP constructor after applying each printed snippet of
    `fix` ("a+b", in that order) to a constructor that had `base`."""
    import torch
    import torch.nn.parallel as parallel

    kwargs = dict(base or {})
    told: dict = {}
    for part in [p for p in (fix or "").split("+") if p]:
        if part == STATIC_GRAPH_UNTOLD:
            kwargs["static_graph"] = True  # the user's own line, not a printed snippet
            continue
        if part not in KEYWORD_FIXES:
            continue
        code = render(part, tuple(sorted(told.items())))
        calls: list[dict] = []
        sentinel = object()

        def constructor(model, *args, _calls=calls, _model=sentinel, **given):
            assert model is _model, "the snippet must wrap the user's `model`"
            assert not args, f"unexpected positional arguments {args}"
            _calls.append(given)
            return model

        real = parallel.DistributedDataParallel
        parallel.DistributedDataParallel = constructor  # the `import` line picks it up
        try:
            # a snippet may spell the class `torch.nn.parallel.DistributedDataParallel`
            exec(compile(code, f"<printed {part}>", "exec"), {"model": sentinel, "torch": torch})
        finally:
            parallel.DistributedDataParallel = real
        assert len(calls) == 1, f"{part}: the snippet builds DDP {len(calls)} times"
        kwargs.update(calls[0])
        if part == "static_graph":
            told["static_graph_enabled"] = True  # the user says so on the follow-up
    return kwargs


# --------------------------------------------------------------- zero-weighted term


def zero_term_block(code: str) -> str:
    """The generic form of the printed zero_weight_aux_loss snippet: from `def zero_term`
    to the line that adds it to the loss."""
    lines = code.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("def zero_term"))
    end = next(i for i, line in enumerate(lines) if "+ zero_term(" in line)
    return "\n".join(lines[start : end + 1]) + "\n"


def add_zero_term(model, loss, scenario: str):
    """`loss` with the printed generic zero-weighted term added, `model` the DDP wrapper."""
    code = render("zero_weight_aux_loss", modules=error_modules(scenario))
    space = {"model": model, "loss": loss}
    exec(compile(zero_term_block(code), "<printed zero_weight_aux_loss>", "exec"), space)
    return space["loss"]


# ------------------------------------------------------------------ freeze before wrapping


def freeze_as_printed(model, fix_ids: tuple[str, ...], scenario: str) -> None:
    """Run on `model` (not wrapped yet) what each printed snippet of `fix_ids` does before
    its wrapping line (`{module}.requires_grad_(False)`), rendered for the module the
    scenario's real error names: a module path the model does not have fails the job."""
    for fix_id in fix_ids:
        lines = render(fix_id, modules=error_modules(scenario)).splitlines()
        wrap = next(i for i, line in enumerate(lines) if "DistributedDataParallel(" in line)
        before = [line for line in lines[:wrap] if not line.startswith(("from ", "import "))]
        assert any(".requires_grad_(False)" in line for line in before), (fix_id, lines)
        exec(compile("\n".join(before), f"<printed {fix_id}>", "exec"), {"model": model})
