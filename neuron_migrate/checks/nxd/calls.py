"""NxD calls with a plain counterpart (NM326, NM333): ZeRO-1, seeds, clipping, device moves, `divide`.

`NeuronZero1Optimizer(params, cls, ...)` -> `_Zero1Optimizer(params, cls, ...,
process_group=_MESH["dp"].get_group())`, torch's ZeRO with the averaging and clipping NxD's step did
(the helper is written into the file). The others are one-call rewrites: `torch.manual_seed(seed)`,
`torch.nn.utils.clip_grad_norm_(params, max_norm)`, `model.to(device)`, `a // b`.
"""

from __future__ import annotations

import ast

from neuron_migrate.analysis.values import Edit, Match, Plan
from neuron_migrate.catalogue import load_catalogue
from neuron_migrate.checks.helpers import HELPER_NAMES, helper_imports
from neuron_migrate.checks.nxd.mesh import MESH, atom, mesh_source
from neuron_migrate.checks.toolkit import FixContext
from neuron_migrate.checks.toolkit_calls import argument, operand

# NeuronZero1Optimizer's keywords the native optimizer has no use for (see NM326's [map.params]).
_DROPPED = frozenset(
    {
        "pin_layout",
        "grad_norm_groups",
        "bucket_cap_mb_all_gather",
        "bucket_cap_mb_reduce_scatter",
        "save_master_weights",
        "higher_cc_precision",
    }
)
# What NxD passes (or defaults to) as `sharding_groups`: the data-parallel rank lists.
_DATA_PARALLEL_LISTS = frozenset(
    {
        "neuronx_distributed.parallel_layers.parallel_state.get_data_parallel_replica_groups",
        "neuronx_distributed.parallel_layers.parallel_state.get_data_parallel_group",
    }
)


def _mesh_ready(ctx: FixContext) -> bool:
    rule = next(s for s in load_catalogue() if s.name == "nxd_parallel_state")
    return mesh_source(ctx.analysis, rule) is not None


def zero1_optimizer(ctx: FixContext, match: Match) -> Plan | None:
    """`NeuronZero1Optimizer(params, cls, ...)` -> `_Zero1Optimizer(params, cls, ..., process_group=...)`."""
    call = match.node
    if not isinstance(call, ast.Call) or len(call.args) != 2 or not _mesh_ready(ctx):
        return None
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    groups = argument(call, "sharding_groups", -1)
    if groups is not None and not _data_parallel_lists(ctx, match, groups):
        return None  # sharding over other groups: a person builds that process group
    needed = helper_imports(ctx, match, "zero1_optimizer")
    if needed is None:
        return None
    kept = [ctx.segment(a) for a in call.args]
    kept += [f"{k.arg}={ctx.segment(k.value)}" for k in call.keywords if k.arg not in _DROPPED | {"sharding_groups"}]
    kept.append(f'process_group={MESH}["dp"].get_group()')
    start, end = ctx.src.node_span(call)
    return Plan((Edit(start, end, _laid_out(ctx, call, HELPER_NAMES["zero1_optimizer"], kept)),), needed)


def _data_parallel_lists(ctx: FixContext, match: Match, node: ast.expr) -> bool:
    """`get_data_parallel_replica_groups()` or `get_data_parallel_group(as_list=True)`; `None`."""
    if isinstance(node, ast.Constant) and node.value is None:
        return True
    return isinstance(node, ast.Call) and bool(ctx.analysis.call_names(node, match.scope) & _DATA_PARALLEL_LISTS)


def _laid_out(ctx: FixContext, call: ast.Call, callee: str, arguments: list[str]) -> str:
    """`callee(a, b)`, one argument per line when the call was written over several lines."""
    if call.lineno == call.end_lineno:
        return f"{callee}({', '.join(arguments)})"
    first = call.args[0] if call.args else call.keywords[0]
    indent = ctx.src.indent_of(first.lineno)
    closing = ctx.src.indent_of(call.end_lineno or call.lineno)
    newline = ctx.src.newline
    return f"{callee}({newline}" + "".join(f"{indent}{a},{newline}" for a in arguments) + f"{closing})"


def manual_seed(ctx: FixContext, match: Match) -> Plan | None:
    """`model_parallel_xla_manual_seed(seed)` -> `torch.manual_seed(seed)`, on every rank."""
    call = match.node
    if not isinstance(call, ast.Call) or len(call.args) + len(call.keywords) != 1:
        return None
    seed = argument(call, "seed", 0)
    if seed is None:
        return None
    rendered = ctx.render(f"{{torch}}.manual_seed({ctx.segment(seed)})", match)
    return ctx.replace(call, rendered[0], rendered[1]) if rendered else None


def clip_grad_norm(ctx: FixContext, match: Match) -> Plan | None:
    """`clip_grad_norm(params, max_norm[, norm_type])` -> `torch.nn.utils.clip_grad_norm_(...)`."""
    call = match.node
    if not isinstance(call, ast.Call) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    names = ("parameters", "max_norm", "norm_type")
    values = [argument(call, name, index) for index, name in enumerate(names)]
    if values[0] is None or values[1] is None or len(call.args) > 3:
        return None
    parts = [
        f"{n}={ctx.segment(v)}" if n == "norm_type" else ctx.segment(v) for n, v in zip(names, values) if v is not None
    ]
    rendered = ctx.render(f"{{torch}}.nn.utils.clip_grad_norm_({', '.join(parts)})", match)
    return ctx.replace(call, rendered[0], rendered[1]) if rendered else None


def move_model_to_device(ctx: FixContext, match: Match) -> Plan | None:
    """`move_model_to_device(model, device)` -> `model.to(device)`."""
    call = match.node
    if not isinstance(call, ast.Call) or len(call.args) + len(call.keywords) != 2:
        return None
    model, device = argument(call, "model", 0), argument(call, "device", 1)
    if model is None or device is None:
        return None
    return ctx.replace(call, f"{operand(ctx, model)}.to({ctx.segment(device)})")


def divide(ctx: FixContext, match: Match) -> Plan | None:
    """`divide(a, b)` -> `a // b` (NxD also asserted that `b` divides `a`)."""
    call = match.node
    if not isinstance(call, ast.Call) or len(call.args) + len(call.keywords) != 2:
        return None
    numerator, denominator = argument(call, "numerator", 0), argument(call, "denominator", 1)
    if numerator is None or denominator is None:
        return None
    return ctx.replace(call, f"{atom(ctx, numerator)} // {atom(ctx, denominator)}")
