"""Values that a message template may name beyond `{old}` and `{new}`, read from the matched call."""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from types import MappingProxyType

from neuron_migrate.analysis.analyze import Match

# torch_xla reduce types (constants and strings) -> torch.distributed.ReduceOp members.
_REDUCE_OPS = {"sum": "SUM", "mul": "PRODUCT", "and": "BAND", "or": "BOR", "min": "MIN", "max": "MAX"}


def reduce_op(match: Match) -> str:
    """`xm.all_reduce(xm.REDUCE_MAX, t)` -> `dist.ReduceOp.MAX`; the op to look up when unknown."""
    call = match.node
    first = call.args[0] if isinstance(call, ast.Call) and call.args else None
    if isinstance(call, ast.Call) and first is None:
        first = next((k.value for k in call.keywords if k.arg == "reduce_type"), None)
    key = None
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        key = first.value.lower()
    elif isinstance(first, ast.Attribute) and first.attr.startswith("REDUCE_"):
        key = first.attr.removeprefix("REDUCE_").lower()
    op = _REDUCE_OPS.get(key or "")
    return f"dist.ReduceOp.{op}" if op else "the matching dist.ReduceOp"


_SPMD_MODULES = ("torch_xla.distributed.spmd", "torch_xla.experimental.xla_sharding")


def world_hint(match: Match) -> str:
    """What replaces a global device count: the world size, or (single-process SPMD) the device count."""
    scope = match.scope
    while scope.parent is not None:
        scope = scope.parent
    if _uses_spmd(scope.node):
        return "`torch.accelerator.device_count()` times the hosts; SPMD code runs one process"
    return "`dist.get_world_size()`; TorchNeuron runs one device per rank"


def _uses_spmd(module: ast.AST) -> bool:
    for node in ast.walk(module):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(_SPMD_MODULES):
            return True
        if isinstance(node, ast.Import) and any(a.name.startswith(_SPMD_MODULES) for a in node.names):
            return True
        if isinstance(node, ast.Attribute) and node.attr == "use_spmd":
            return True
    return False


MESSAGE_VALUES: Mapping[str, Callable[[Match], str]] = MappingProxyType(
    {"reduce_op": reduce_op, "world_hint": world_hint}
)
