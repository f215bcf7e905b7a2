"""The values `--parity` compares, read in the child: a named variable, gathered and flattened.

Child process only. A DTensor (a tensor-parallel output, a `loss_parallel` loss) is gathered
into its whole value first, so the N-rank run and the 1-rank run compare like for like.
"""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

import torch

from neuron_migrate.smoke.sites import UserFiles

MAX_VALUES = 1024  # numbers kept per captured value


class Missing(LookupError):
    """The named value is not visible from the user's frames, or is not a number or tensor."""


def full_tensor(tensor: torch.Tensor) -> torch.Tensor:
    """The whole value of a DTensor, else `tensor` itself.

    Every rank of the DTensor's mesh reaches this point at the same call (the forward call,
    backward or optimizer step that made the value ran collectives on all of them), so the
    all-gather inside cannot wait for a rank that never comes.
    """
    dtensor = dtensor_type()
    if dtensor is not None and isinstance(tensor, dtensor):
        return tensor.full_tensor()
    return tensor


def dtensor_type() -> Any:
    """The DTensor class once the script has imported it, else None: no value can be one then,
    and importing `torch.distributed.tensor` for nothing would slow the start of every run."""
    module = sys.modules.get("torch.distributed.tensor")
    return getattr(module, "DTensor", None)


def named_value(frame: FrameType | None, name: str, files: UserFiles) -> Any:
    """`name` (a variable, or a dotted attribute path) in the innermost user frame that has it.

    Locals come before globals, as in Python's own lookup. Raises `Missing` when no user frame
    at or above `frame` defines the first part of the name.
    """
    head, *attributes = name.split(".")
    while frame is not None:
        if files.contains(frame.f_code.co_filename):
            scope = frame.f_locals if head in frame.f_locals else frame.f_globals
            if head in scope:
                return _attributes(scope[head], head, attributes)
        frame = frame.f_back
    raise Missing(f"no user frame defines `{head}` where the optimizer steps")


def _attributes(value: Any, path: str, attributes: list[str]) -> Any:
    for attribute in attributes:
        path = f"{path}.{attribute}"
        if not hasattr(value, attribute):
            raise Missing(f"`{path}` does not exist where the optimizer steps")
        value = getattr(value, attribute)
    return value


def numbers(value: Any) -> list[float]:
    """`value` as at most MAX_VALUES floats: a tensor (gathered), a number, or a list of them."""
    if isinstance(value, torch.Tensor):
        flat = full_tensor(value.detach()).float().cpu().reshape(-1)
        return [float(x) for x in flat[:MAX_VALUES].tolist()]
    if isinstance(value, (bool, int, float)):
        return [float(value)]
    if isinstance(value, (list, tuple)) and all(isinstance(x, (bool, int, float)) for x in value):
        return [float(x) for x in value[:MAX_VALUES]]
    raise Missing(f"the value is a `{type(value).__name__}`, not a number, a tensor or a list of numbers")
