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
