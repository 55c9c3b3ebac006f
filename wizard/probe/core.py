"""The probe itself: run a training step, record which gradient accumulators fire.

Printing the names of parameters whose `.grad is None` after `backward()` is fooled by
gradients left over from earlier steps and cannot see a parameter reached twice. DDP's
reducer does not look at `.grad` either: it hangs a hook on every parameter's gradient
accumulator (the `AccumulateGrad` node of the autograd graph) and counts the hooks that
fire in an iteration. The probe does the same, on one process, without DDP or an optimizer:
it runs `backward()` once per loss the step returns, records which accumulators fire, and
afterwards puts back every `.grad`, buffer and random-number state it found. Forward hooks
on every submodule record which modules were called at all, so a module whose output the
loss ignores is told apart from one `forward` never calls.

torch is imported inside the functions: the rest of ddp-doctor runs without it. The
results render through `probe_report` (rich, markdown); `probe_command` is the CLI.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any, Callable

# ---------------------------------------------------------------------------- results


@dataclass(frozen=True)
class ParamInfo:
    """One distinct parameter (a tied parameter appears once, with all its names)."""

    name: str  # the first name `named_parameters()` gives it
    aliases: tuple[str, ...]  # its other names when tied/shared, else ()
    module: str  # dotted prefix of `name`: `decoder.aux_head.weight` -> `decoder.aux_head`
    shape: tuple[int, ...]
    steps_reached: tuple[int, ...]  # 1-based steps on which its gradient hook fired
    losses_per_step: tuple[tuple[int, ...], ...] = ()  # per step, the 1-based losses reaching it

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["aliases"] = list(self.aliases)
        data["shape"] = list(self.shape)
        data["steps_reached"] = list(self.steps_reached)
        data["losses_per_step"] = [list(losses) for losses in self.losses_per_step]
        return data


@dataclass(frozen=True)
class DdpVerdict:
    """What a real single-process DDP run said about the same step."""

    ran: bool  # False: DDP could not be set up or the step could not run under it
    error: str | None  # PyTorch's own error text, None when DDP ran clean

    def to_dict(self) -> dict[str, Any]:
        return {"ran": self.ran, "error": self.error}


@dataclass(frozen=True)
class ProbeReport:
    steps: int
    trainable_count: int  # distinct trainable parameters
    never_reached: tuple[ParamInfo, ...]
    sometimes_reached: tuple[ParamInfo, ...]
    reached_multiple_times: tuple[ParamInfo, ...]  # by more than one loss within one step
    frozen: tuple[ParamInfo, ...]  # requires_grad=False: not a problem, listed for completeness
    unused_modules: tuple[str, ...]  # topmost modules none of whose trainable params is reached
    frozen_modules: tuple[str, ...] = ()  # topmost modules whose parameters are all frozen
    ddp_verdict: DdpVerdict | None = None
    # those of `unused_modules` whose forward did run: their output never reaches the loss
    called_unused_modules: tuple[str, ...] = ()

    @property
    def uncalled_modules(self) -> tuple[str, ...]:
        """Unused modules `forward` never called (the rest are called, output ignored)."""
        return tuple(m for m in self.unused_modules if m not in self.called_unused_modules)

    def counts(self) -> dict[str, int]:
        """Disjoint counts that add up to `problem_count`: a parameter reached on some steps
        only and by several losses counts once, under "several losses"."""
        multiple = {p.name for p in self.reached_multiple_times}
        return {
            "never": len(self.never_reached),
            "sometimes": len({p.name for p in self.sometimes_reached} - multiple),
            "multiple": len(multiple),
        }

    @property
    def ok(self) -> bool:
        return not (self.never_reached or self.sometimes_reached or self.reached_multiple_times)

    @property
    def problem_count(self) -> int:
        return len({p.name for p in self._problem_params()})

    def _problem_params(self) -> tuple[ParamInfo, ...]:
        return self.never_reached + self.sometimes_reached + self.reached_multiple_times

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "steps": self.steps,
            "trainable_count": self.trainable_count,
            "never_reached": [p.to_dict() for p in self.never_reached],
            "sometimes_reached": [p.to_dict() for p in self.sometimes_reached],
            "reached_multiple_times": [p.to_dict() for p in self.reached_multiple_times],
            "frozen": [p.to_dict() for p in self.frozen],
            "unused_modules": list(self.unused_modules),
            "uncalled_modules": list(self.uncalled_modules),
            "called_unused_modules": list(self.called_unused_modules),
            "counts": self.counts(),
            "frozen_modules": list(self.frozen_modules),
            "ddp_verdict": self.ddp_verdict.to_dict() if self.ddp_verdict else None,
        }

    def renderable(self, lang: str | None = None, kb=None):
        """A rich renderable: verdict line, table of problems, hints, frozen note."""
        from .report import renderable

        return renderable(self, _lang(lang), kb or _kb())

    def render(self, lang: str | None = None, width: int = 110) -> str:
        """The report as plain text (no colours), in `lang` (default: the user's locale)."""
        from rich.console import Console

        console = Console(width=width, color_system=None, force_terminal=False)
        with console.capture() as capture:
            console.print(self.renderable(lang))
        return capture.get().rstrip() + "\n"

    def __rich__(self):
        return self.renderable()

    def __str__(self) -> str:
        return self.render()


class ProbeError(Exception):
    """The step cannot be probed. `key` and `fields` name the translated message."""

    def __init__(self, key: str, **fields: object):
        self.key, self.fields = key, fields
        super().__init__(key)

    def message(self, lang: str | None = None, kb=None) -> str:
        from ..common.i18n import tr

        return tr(kb or _kb(), self.key, _lang(lang), **self.fields)

    def __str__(self) -> str:
        return self.message()


# ---------------------------------------------------------------------------- the probe


def find_unused_parameters(
    model,
    step: Callable[[Any], Any],
    steps: int = 3,
    *,
    confirm_with_ddp: bool = False,
) -> ProbeReport:
    """Run `step(model)` `steps` times and report the parameters DDP would complain about.

    `step(model)` returns the loss tensor, or a list/tuple of loss tensors when the real
    training step calls `backward()` once per loss (a dict works too: its `loss` entry if it
    has one, else all its values). It must not call `backward()` or step an optimizer itself.

    Nothing is changed: parameters are not touched, every `.grad` is put back as the same
    tensor object, buffers (BatchNorm statistics) and random-number states are restored.
    With `confirm_with_ddp=True` the step also runs under a real single-process DDP wrapper
    (on a copy of the model) and PyTorch's own error text is kept in `report.ddp_verdict`.
    """
    import torch  # first, so that a missing torch fails before anything is touched

    if steps < 1:
        raise ProbeError("probe_error_steps", steps=steps)
    if isinstance(model, torch.nn.parallel.DistributedDataParallel):
        # Our backward() calls would fire DDP's own hooks: all-reduces, or a hang across ranks.
        raise ProbeError("probe_error_ddp_wrapped")
    params = _distinct_parameters(model)
    trainable = [entry for entry in params if entry[0].requires_grad]
    if not trainable:
        raise ProbeError("probe_error_no_trainable")

    with _model_state_preserved(model, [p for p, _ in params]):
        with _calls_recorded(model) as called:
            hits = _record_accumulator_hooks(model, step, steps, [p for p, _ in trainable])
        verdict = None
        if confirm_with_ddp:
            with _rng_preserved():
                verdict = _confirm_with_ddp(model, step, steps)

    infos = []
    for (param, names), losses_by_step in zip(trainable, hits):
        infos.append(_param_info(param, names, losses_by_step))
    frozen = tuple(_param_info(p, names, ()) for p, names in params if not p.requires_grad)
    never = tuple(i for i in infos if not i.steps_reached)
    sometimes = tuple(i for i in infos if 0 < len(i.steps_reached) < steps)
    multiple = tuple(i for i in infos if any(len(losses) > 1 for losses in i.losses_per_step))
    unused = _topmost_modules(infos, {i.name for i in never})
    return ProbeReport(
        steps=steps,
        trainable_count=len(trainable),
        never_reached=never,
        sometimes_reached=sometimes,
        reached_multiple_times=multiple,
        frozen=frozen,
        unused_modules=unused,
        called_unused_modules=tuple(m for m in unused if m in called),
        frozen_modules=_topmost_modules(infos + list(frozen), {i.name for i in frozen}),
        ddp_verdict=verdict,
    )


@contextlib.contextmanager
def _calls_recorded(model) -> Iterator[set[str]]:
    """The names of the submodules whose `forward` ran (a pre-hook on each, removed after).

    Tells "never called" from "called, but its output does not reach the loss": the
    gradient hooks alone cannot, and the two need different fixes.
    """
    called: set[str] = set()
    handles = []

    def recorder(name: str) -> Callable:
        def hook(module, args) -> None:
            called.add(name)

        return hook

    try:
        for name, module in model.named_modules():
            handles.append(module.register_forward_pre_hook(recorder(name)))
        yield called
    finally:
        for handle in handles:
            handle.remove()


def _distinct_parameters(model) -> list[tuple[Any, tuple[str, ...]]]:
    """(parameter, its names) once per Parameter object: tied weights share one entry."""
    names_by_id: dict[int, list[str]] = {}
    objects: dict[int, Any] = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        names_by_id.setdefault(id(param), []).append(name)
        objects[id(param)] = param
    return [(objects[key], tuple(names)) for key, names in names_by_id.items()]


def _param_info(param, names: tuple[str, ...], losses_by_step) -> ParamInfo:
    losses_by_step = tuple(tuple(sorted(losses)) for losses in losses_by_step)
    return ParamInfo(
        name=names[0],
        aliases=names[1:],
        module=names[0].rpartition(".")[0],
        shape=tuple(param.shape),
        steps_reached=tuple(n for n, losses in enumerate(losses_by_step, 1) if losses),
        losses_per_step=losses_by_step,
    )


def _gradient_accumulator(param):
    """The `AccumulateGrad` node of a leaf parameter: where DDP's reducer hangs its hook."""
    import torch

    get_edge = getattr(torch.autograd.graph, "get_gradient_edge", None)
    if get_edge is not None:
        return get_edge(param).node
    with torch.enable_grad():  # older torch: the same trick DDP used, expand/view -> next fn
        return param.view_as(param).grad_fn.next_functions[0][0]


def _record_accumulator_hooks(model, step, steps: int, params: list) -> list[list[set[int]]]:
    """For each parameter, for each step, the set of 1-based losses whose backward reached it.

    A post-hook on the accumulator fires exactly when autograd executes that node, which is
    what marks a parameter "ready" in DDP. The accumulator is held only weakly by its
    parameter, so the list below keeps each node (and the hook on it) alive while probing.
    Long because the hooks must be registered and removed around the whole loop (try/finally).
    """
    import torch

    hits: list[list[set[int]]] = [[set() for _ in range(steps)] for _ in params]
    current: dict[str, int] = {}  # step index and loss number of the backward now running
    accumulators = [_gradient_accumulator(p) for p in params]
    handles = []

    def on_fire(index: int) -> Callable:
        def hook(grad_inputs, grad_outputs):
            if current:  # outside our own backward calls (a user's hook?) nothing counts
                hits[index][current["step"]].add(current["loss"])

        return hook

    try:
        for index, node in enumerate(accumulators):
            handles.append(node.register_hook(on_fire(index)))
        for step_index in range(steps):
            step_number = step_index + 1
            try:
                with torch.enable_grad():
                    output = step(model)
            except ProbeError:
                raise
            except (Exception, SystemExit) as exc:  # sys.exit() in a step is a failure too
                raise ProbeError(
                    "probe_error_step_failed", step=step_number, error=one_line(exc)
                ) from exc
            losses = _losses_from(output, step_number)
            for loss_number, (label, loss) in enumerate(losses, 1):
                if not loss.requires_grad:
                    raise ProbeError("probe_error_loss_no_grad", loss=label, step=step_number)
                # A non-scalar loss cannot be backpropagated as is; ones reach the same nodes.
                seed = None if loss.numel() == 1 else torch.ones_like(loss)
                current.update(step=step_index, loss=loss_number)
                try:
                    # retain_graph: several losses of one step usually share part of a graph
                    torch.autograd.backward(loss, grad_tensors=seed, retain_graph=True)
                except (Exception, SystemExit) as exc:
                    raise ProbeError(
                        "probe_error_backward_failed",
                        loss=label,
                        step=step_number,
                        error=one_line(exc),
                    ) from exc
                finally:
                    current.clear()
            del output, losses
            for param in params:  # fresh accumulation next step; the originals come back later
                param.grad = None
    finally:
        for handle in handles:
            handle.remove()
    return hits


def _losses_from(output, step_number: int) -> list[tuple[str, Any]]:
    """(label, tensor) per loss the step returned; one entry per `backward()` it stands for."""
    import torch

    if isinstance(output, torch.Tensor):
        return [("1", output)]
    if isinstance(output, dict) and "loss" in output:  # HF / Lightning style outputs
        return [("loss", _as_loss(output["loss"], step_number))]
    if isinstance(output, dict):
        items = [(str(key), value) for key, value in output.items()]
    elif isinstance(output, (list, tuple)):
        items = [(str(number), value) for number, value in enumerate(output, 1)]
    else:
        raise ProbeError("probe_error_not_a_loss", step=step_number, kind=kind_of(output))
    if not items:
        raise ProbeError("probe_error_no_losses", step=step_number)
    return [(label, _as_loss(value, step_number)) for label, value in items]


def _as_loss(value, step_number: int):
    import torch

    if not isinstance(value, torch.Tensor):
        raise ProbeError("probe_error_not_a_loss", step=step_number, kind=kind_of(value))
    return value


def _topmost_modules(infos: list[ParamInfo], selected: set[str]) -> tuple[str, ...]:
    """The topmost modules all of whose parameters (among `infos`) are `selected`.

    A whole unused `decoder` is one entry, not one per `decoder.layers.N`.
    """

    def under(name: str, module: str) -> bool:
        return module == "" or name.startswith(module + ".")

    def prefixes(name: str) -> list[str]:
        parts = name.split(".")[:-1]
        return [""] + [".".join(parts[: n + 1]) for n in range(len(parts))]

    candidates = {
        m for info in infos if info.name in selected for n in info.names for m in prefixes(n)
    }
    unused = {
        m
        for m in candidates
        if all(info.name in selected for info in infos if any(under(n, m) for n in info.names))
    }
    topmost = [m for m in unused if not any(o != m and under(m, o) for o in unused)]
    order = {info.module: index for index, info in enumerate(infos)}  # model order, not a-z
    return tuple(sorted(topmost, key=lambda m: (min(_order_of(m, order)), m)))


def _order_of(module: str, order: dict[str, int]) -> list[int]:
    found = [i for name, i in order.items() if name == module or name.startswith(module + ".")]
    return found or [len(order)]


# ---------------------------------------------------------------------------- state


@contextlib.contextmanager
def _model_state_preserved(model, params: list) -> Iterator[None]:
    """Put back every `.grad` (the same objects), every buffer's values and the RNG states.

    `.grad` is set to None before probing so that autograd accumulates into new tensors and
    never adds in place into a tensor the user still holds.
    """
    import torch

    saved_grads = [p.grad for p in params]
    buffers = [(b, b.detach().clone()) for b in model.buffers()]  # BatchNorm running stats
    for param in params:
        param.grad = None
    try:
        with _rng_preserved():
            yield
    finally:
        for param, grad in zip(params, saved_grads):
            param.grad = grad
        with torch.no_grad():
            for buffer, values in buffers:
                buffer.copy_(values)


@contextlib.contextmanager
def _rng_preserved() -> Iterator[None]:
    """Dropout and random data consume random numbers; the user's sequence must not shift."""
    import random

    import torch

    python_state = random.getstate()
    torch_state = torch.get_rng_state()
    cuda_states = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    numpy = sys.modules.get("numpy")
    numpy_state = numpy.random.get_state() if numpy is not None else None
    try:
        yield
    finally:
        random.setstate(python_state)
        torch.set_rng_state(torch_state)
        if cuda_states is not None:
            torch.cuda.set_rng_state_all(cuda_states)
        if numpy_state is not None:
            numpy.random.set_state(numpy_state)


# ---------------------------------------------------------------------------- DDP check


def _confirm_with_ddp(model, step, steps: int) -> DdpVerdict:
    """Run the step under single-process DDP (gloo, world_size=1) on a copy of the model.

    DDP with one process raises the same errors as a multi-process job. The error for
    unreached parameters appears at the forward *after* the faulty backward, hence one
    extra step. TORCH_DISTRIBUTED_DEBUG=INFO is set for the run so PyTorch names them.
    The group meets through an in-memory store: one process has nobody to meet, and a
    TCP store would open a server on a free port (a race with other programs, a
    firewall's say) for nothing.
    """
    import gc
    from datetime import timedelta

    import torch.distributed as dist

    if not dist.is_available():
        return DdpVerdict(ran=False, error="torch.distributed is not available")
    if dist.is_initialized():
        return DdpVerdict(ran=False, error=_kb_text("probe_ddp_group_exists"))
    previous_level = dist.get_debug_level()
    dist.set_debug_level(dist.DebugLevel.INFO)
    try:
        dist.init_process_group(
            "gloo",
            store=dist.HashStore(),
            rank=0,
            world_size=1,
            timeout=timedelta(seconds=60),
        )
    except Exception as exc:
        dist.set_debug_level(previous_level)
        return DdpVerdict(ran=False, error=one_line(exc))
    try:
        verdict = _steps_under_ddp(model, step, steps)
        # The DDP copy, its reducer and the graphs kept for retain_graph are released
        # here, before their process group, and not whenever the garbage collector gets
        # to them: by then another group (the next probe's, the user's) may be running.
        gc.collect()
        return verdict
    finally:
        dist.destroy_process_group()
        dist.set_debug_level(previous_level)


def _steps_under_ddp(model, step, steps: int) -> DdpVerdict:
    """The steps of `_confirm_with_ddp`, on a DDP copy of the model, in the group it set up."""
    import copy

    import torch
    from torch.nn.parallel import DistributedDataParallel

    try:
        replica = copy.deepcopy(model)  # DDP hooks and grads stay off the user's model
        wrapped = DistributedDataParallel(replica)
    except Exception as exc:
        return DdpVerdict(ran=False, error=one_line(exc))
    for step_number in range(1, steps + 2):
        try:
            with torch.enable_grad():
                output = step(wrapped)
            for _, loss in _losses_from(output, step_number):
                seed = None if loss.numel() == 1 else torch.ones_like(loss)
                torch.autograd.backward(loss, grad_tensors=seed, retain_graph=True)
        except RuntimeError as exc:  # DDP's reducer errors are RuntimeErrors
            return DdpVerdict(ran=True, error=str(exc).strip())
        except (Exception, SystemExit) as exc:  # e.g. the step reads `model.encoder`
            # (DDP hides it), or exits
            return DdpVerdict(ran=False, error=one_line(exc))
    return DdpVerdict(ran=True, error=None)


# ---------------------------------------------------------------------------- helpers


def _kb():
    from ..knowledge import kb

    return kb.load()


def _lang(lang: str | None) -> str:
    from ..common.i18n import resolve_lang

    return resolve_lang(lang)


def _kb_text(key: str, **fields: object) -> str:
    from ..common.i18n import tr

    return tr(_kb(), key, _lang(None), **fields)


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    message = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    return message if len(message) <= 300 else message[:297] + "..."


def kind_of(value: object) -> str:
    """A language-neutral description of what was returned instead, for error messages."""
    if isinstance(value, (tuple, list, dict)):
        return f"`{type(value).__name__}` (len {len(value)})"
    return f"`{type(value).__name__}`"
