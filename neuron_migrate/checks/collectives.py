"""Collectives (NM306): `xm.all_reduce`, `all_gather`, `reduce_scatter`, `mesh_reduce`, ...

Each call keeps its arguments and calls a helper written into the file once, which does what
torch_xla did with `torch.distributed`: a list is reduced in place and returned, a tensor is
reduced into a new one, `scale=` multiplies the result, and without a process group the call
acts on one rank. `groups=` other than None, and list forms of the gather and scatter, stay
findings.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from types import MappingProxyType

from neuron_migrate.analysis.analyze import Match, Plan
from neuron_migrate.checks.helpers import HELPER_NAMES, helper_call, helper_imports
from neuron_migrate.checks.toolkit import DetectorFn, FixContext, FixFn, argument, matched_call, plain_args


# -- distributed helpers ----------------------------------------------------------------
def broadcast_master_param(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.broadcast_master_param(model)` -> `_broadcast_master_param(model)`: rank 0's parameters to all."""
    call = matched_call(match)
    if call is None or ctx.expression_statement(match) is None or not plain_args(call):
        return None
    model = argument(call, "model", 0)
    if model is None or len(call.args) + len(call.keywords) != 1:
        return None
    return helper_call(
        ctx,
        match,
        "broadcast_master_param",
        f"_broadcast_master_param({ctx.segment(model)})",
        call,
    )


def mesh_reduce(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.mesh_reduce(tag, data, fn)` -> `_mesh_reduce(data, fn)`: all_gather_object, then `fn`."""
    call = matched_call(match)
    if call is None or not plain_args(call) or len(call.args) + len(call.keywords) != 3:
        return None
    data = argument(call, "data", 1)
    reduce_fn = argument(call, "reduce_fn", 2)
    if data is None or reduce_fn is None or argument(call, "tag", 0) is None:
        return None
    text = f"_mesh_reduce({ctx.segment(data)}, {ctx.segment(reduce_fn)})"
    return helper_call(ctx, match, "mesh_reduce", text, call)


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


DETECTORS: Mapping[str, tuple[tuple[type, ...], DetectorFn]] = MappingProxyType({})


FIXES: Mapping[str, FixFn] = MappingProxyType(
    {
        "broadcast_master_param": broadcast_master_param,
        "mesh_reduce": mesh_reduce,
        "collective": collective,
    }
)
