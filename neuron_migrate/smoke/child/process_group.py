"""The `neuron` process-group backend for the emulated device, backed by gloo.

`init_process_group("neuron")` builds a gloo process group. Collectives on `neuron` tensors
reach the emulated tensor's dispatch as `c10d::*` ops, run on the CPU copies (gloo) and
update them in place. Child process only.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import torch.distributed as dist

BACKEND = "neuron"


def _create(store: Any, rank: int, world_size: int, timeout: timedelta) -> Any:
    return dist.ProcessGroupGloo(store, rank, world_size, timeout)


def register() -> None:
    """Register the `neuron` backend name (once per process)."""
    if not dist.is_available() or BACKEND.upper() in dist.Backend._plugins:
        return
    # The CPU entry lets the unwrapped CPU copies find gloo; collectives on tensors the script
    # left on the CPU are reported as device mixing by the recorder.
    dist.Backend.register_backend(BACKEND, _create, devices=[BACKEND, "cpu"])
    _route_cpu_copies()


def _route_cpu_copies() -> None:
    """Give every process group with a `neuron` backend a CPU entry too.

    `init_process_group()` without a backend (what `init_device_mesh("neuron", ...)` calls) maps
    only the detected accelerator, `neuron`; the emulation runs each collective on the CPU copies
    of its `neuron` tensors, which then need the same gloo backend under the `cpu` key.
    """
    from torch.distributed.distributed_c10d import BackendConfig

    original = BackendConfig.__init__

    def init(self: Any, backend: Any) -> None:
        original(self, backend)
        found = self.device_backend_map.get(BACKEND)
        if found is not None:
            self.device_backend_map.setdefault("cpu", found)

    BackendConfig.__init__ = init  # type: ignore[method-assign]  # the emulation patches torch
