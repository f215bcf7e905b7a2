"""`xm.all_reduce`, `xm.all_gather` and `xm.reduce_scatter` -> helpers with their exact meaning.

Each call keeps its arguments and calls a helper written into the file once, which does what
torch_xla did with `torch.distributed`: a list is reduced in place and returned, a tensor is
reduced into a new one, `scale=` multiplies the result, and without a process group the call
acts on one rank. `groups=` other than None, and list forms of the gather and scatter, stay
findings. Pure functions (FixContext, Match) -> Plan | None, merged into `fixes.FIXES`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from neuron_migrate.analysis.analyze import Match, Plan
from neuron_migrate.checks.helper_code import HELPER_NAMES, helper_imports

if TYPE_CHECKING:
    from neuron_migrate.checks.fixes import FixContext

# Parameters of each torch_xla collective, by position (the helpers take the same ones).
_PARAMETERS = {
    "all_reduce": ("reduce_type", "inputs", "scale", "groups", "pin_layout"),
    "all_gather": ("value", "dim", "groups", "output", "pin_layout"),
    "reduce_scatter": (
        "reduce_type",
        "input",
        "scale",
        "scatter_dim",
        "shard_count",
        "groups",
        "output",
        "pin_layout",
    ),
}
_TENSOR_ONLY = {"all_gather": "value", "reduce_scatter": "input"}


def collective(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.all_reduce(...)` -> `_all_reduce(...)` (and the same for all_gather and reduce_scatter)."""
    call = match.node
    kind = match.qualified.rsplit(".", 1)[-1]
    if not isinstance(call, ast.Call) or kind not in _PARAMETERS:
        return None
    parameters = _PARAMETERS[kind]
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    if len(call.args) > len(parameters) or any(k.arg not in parameters for k in call.keywords):
        return None
    given = dict(zip(parameters, call.args)) | {k.arg: k.value for k in call.keywords if k.arg}
    groups = given.get("groups")
    if groups is not None and not (isinstance(groups, ast.Constant) and groups.value is None):
        return None  # replica groups become `dist.new_group` process groups; a human maps them
    tensor_arg = given.get(_TENSOR_ONLY.get(kind, ""))
    if isinstance(tensor_arg, (ast.List, ast.Tuple)):
        return None  # the list forms of all_gather / reduce_scatter are rare; port by hand
    needed = helper_imports(ctx, match, kind)
    if needed is None:
        return None
    start, end = ctx.src.node_span(call.func)
    return Plan(((start, end, HELPER_NAMES[kind]),), needed)


FIXES: Mapping[str, Callable[[FixContext, Match], Plan | None]] = MappingProxyType({"collective": collective})
