"""Checksums of the trained parameters, so the runner can tell whether the ranks agree.

Child process only. Each rank writes one small checksum per parameter into its report, and the
runner compares the ranks' reports; that needs no live process group, so it also works for a
script that never created one or destroyed it before the end.
"""

from __future__ import annotations

from typing import Any

import torch

from neuron_migrate.smoke.child.hooks import RunState
from neuron_migrate.smoke.child.values import dtensor_type


def parameter_checksums(state: RunState) -> list[dict[str, Any]] | None:
    """[{"name", "sum", "abs"} or {"name", "sharded": True}] for the trained parameters.

    None when no optimizer stepped (nothing was trained, so nothing has to agree).
    """
    if state.optimizer is None:
        return None
    with state.quiet(), torch.no_grad():
        return [_checksum(name, p) for name, p in _trained(state)]


def _trained(state: RunState) -> list[tuple[str, torch.Tensor]]:
    """The counted optimizer's parameters, named after the counted model where it has them."""
    names: dict[int, str] = {}
    if state.model is not None:
        names = {id(p): n for n, p in state.model.named_parameters()}
    params = [p for group in state.optimizer.param_groups for p in group["params"]]
    return [(names.get(id(p), f"parameter {i}"), p) for i, p in enumerate(params)]


def _checksum(name: str, param: torch.Tensor) -> dict[str, Any]:
    local = _replicated_local(param)
    if local is None:
        return {"name": name, "sharded": True}
    values = local.detach().cpu().double()
    return {"name": name, "sum": float(values.sum()), "abs": float(values.abs().sum())}


def _replicated_local(param: torch.Tensor) -> torch.Tensor | None:
    """The rank's full copy of a parameter; None for a sharded DTensor (one copy in total)."""
    dtensor = dtensor_type()
    if dtensor is None or not isinstance(param, dtensor):
        return param
    from torch.distributed.tensor import Replicate

    if all(isinstance(p, Replicate) for p in param.placements):
        return param.to_local()
    return None
