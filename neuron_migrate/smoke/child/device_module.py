"""`torch.neuron` for the emulated device: the device-module API TorchNeuron registers.

Child process only. Mirrors the function names of `torch_neuronx/neuron.py` (torchneuron-facts
§4); memory statistics are zero because the emulation has no device memory.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import types
from collections.abc import Iterator
from typing import Any

import torch

# The emulated device's per-process state (current index), like a real backend's runtime state.
# Only the smoke child process, which owns the device, ever writes it.
_STATE: dict[str, int] = {}


def current_index() -> int:
    """The index `torch.device("neuron")` means right now."""
    return _STATE.get("current", 0)


def note_index(index: int) -> None:
    """Remember that the script asked for `neuron:index` (the emulation places it on 0)."""
    if index:
        _STATE["remapped"] = max(_STATE.get("remapped", 0), index)


def remapped_note() -> str:
    """A report note when the script used device indices the emulation folded onto 0."""
    if not _STATE.get("remapped"):
        return ""
    return "the emulation places tensors for `neuron:1` and above on `neuron:0`"


def _private_use1_type() -> int:
    # A pybind11 enum: no __int__ in its stub (the ignore below).
    return int(torch._C._autograd.DeviceType.PrivateUse1)  # type: ignore[call-overload]


class Stream(torch.Stream):
    """A stream that is always idle: the emulation runs every op synchronously."""

    # A final class: nothing subclasses it (the ignore below).
    def __new__(cls, device: Any = None, priority: int = 0, **_: Any) -> Stream:  # noqa: PYI034
        index = _index_of(device)
        return super().__new__(cls, stream_id=0, device_index=index, device_type=_private_use1_type())

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def wait_stream(self, stream: Any) -> None:
        return None

    def wait_event(self, event: Any) -> None:
        return None

    def record_event(self, event: Any = None) -> Any:
        return event if event is not None else Event()


class Event:
    """An event that is complete as soon as it is recorded."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, **_: Any) -> None:
        self.enable_timing = enable_timing

    def record(self, stream: Any = None) -> None:
        return None

    def wait(self, stream: Any = None) -> None:
        return None

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, end_event: Event) -> float:
        return 0.0


def _index_of(device: Any) -> int:
    if device is None:
        return current_index()
    if isinstance(device, int):
        return device
    parsed = torch.device(device)
    return parsed.index if parsed.index is not None else current_index()


def _set_device(device: Any) -> None:
    _STATE["current"] = _index_of(device)


@contextlib.contextmanager
def _device(device: Any) -> Iterator[None]:
    previous = current_index()
    _set_device(device)
    try:
        yield
    finally:
        _STATE["current"] = previous


@contextlib.contextmanager
def _stream(stream: Any) -> Iterator[None]:
    yield


def _properties(count: int) -> Any:
    return types.SimpleNamespace(name="neuron (emulated on CPU)", total_memory=0, count=count)


def _zero(*_: Any, **__: Any) -> int:
    return 0


def _none(*_: Any, **__: Any) -> None:
    return None


def _manual_seed(seed: int) -> None:
    torch.manual_seed(seed)  # the CPU generator is the emulated device's generator


def build_module(device_count: int) -> types.ModuleType:
    """A `torch.neuron` module for an emulated device with `device_count` devices."""
    _STATE["current"] = 0
    _STATE["count"] = device_count
    mod = types.ModuleType("torch.neuron", "Emulated TorchNeuron device module (neuron-migrate smoke)")
    functions: dict[str, Any] = {
        "is_available": lambda: True,
        "device_count": lambda: device_count,
        "current_device": current_index,
        "set_device": _set_device,
        "device": _device,
        "get_device_name": lambda device=None: f"neuron:{_index_of(device)}",
        "get_device_properties": lambda device=None: _properties(device_count),
        "is_initialized": lambda: True,
        "init": _none,
        "_is_in_bad_fork": lambda: False,
        "_lazy_init": _none,
        "synchronize": _none,
        "Stream": Stream,
        "Event": Event,
        "stream": _stream,
        "current_stream": lambda device=None: Stream(device),
        "default_stream": lambda device=None: Stream(device),
        "set_stream": _none,
        "manual_seed": _manual_seed,
        "manual_seed_all": _none,  # the CPU generator is the device generator here
        "seed": lambda: torch.seed(),
        "seed_all": _none,
        "initial_seed": lambda: torch.initial_seed(),
        "get_rng_state": lambda device=None: torch.get_rng_state(),
        "set_rng_state": lambda state, device=None: torch.set_rng_state(state),
        "get_amp_supported_dtype": lambda: [
            torch.float32,
            torch.float16,
            torch.bfloat16,
        ],
        "is_bf16_supported": lambda *a, **k: True,
        "empty_cache": _none,
    }
    for name in (
        "memory_allocated",
        "max_memory_allocated",
        "memory_reserved",
        "max_memory_reserved",
    ):
        functions[name] = _zero
    functions["memory_stats"] = lambda device=None: {}
    functions["memory_summary"] = lambda device=None, abbreviated=False: "emulated neuron device"
    functions["reset_peak_memory_stats"] = _none
    functions["reset_accumulated_memory_stats"] = _none
    for name, value in functions.items():
        setattr(mod, name, value)
    return mod


def patch_accelerator(module: types.ModuleType) -> None:
    """Route `torch.accelerator` calls the Python device guard cannot serve to `module`."""
    accel = torch.accelerator
    original_set = accel.set_device_index

    def synchronize(device: Any = None) -> None:
        return None

    def current_device_index() -> int:
        return current_index()

    def set_device_index(device: Any) -> None:
        _set_device(device)
        original_set(device)

    accel.synchronize = synchronize
    accel.current_device_index = current_device_index
    accel.current_device_idx = current_device_index
    accel.set_device_index = set_device_index
    accel.set_device_idx = set_device_index


def build_torch_neuronx_stub() -> types.ModuleType:
    """A `torch_neuronx` module for scripts that import it explicitly under emulation."""
    import torch

    mod = types.ModuleType("torch_neuronx", "neuron-migrate emulation stub of torch_neuronx")
    # Libraries probe with `importlib.util.find_spec("torch_neuronx")`, which raises for a module
    # in `sys.modules` whose `__spec__` is None; a loader-less spec says "present, built in".
    mod.__spec__ = importlib.machinery.ModuleSpec("torch_neuronx", None, origin="neuron-migrate smoke emulation")
    neuron = torch.neuron  # type: ignore[attr-defined]  # registered by this emulation at run time
    for name in (
        "device_count", "current_device", "set_device", "synchronize", "empty_cache",
        "get_device_properties", "memory_allocated", "max_memory_allocated", "Stream", "Event",
    ):  # fmt: skip
        setattr(mod, name, getattr(neuron, name))
    # The stand-in torch_neuronx module gets attributes mypy cannot know.
    mod.get_fallback_ops = list  # type: ignore[attr-defined]
    mod.get_executed_ops = list  # type: ignore[attr-defined]  # as above
    mod.clear_op_tracking = lambda: None  # type: ignore[attr-defined]  # as above

    def missing(name: str) -> Any:
        raise AttributeError(f"`torch_neuronx.{name}` is not available on the emulated device")

    mod.__getattr__ = missing  # type: ignore[method-assign]  # a module-level __getattr__ (PEP 562)
    return mod
