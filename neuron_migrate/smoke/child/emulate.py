"""Emulated `neuron` device: a PrivateUse1 backend whose tensors compute on the CPU.

Only the smoke child process imports this module. A `neuron` tensor is a wrapper subclass
that reports `device="neuron:0"` and keeps a plain CPU tensor (`_raw`) underneath; every ATen
op that reaches it is run on the unwrapped CPU tensors and the results are wrapped again.
Ops without a tensor argument (factories such as `torch.zeros(..., device="neuron")`) reach
the PrivateUse1 dispatch key, where per-factory kernels and a boxed fallback do the same.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from neuron_migrate.smoke.child import amp, device_module, patches, process_group
from neuron_migrate.smoke.child.flat import map_leaves

DEVICE_TYPE = patches.DEVICE_TYPE

# Ops whose kernels cannot run on the CPU copy, or that only make sense for real memory.
_NOOP_OPS = frozenset({"aten::record_stream"})


class EmulationError(RuntimeError):
    """An op the CPU emulation cannot model (not a statement about real hardware)."""


@dataclass(frozen=True)
class EmulationConfig:
    """How the emulated device behaves in this process."""

    device_count: int = 1
    autocast: bool = True  # False for the CPU reference run of --compare-cpu


class NeuronTensor(torch.Tensor):
    """A tensor on the emulated `neuron` device; its data lives in `self._raw` on the CPU."""

    _raw: torch.Tensor

    @staticmethod
    # A final class: nothing subclasses it (the ignore below).
    def __new__(cls, raw: torch.Tensor, index: int = 0) -> NeuronTensor:  # noqa: PYI034
        wrapper = torch.Tensor._make_wrapper_subclass(
            cls,
            raw.size(),
            strides=raw.stride(),
            storage_offset=raw.storage_offset(),
            dtype=raw.dtype,
            layout=raw.layout,
            device=_device(index),
            requires_grad=False,
        )
        wrapper._raw = raw
        return wrapper

    # The subclass recipe in torch docs (the ignore below).
    __torch_function__ = torch._C._disabled_torch_function_impl  # type: ignore[assignment]

    @classmethod
    def __torch_dispatch__(  # type: ignore[override]  # torch types it narrower than it calls it
        cls,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        return run_on_cpu(func, args, kwargs or {})

    # Tensor.__repr__'s own keyword (the ignore below).
    def __repr__(self, *, tensor_contents: Any = None) -> str:  # type: ignore[override]
        with torch._C.DisableTorchFunctionSubclass():
            contents = torch._tensor_str._tensor_str(self._raw.detach(), len("tensor("))
        text = torch._tensor_str._str(self, tensor_contents=contents)
        return "tensor(" + text[len(type(self).__name__) + 1 :]

    def __format__(self, spec: str) -> str:
        if self.dim() == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __reduce_ex__(self, protocol: Any) -> Any:
        # Checkpoints hold the CPU copy; `torch.load` returns CPU tensors (see the docs).
        return self._raw.detach().__reduce_ex__(protocol)

    def __deepcopy__(self, memo: dict[int, Any]) -> NeuronTensor:
        if id(self) in memo:
            return memo[id(self)]
        new = NeuronTensor(copy.deepcopy(self._raw.detach(), memo))
        new.requires_grad_(self.requires_grad)
        memo[id(self)] = new
        if self.grad is not None:
            new.grad = copy.deepcopy(self.grad, memo)
        for key, value in self.__dict__.items():
            if key != "_raw":
                setattr(new, key, copy.deepcopy(value, memo))
        return new

    def tolist(self) -> Any:
        return self._raw.tolist()

    def numpy(self, *, force: bool = False) -> Any:
        if not force:
            raise TypeError(
                f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to "
                "copy the tensor to host memory first."
            )
        return self._raw.detach().numpy()

    def data_ptr(self) -> int:
        return self._raw.data_ptr()

    def untyped_storage(self) -> torch.UntypedStorage:
        return self._raw.untyped_storage()

    @property
    def data(self) -> torch.Tensor:
        return torch._C.TensorBase.data.__get__(self)  # type: ignore[attr-defined]  # the C descriptor is untyped

    @data.setter
    def data(self, new: torch.Tensor) -> None:
        # `.data =` copies TensorImpl metadata only; the CPU copy must follow it.
        torch._C.TensorBase.data.__set__(self, new)  # type: ignore[attr-defined]  # the C descriptor is untyped
        if isinstance(new, NeuronTensor):
            self._raw = new._raw


def run_on_cpu(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run one ATen op on the CPU copies and wrap the results that belong on `neuron`."""
    name, mutable = _op_facts(func)
    if name in _NOOP_OPS:
        return None
    # id of each CPU tensor passed -> the tensor the op was given (a `neuron` tensor: its wrapper)
    originals: dict[int, Any] = {}
    unwrap = _unwrapper(originals)
    cpu_args = map_leaves(unwrap, args)
    cpu_kwargs = map_leaves(unwrap, kwargs)
    on_neuron = any(isinstance(t, NeuronTensor) for t in originals.values())
    index, cpu_kwargs = _target_device(on_neuron, cpu_kwargs)
    out = func(*cpu_args, **cpu_kwargs)
    if mutable:  # only an op that writes to an argument can resize it
        _check_metadata(name, originals)
    return map_leaves(_wrapper(originals, index), out)


