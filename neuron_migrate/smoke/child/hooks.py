"""Hooks that stop the user's script after N steps and capture losses and outputs.

Child process only: registers global optimizer and module hooks and wraps
`Tensor.backward`. Stopping raises `StopRun`, a BaseException, so a script's own
`except Exception:` cannot swallow it.
"""

from __future__ import annotations

import contextlib
import random
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib.util import find_spec
from typing import Any

import torch
from torch.nn.modules.module import (
    register_module_forward_hook,
    register_module_forward_pre_hook,
)
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.utils._pytree import tree_leaves

from neuron_migrate.smoke.child.values import Missing, full_tensor, named_value, numbers
from neuron_migrate.smoke.sites import Site, UserFiles, site_from_stack

MAX_OUTPUT_VALUES = 4096


class StopRun(BaseException):
    """The smoke run has seen enough; the runner treats this as success."""


class RunTimeout(BaseException):
    """The smoke run hit its time limit."""


@dataclass
class RunState:
    """What the hooks counted and captured during one run."""

    max_steps: int
    files: UserFiles
    steps: int = 0
    forwards: int = 0
    backwards: int = 0
    depth: int = 0
    stop_reason: str = ""
    reference_optimizer: int | None = None
    top_module: int | None = None  # id() of the model whose forward calls are counted
    optimizer: Any = None  # the optimizer whose steps are counted
    model: Any = None  # the module whose forward calls are counted
    step_site: Site | None = None  # the user line of the first counted optimizer step
    losses: list[tuple[float, Site | None]] = field(default_factory=list)
    last_output: list[torch.Tensor] = field(default_factory=list)
    forward_site: Site | None = None
    quiet: Any = contextlib.nullcontext  # context that pauses op recording
    value_name: str = ""  # `--parity-value`: the variable read at each counted optimizer step
    named: list[list[float]] = field(default_factory=list)  # its values, one list per step
    named_problem: str = ""  # why it could not be read (then no more reads)
    triggered_by: Any = lambda site: contextlib.nullcontext()  # collectives belong to `site`

    @property
    def training(self) -> bool:
        return self.steps > 0 or self.backwards > 0


def seed_everything(seed: int) -> None:
    """Seed Python, torch and (when installed) numpy, so two runs see the same numbers."""
    random.seed(seed)
    torch.manual_seed(seed)
    if find_spec("numpy") is not None:
        import numpy

        numpy.random.seed(seed)


def install(state: RunState) -> list[Any]:
    """Register the step, forward and backward hooks; return the handles."""
    handles = [
        register_optimizer_step_post_hook(_step_hook(state)),
        register_module_forward_pre_hook(_pre_forward_hook(state)),
        register_module_forward_hook(_forward_hook(state), always_call=True),
    ]
    _wrap_backward(state)
    return handles


# Attributes under which an optimizer wrapper keeps the optimizer its `step` steps (torch's
# ZeroRedundancyOptimizer: `optim`, holding this rank's shard; accelerate: `optimizer`).
_WRAPPED_OPTIMIZER = ("optim", "optimizer", "base_optimizer")


def _step_hook(state: RunState) -> Any:
    def hook(optimizer: Any, args: Any, kwargs: Any) -> None:
        if state.reference_optimizer is None:
            state.reference_optimizer = id(optimizer)
            state.optimizer = optimizer
            state.step_site = site_from_stack(sys._getframe(1), state.files)
        elif id(optimizer) != state.reference_optimizer and _wraps(optimizer, state.optimizer):
            # The counted optimizer stepped inside this one's `step`, whose post hook runs last:
            # count this one from now on (its parameters are the whole model's); the step it
            # just took was counted already.
            state.reference_optimizer = id(optimizer)
            state.optimizer = optimizer
            return
        if id(optimizer) != state.reference_optimizer:
            return
        state.steps += 1
        if state.value_name:
            _capture(state, sys._getframe(1))
        if state.steps >= state.max_steps:
            state.stop_reason = f"stopped after {state.steps} optimizer step{'s' if state.steps != 1 else ''}"
            raise StopRun

    return hook


def _capture(state: RunState, frame: Any) -> None:
    """Read the value `--parity-value` names, as the user's code sees it at this step."""
    if state.named_problem:
        return
    try:
        with state.quiet():
            state.named.append(numbers(named_value(frame, state.value_name, state.files)))
    except Missing as exc:
        state.named_problem = str(exc)
    except Exception as exc:  # noqa: BLE001 - reading the value must not change what the script does
        state.named_problem = f"`{state.value_name}` could not be read: {type(exc).__name__}: {exc}"


def _wraps(outer: Any, inner: Any) -> bool:
    return any(getattr(outer, attr, None) is inner for attr in _WRAPPED_OPTIMIZER)


def _pre_forward_hook(state: RunState) -> Any:
    def hook(module: Any, args: Any) -> None:
        if state.depth == 0 and _is_top_module(state, module):
            if not state.training and state.forwards >= state.max_steps:
                state.stop_reason = f"stopped after {state.forwards} forward call{'s' if state.forwards != 1 else ''}"
                raise StopRun
            state.forward_site = site_from_stack(sys._getframe(1), state.files)
        state.depth += 1

    return hook


def _forward_hook(state: RunState) -> Any:
    def hook(module: Any, args: Any, output: Any) -> None:
        state.depth = max(0, state.depth - 1)
        if state.depth == 0 and output is not None and _is_top_module(state, module):
            state.forwards += 1
            leaves = tree_leaves(output)
            with state.quiet():
                state.last_output = [full_tensor(t.detach()) for t in leaves if isinstance(t, torch.Tensor)]

    return hook


def _is_top_module(state: RunState, module: Any) -> bool:
    """The top-level module is the first module with parameters the script calls directly."""
    if state.top_module is None and _has_parameters(module):
        state.top_module = id(module)
        state.model = module
    return state.top_module == id(module)


def _has_parameters(module: Any) -> bool:
    """Top-level means a model, not a parameterless loss or activation module."""
    return next(module.parameters(), None) is not None


def _wrap_backward(state: RunState) -> None:
    original = torch.Tensor.backward

    def backward(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        state.backwards += 1
        if self.numel() == 1:
            with state.quiet():
                value = float(full_tensor(self.detach()).float().cpu().item())
            state.losses.append((value, site_from_stack(sys._getframe(1), state.files)))
        return original(self, *args, **kwargs)

    torch.Tensor.backward = backward  # type: ignore[method-assign]  # the smoke run records backward calls
    original_autograd = torch.autograd.backward

    def autograd_backward(*args: Any, **kwargs: Any) -> Any:
        # `Tensor.backward` calls this too; the innermost user frame is the line to report.
        with state.triggered_by(site_from_stack(sys._getframe(1), state.files)):
            return original_autograd(*args, **kwargs)

    torch.autograd.backward = autograd_backward


def output_values(state: RunState) -> dict[str, Any] | None:
    """The last outermost forward output, flattened to at most MAX_OUTPUT_VALUES floats."""
    if not state.last_output:
        return None
    with state.quiet():
        flat = [t.float().cpu().reshape(-1) for t in state.last_output if t.is_floating_point()]
        if not flat:
            return None
        values = torch.cat(flat)[:MAX_OUTPUT_VALUES].tolist()
    return {
        "values": values,
        "dtypes": sorted({str(t.dtype) for t in state.last_output}),
        "site": state.forward_site.to_json() if state.forward_site else None,
    }


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise RunTimeout in the main thread after `seconds` (SIGALRM)."""

    def on_alarm(signum: int, frame: Any) -> None:
        raise RunTimeout(f"still running after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
