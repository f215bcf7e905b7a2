"""Python-level patches the emulated `neuron` device needs. Child process only.

Each patch covers a path a Python backend cannot serve through the dispatcher: pinned host
memory (C++ PrivateUse1 hooks) and constructors that copy with the Python dispatch key hidden.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils._device import _device_constructors

DEVICE_TYPE = "neuron"


def patch_pin_memory() -> None:
    """Make `pin_memory()` a no-op: pinning needs C++ PrivateUse1 hooks a Python backend lacks."""
    original = torch.Tensor.pin_memory

    def pin_memory(self: torch.Tensor, device: Any = None) -> torch.Tensor:
        if device is not None and torch.device(device).type != DEVICE_TYPE:
            return original(self, device)
        return self

    torch.Tensor.pin_memory = pin_memory  # type: ignore[method-assign,assignment]  # the emulation patches torch


def _on_neuron(device: Any) -> bool:
    return device is not None and torch.device(device).type == DEVICE_TYPE


def _context_device() -> Any:
    """The device of an active `with torch.device(...)` / `set_default_device`, else None."""
    from torch.overrides import _get_current_function_mode_stack
    from torch.utils._device import DeviceContext

    for mode in reversed(_get_current_function_mode_stack()):
        if isinstance(mode, DeviceContext):
            return mode.device
    return None


def _built_on_cpu(
    construct: Callable[..., torch.Tensor],
) -> Callable[..., torch.Tensor]:
    """Build on the CPU, then move: these constructors hide the Python dispatch key."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        device = kwargs.get("device")
        target = device if device is not None else _context_device()
        if not _on_neuron(target):
            return construct(*args, **kwargs)
        if args and isinstance(args[0], torch.Tensor):  # as_tensor/asarray of a tensor
            return args[0].to(device=target, dtype=kwargs.get("dtype"))
        requires_grad = kwargs.pop("requires_grad", False)
        tensor = construct(*args, **{**kwargs, "device": "cpu"}).to(target)
        return tensor.requires_grad_(requires_grad) if requires_grad else tensor

    wrapper.__doc__ = construct.__doc__
    return wrapper


def patch_data_constructors() -> None:
    """Route `torch.tensor`/`as_tensor`/`asarray`/`Tensor.new_tensor` for `neuron` via the CPU."""
    # `torch.tensor(data, device=...)` copies into the new tensor with the Python dispatch key
    # excluded, which a Python backend cannot serve; building on the CPU first avoids that.
    # `with torch.device(...)` only redirects the functions in a set it computes (and caches) on
    # first use; computed after the swap, it would hold the wrappers, and `torch.tensor` under
    # `with torch.device("meta")` would build on the CPU (transformers' `from_pretrained` then
    # skips its meta-device check and leaves non-persistent buffers such as BERT's
    # `position_ids` uninitialised). Compute it now, with the real constructors in it.
    _device_constructors()
    for name in ("tensor", "as_tensor", "asarray"):
        wrapper = _built_on_cpu(getattr(torch, name))
        setattr(torch, name, wrapper)
        # TorchScript compiles a call of `torch.tensor` as the ATen op it names; a Python
        # wrapper it would try to compile (and `*args` cannot be). `torch.distributed.optim`
        # scripts its functional optimizers at import. Scripted code keeps the real op.
        if name != "asarray":  # no ATen op of that name: TorchScript never had it
            torch.jit._builtins._register_builtin(wrapper, f"aten::{name}")
    original_new_tensor = torch.Tensor.new_tensor

    def new_tensor(self: torch.Tensor, data: Any, **kwargs: Any) -> torch.Tensor:
        device = kwargs.pop("device", None) or self.device
        if not _on_neuron(device):
            return original_new_tensor(self, data, device=device, **kwargs)
        kwargs.setdefault("dtype", self.dtype)
        return _built_on_cpu(torch.tensor)(data, device=device, **kwargs)

    torch.Tensor.new_tensor = new_tensor  # type: ignore[method-assign,assignment]  # the emulation patches torch
