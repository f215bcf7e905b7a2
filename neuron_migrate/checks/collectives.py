"""Collectives (NM306, NM307): `xm.all_reduce`, `all_gather`, `reduce_scatter`, `mesh_reduce`, ...

Each call keeps its arguments and calls a helper written into the file once, which does what
torch_xla did with `torch.distributed`: a list is reduced in place and returned, a tensor is
reduced into a new one, `scale=` multiplies the result, and without a process group the call
acts on one rank; a list given to all_gather or reduce_scatter is gathered or scattered tensor by
tensor, into a list. `collective_broadcast` broadcasts each tensor from `root_ordinal` in place;
the differentiable `torch_xla.core.functions.all_gather` keeps torch_xla's backward (this rank's
slice of the gradient, not torch's sum over ranks). `groups=` given a ProcessGroup (`dist.new_group`, a getter that returns one)
is passed on to `dist.all_reduce(group=...)`; replica groups (lists of ranks) stay findings.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from types import MappingProxyType

from neuron_migrate.analysis.names import Binding, Scope
from neuron_migrate.analysis.values import Edit, Match, Plan
from neuron_migrate.checks.helpers import HELPER_NAMES, helper_call, helper_imports
from neuron_migrate.checks.toolkit import DetectorFn, FixContext, FixFn
from neuron_migrate.checks.toolkit_calls import argument, is_default, matched_call, plain_args


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
    "all_gather_grad": ("value", "dim"),  # torch_xla.core.functions.all_gather, differentiable
    "collective_broadcast": ("tensors", "root_ordinal", "groups", "pin_layout"),
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


def collective(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.all_reduce(...)` -> `_all_reduce(...)` (and the same for all_gather, reduce_scatter,
    collective_broadcast and `torch_xla.core.functions.all_gather`)."""
    call = match.node
    kind = match.qualified.rsplit(".", 1)[-1]
    if match.qualified.startswith("torch_xla.core.functions."):
        kind += "_grad"
    if not isinstance(call, ast.Call) or kind not in _PARAMETERS:
        return None
    parameters = _PARAMETERS[kind]
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    extra = [k for k in call.keywords if k.arg not in parameters]  # 2.8's `channel_id=None` and the like
    if len(call.args) > len(parameters) or not all(is_default(match, k) for k in extra):
        return None
    given = dict(zip(parameters, call.args)) | {k.arg: k.value for k in call.keywords if k.arg}
    groups = given.get("groups")
    default = groups is None or (isinstance(groups, ast.Constant) and groups.value is None)
    if (
        groups is not None
        and not default
        and not (kind == "all_reduce" and yields_process_group(ctx, groups, match.scope))
    ):
        return None  # replica groups become `dist.new_group` process groups; a human maps them
    needed = helper_imports(ctx, match, kind)
    if needed is None:
        return None
    start, end = ctx.src.node_span(call.func)
    constant = _reduce_type(ctx, match, given.get("reduce_type"))  # NM307's constant, part of this rewrite
    return Plan((Edit(start, end, HELPER_NAMES[kind]), *constant, *(_without(ctx, call, k) for k in extra)), needed)


_REDUCE_TYPES = {
    f"torch_xla.core.xla_model.REDUCE_{op.upper()}": op for op in ("sum", "mul", "and", "or", "min", "max")
}


def _reduce_type(ctx: FixContext, match: Match, node: ast.expr | None) -> tuple[Edit, ...]:
    """The edit that writes a torch_xla reduce-type constant given to the call as its string."""
    if not isinstance(node, (ast.Name, ast.Attribute)):
        return ()
    names = ctx.analysis.qualified(node, match.scope) & set(_REDUCE_TYPES)
    if len(names) != 1:
        return ()
    start, end = ctx.src.node_span(node)
    return (Edit(start, end, f'"{_REDUCE_TYPES[names.pop()]}"'),)


def _calls_xla(ctx: FixContext, match: Match, call: ast.Call) -> bool:
    return any(name.startswith("torch_xla.") for name in ctx.analysis.call_names(call, match.scope))