@functools.cache
def _device(index: int) -> torch.device:
    """`neuron:index`, built once (the name exists once `install` has registered it)."""
    return torch.device(DEVICE_TYPE, index)


@functools.cache
def _op_facts(func: Any) -> tuple[str, bool]:
    """An op's schema name and whether it writes to an argument (read once per overload)."""
    schema = func._schema
    return schema.name, schema.is_mutable


def _target_device(on_neuron: bool, kwargs: dict[str, Any]) -> tuple[int | None, dict[str, Any]]:
    """0 when the outputs belong on `neuron` (None: CPU), and kwargs with `device` on the CPU.

    Every `neuron:N` tensor lives on `neuron:0`: PyTorch's Python device guard reports a single
    device, and the autograd engine rejects any other index.
    """
    device = kwargs.get("device")
    if device is not None:
        device = torch.device(device)
        kwargs = {**kwargs, "device": torch.device("cpu")}
        if device.type != DEVICE_TYPE:
            return None, kwargs
        device_module.note_index(device.index if device.index is not None else device_module.current_index())
        return 0, kwargs
    return (0 if on_neuron else None), kwargs


def _unwrapper(originals: dict[int, Any]) -> Callable[[Any], Any]:
    def unwrap(value: Any) -> Any:
        if isinstance(value, NeuronTensor):
            raw = value._raw
            originals[id(raw)] = value
            return raw
        if isinstance(value, torch.Tensor):
            originals.setdefault(id(value), value)
        return value

    return unwrap


def _wrapper(originals: dict[int, Any], index: int | None) -> Callable[[Any], Any]:
    def wrap(value: Any) -> Any:
        if not isinstance(value, torch.Tensor):
            return value
        if id(value) in originals:  # in-place and out= ops return their argument
            return originals[id(value)]
        if index is not None and value.is_cpu:
            return NeuronTensor(value, index)
        return value

    return wrap


def _check_metadata(name: str, originals: dict[int, Any]) -> None:
    for raw_id, original in originals.items():
        is_wrapper = isinstance(original, NeuronTensor) and id(original._raw) == raw_id
        if is_wrapper and original._raw.shape != original.shape:
            raise EmulationError(f"the CPU emulation cannot resize a `neuron` tensor in place ({name})")


_SKIPPED_FACTORY_PREFIXES = (
    "_pin_memory",
    "is_pinned",
    "_resize_output",
    "sparse",
    "_sparse",
    "_nested",
)


def composite_factories() -> list[str]:
    """Factory overloads (they take `device`) whose PrivateUse1 kernel is a composite.

    Those composites allocate an empty tensor and resize it through an `out=` overload, which a
    wrapper tensor cannot follow, so the emulation runs the whole factory on the CPU instead.
    """
    names = []
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("aten::") or schema.is_mutable:
            continue
        if not any(arg.name == "device" for arg in schema.arguments):
            continue
        qualified = schema.name + (f".{schema.overload_name}" if schema.overload_name else "")
        if _is_explicit_composite(qualified) and not qualified[6:].startswith(_SKIPPED_FACTORY_PREFIXES):
            names.append(qualified[6:])
    return names


def _is_explicit_composite(qualified: str) -> bool:
    has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
    try:
        return has_kernel(qualified, "CompositeExplicitAutograd") and not has_kernel(
            qualified, "CompositeImplicitAutograd"
        )
    except RuntimeError:  # a schema without a dispatcher entry
        return False


def _cpu_kernel(name: str) -> Callable[..., Any]:
    packet, _, overload = name.partition(".")
    op = getattr(getattr(torch.ops.aten, packet), overload or "default")

    def kernel(*args: Any, **kwargs: Any) -> Any:
        return run_on_cpu(op, args, kwargs)

    return kernel


def _privateuse1_fallback(op: Any, *args: Any, **kwargs: Any) -> Any:
    return run_on_cpu(op, args, kwargs)


def install(config: EmulationConfig) -> list[object]:
    """Register the emulated `neuron` device in this process; return objects to keep alive."""
    from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

    module = device_module.build_module(config.device_count)
    _setup_privateuseone_for_python_backend(DEVICE_TYPE, backend_module=module)
    fallback_lib = torch.library.Library("_", "IMPL")
    fallback_lib.fallback(_privateuse1_fallback, "PrivateUse1")
    factory_lib = torch.library.Library("aten", "IMPL")
    for name in composite_factories():
        factory_lib.impl(name, _cpu_kernel(name), "PrivateUse1")
    device_module.patch_accelerator(module)
    patches.patch_pin_memory()
    patches.patch_data_constructors()
    keep: list[object] = [fallback_lib, factory_lib, module]
    keep.extend(amp.register(enabled=config.autocast))
    process_group.register()
    return keep