def reduce_constant(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.REDUCE_SUM` -> `"sum"` (NM307), except as an argument of a torch_xla call: there it is
    the call's fix that writes it (the collectives' does), or it stays with the call it serves."""
    entry = match.entry
    if entry is None or entry.new is None:
        return None
    current = ctx.analysis.parent(match.node)
    while current is not None and not isinstance(current, ast.stmt):
        if isinstance(current, ast.Call) and current.func is not match.node and _calls_xla(ctx, match, current):
            return None
        current = ctx.analysis.parent(current)
    rendered = ctx.render(entry.new, match)
    return ctx.replace(match.node, rendered[0], rendered[1]) if rendered else None


def _without(ctx: FixContext, call: ast.Call, keyword: ast.keyword) -> Edit:
    """The edit that deletes `keyword` (a default the helper does not take) and the comma before it."""
    items: list[ast.expr | ast.keyword] = sorted([*call.args, *call.keywords], key=lambda n: (n.lineno, n.col_offset))
    start, end = ctx.src.node_span(keyword)
    position = items.index(keyword)
    if position == 0:
        return Edit(start, ctx.src.node_span(items[1])[0], "")  # a collective always has its tensor argument too
    return Edit(ctx.src.node_span(items[position - 1])[1], end, "")


# What makes a ProcessGroup (or names one) for `groups=`: torch's factories and constants, and
# neuronx_distributed's `parallel_state.get_*_group()` getters (without `as_list=True`).
_GROUP_FACTORIES = frozenset({"torch.distributed.new_group", "torch.distributed.distributed_c10d.new_group"})
_GROUP_CONSTANTS = frozenset({"torch.distributed.group.WORLD", "torch.distributed.GroupMember.WORLD"})
_NXD_GROUP_GETTERS = "neuronx_distributed.parallel_layers.parallel_state.get_"
_MESH_FACTORY = "torch.distributed.device_mesh.init_device_mesh"
_MAX_GROUP_DEPTH = 4


def yields_process_group(ctx: FixContext, node: ast.expr, scope: Scope, depth: int = 0) -> bool:
    """True when `node` evaluates to a ProcessGroup or None (the default group), read statically.

    Follows a name's assignments (a global set with `global` in an init function counts) and a
    local getter's `return`s, a few levels deep. A list of replica groups is not a ProcessGroup.
    """
    if depth > _MAX_GROUP_DEPTH:
        return False
    if isinstance(node, ast.Constant):
        return node.value is None
    if isinstance(node, ast.Call):
        called = ctx.analysis.qualified(node.func, scope)
        if called & _GROUP_FACTORIES:
            return True
        if any(n.startswith(_NXD_GROUP_GETTERS) and n.endswith("_group") for n in called):
            return not any(k.arg == "as_list" for k in node.keywords)
        if isinstance(node.func, ast.Name) and not node.args and not node.keywords and not called:
            return _getter_yields_group(ctx, node.func, scope, depth)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "get_group":  # `mesh["dp"].get_group()`
            return _is_device_mesh(ctx, node.func.value, scope, depth)
        return False
    if not isinstance(node, (ast.Name, ast.Attribute)):
        return False
    if ctx.analysis.qualified(node, scope) & _GROUP_CONSTANTS:
        return True
    if not isinstance(node, ast.Name):
        return False
    values = _assigned_values(ctx, ctx.analysis.resolver.lookup(node.id, scope))
    owner = ctx.analysis.resolver.module_scope if node.id in scope.globals_ else scope
    return bool(values) and all(yields_process_group(ctx, v, owner, depth + 1) for v in values)


def _is_device_mesh(ctx: FixContext, node: ast.expr, scope: Scope, depth: int) -> bool:
    """`mesh` or `mesh["dp"]` where every assignment of `mesh` is `init_device_mesh(...)` (a global
    set in an init function counts), read statically: its `get_group()` is a ProcessGroup."""
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Call):
        return _MESH_FACTORY in ctx.analysis.call_names(node, scope)
    if not isinstance(node, ast.Name) or depth > _MAX_GROUP_DEPTH:
        return False
    values = _assigned_values(ctx, ctx.analysis.resolver.lookup(node.id, scope))
    owner = ctx.analysis.resolver.module_scope if node.id in scope.globals_ else scope
    return bool(values) and all(_is_device_mesh(ctx, v, owner, depth + 1) for v in values)


def _getter_yields_group(ctx: FixContext, name: ast.Name, scope: Scope, depth: int) -> bool:
    """A call of a local function without arguments: do all its `return`s give a group?"""
    bindings = ctx.analysis.resolver.lookup(name.id, scope)
    if len(bindings) != 1 or not isinstance(bindings[0].node, ast.FunctionDef):
        return False
    function = bindings[0].node
    inner = ctx.analysis.resolver.scope_for(function)
    returns = [r.value for r in _own_returns(function)]
    return bool(returns) and all(v is not None and yields_process_group(ctx, v, inner, depth + 1) for v in returns)


def _own_returns(function: ast.FunctionDef) -> list[ast.Return]:
    """The `return` statements of `function` itself, not of the functions defined inside it."""
    found: list[ast.Return] = []
    todo: list[ast.AST] = list(function.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Return):
            found.append(node)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return found


def _assigned_values(ctx: FixContext, bindings: list[Binding]) -> list[ast.expr]:
    """The values a name's bindings assign; [] when one binding is not a plain `name = value`."""
    values: list[ast.expr] = []
    for binding in bindings:
        stmt = binding.node
        while stmt is not None and not isinstance(stmt, ast.stmt):
            stmt = ctx.analysis.parent(stmt)
        plain = isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
        if not plain and not (isinstance(stmt, ast.AnnAssign) and stmt.value is not None):
            return []
        values.append(stmt.value)  # type: ignore[union-attr]
    return values


DETECTORS: Mapping[str, tuple[tuple[type, ...], DetectorFn]] = MappingProxyType({})


FIXES: Mapping[str, FixFn] = MappingProxyType(
    {
        "broadcast_master_param": broadcast_master_param,
        "mesh_reduce": mesh_reduce,
        "collective": collective,
        "reduce_constant": reduce_constant,
    }
)
