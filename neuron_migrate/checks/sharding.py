"""Sharding (NM311, NM315): torch_xla FSDP -> FSDP2, its checkpoints -> DCP, its ZeRO-1 -> torch's.

`m = XlaFullyShardedDataParallel(net, ...)` with a readable policy becomes `fully_shard` calls;
every other shape (built in a lambda or a function, a size-based or custom policy, an
`auto_wrapper_callable`, a loop over submodules) calls the `_fully_shard` helper, which applies
the policy the way torch_xla's recursive wrap did. `get_shard_metadata()` and
`consolidate_sharded_model_checkpoints` become helpers that gather and write a full state dict.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from types import MappingProxyType

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.index import needles
from neuron_migrate.analysis.names import Scope
from neuron_migrate.analysis.values import Edit, Match, Plan
from neuron_migrate.catalogue import MapEntry, RuleSpec
from neuron_migrate.checks.helpers import HELPER_NAMES, helper_imports
from neuron_migrate.checks.toolkit import DetectorFn, FixContext, FixFn
from neuron_migrate.checks.toolkit_calls import is_default, matched_call
from neuron_migrate.model import Safety

TRANSFORMER_POLICY = "torch_xla.distributed.fsdp.wrap.transformer_auto_wrap_policy"


# XLA-only arguments: layout pinning, graph barriers and flattening have no FSDP2 meaning.
XLA_ONLY = frozenset(
    {
        "pin_layout_in_collective_ops", "mark_step_on_finalization", "optimization_barrier_in_forward",
        "optimization_barrier_in_backward", "shard_param_on_dim_0", "flatten_parameters",
        "execute_sharding_on_init", "use_all_gather_via_all_reduce", "sync_on_finalization",
    }
)  # fmt: skip


_LOOP_NAME = "submodule"


def xla_fsdp(ctx: FixContext, match: Match) -> Plan | None:
    """`m = FSDP(net, ...)` -> `fully_shard` calls where the policy reads statically, else `_fully_shard`."""
    return _fully_shard_statements(ctx, match) or _fully_shard_helper(ctx, match)


def _fully_shard_statements(ctx: FixContext, match: Match) -> Plan | None:
    """`m = FSDP(net, auto_wrap_policy=p, compute_dtype=d)` -> `fully_shard` on p's classes, then on `m`."""
    call = match.node
    stmt = ctx.analysis.parent(call)
    if not isinstance(call, ast.Call) or not isinstance(stmt, ast.Assign) or stmt.value is not call:
        return None
    if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], (ast.Name, ast.Attribute)):
        return None
    if len(call.args) != 1 or isinstance(call.args[0], ast.Starred) or any(k.arg is None for k in call.keywords):
        return None
    options = _shard_options(ctx, match, call)
    policy = next((k.value for k in call.keywords if k.arg == "auto_wrap_policy" and not is_default(match, k)), None)
    read = _policy_classes(ctx, match, policy) if policy is not None else ((), None)
    fsdp = ctx.render("{fsdp}", match)
    if options is None or read is None or fsdp is None or ctx.analysis.resolver.lookup(_LOOP_NAME, match.scope):
        return None
    classes, policy_stmt = read
    target = ctx.segment(stmt.targets[0])
    module = ctx.segment(call.args[0])
    lines = [f"{target} = {module}"] if module != target else []
    suffix = "".join(f", {o}" for o in options).replace("{fsdp}", fsdp[0])
    if classes:
        kinds = ", ".join(classes) + ("," if len(classes) == 1 else "")
        lines += [
            f"for {_LOOP_NAME} in {target}.modules():",
            f"\tif isinstance({_LOOP_NAME}, ({kinds})):",
        ]
        lines.append(f"\t\t{fsdp[0]}.fully_shard({_LOOP_NAME}{suffix})")
    lines.append(f"{fsdp[0]}.fully_shard({target}{suffix})")
    plan = ctx.replace_statement(stmt, lines, fsdp[1], safety=Safety.UNSAFE)
    if plan is None or policy_stmt is None:
        return plan
    removed = ctx.delete_statement(policy_stmt)
    if removed is None:
        return plan
    return Plan(plan.edits + removed.edits, plan.imports, Safety.UNSAFE, deletes=removed.deletes)


def _shard_options(ctx: FixContext, match: Match, call: ast.Call) -> list[str] | None:
    """`fully_shard` keyword arguments for the XLA FSDP ones; None when one has no FSDP2 meaning."""
    options: list[str] = []
    mixed: list[str] = []
    for keyword in call.keywords:
        value = ctx.segment(keyword.value)
        if keyword.arg == "compute_dtype":
            mixed.append(f"param_dtype={value}")
        elif keyword.arg == "reshard_after_forward":
            options.append(f"reshard_after_forward={value}")
        elif keyword.arg not in XLA_ONLY and keyword.arg != "auto_wrap_policy" and not is_default(match, keyword):
            return None
    if mixed:
        options.append("mp_policy={fsdp}.MixedPrecisionPolicy(" + ", ".join(mixed) + ")")
    return options


def _policy_classes(ctx: FixContext, match: Match, policy: ast.expr) -> tuple[tuple[str, ...], ast.stmt | None] | None:
    """The layer classes of a `partial(transformer_auto_wrap_policy, transformer_layer_cls=...)`.

    Also the statement that defines the policy, when a name bound once and used only here
    refers to it (the fix deletes it). None when the policy cannot be read statically.
    """
    definition: ast.stmt | None = None
    if isinstance(policy, ast.Name):
        bindings = ctx.analysis.resolver.lookup(policy.id, match.scope)
        node = _statement_of(ctx, bindings[0].node) if len(bindings) == 1 and bindings[0].node else None
        if not isinstance(node, ast.Assign) or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            return None
        loads = sum(
            1
            for n in ast.walk(ctx.analysis.tree)
            if isinstance(n, ast.Name) and n.id == policy.id and isinstance(n.ctx, ast.Load)
        )
        definition = node if loads == 1 else None
        policy = node.value
    if not isinstance(policy, ast.Call) or len(policy.args) != 1 or len(policy.keywords) != 1:
        return None
    scope = match.scope
    if "functools.partial" not in ctx.analysis.qualified(policy.func, scope):
        return None
    if (
        TRANSFORMER_POLICY not in ctx.analysis.qualified(policy.args[0], scope)
        or policy.keywords[0].arg != "transformer_layer_cls"
    ):
        return None
    layers = policy.keywords[0].value
    if isinstance(layers, (ast.Name, ast.Attribute)):
        return (f"*{ctx.segment(layers)}",), definition  # a set built elsewhere: `isinstance(m, (*s,))`
    if not isinstance(layers, (ast.Set, ast.Tuple, ast.List)) or not layers.elts:
        return None
    if not all(isinstance(e, (ast.Name, ast.Attribute)) for e in layers.elts):
        return None
    return tuple(ctx.segment(e) for e in layers.elts), definition


def _statement_of(ctx: FixContext, node: ast.AST) -> ast.stmt | None:
    current: ast.AST | None = node
    while current is not None and not isinstance(current, ast.stmt):
        current = ctx.analysis.parent(current)
    return current


# What `_fully_shard` does with each XLA FSDP parameter besides `module`: FSDP2 keeps these
# (`compute_dtype` as the param dtype, `fp32_reduce_scatter` as a float32 reduce dtype,
# `buffer_dtype` by casting the buffers, the policy and wrapper through torch_xla's recursive
# wrap); drops the ones with no FSDP2 meaning (layout pinning, graph barriers, flattening,
# collective bucketing, debugging); and declines model-parallel sharding groups and deferred
# initialisation, which need a DeviceMesh a human designs.
FSDP_KEPT = frozenset(
    {
        "reshard_after_forward",
        "compute_dtype",
        "buffer_dtype",
        "fp32_reduce_scatter",
        "auto_wrap_policy",
        "auto_wrapper_callable",
    }
)
FSDP_DROPPED = XLA_ONLY | {
    "sync_on_finalization", "disable_reshard_on_root", "reduce_scatter_bucket_size_mb", "coalesce_all_gather_ops",
    "_shard_size_multiple", "_use_xla_patched_linear", "_debug_dummy_forward_pass", "_debug_msg", "_debug_print",
    "_debug_dummy_all_gather_op", "_debug_dummy_all_reduce_op", "_debug_dummy_reduce_scatter_op",
    "_debug_dummy_optimization_barrier_op",
}  # fmt: skip
FSDP_DECLINED = frozenset({"sharding_groups", "sharding_rank", "sharding_world_size", "param_init_fn"})


def _fully_shard_helper(ctx: FixContext, match: Match) -> Plan | None:
    """`FSDP(m, ...)` anywhere (a lambda, a function, a loop) -> `_fully_shard(m, ...)`; also the
    bare class given as `auto_wrapper_callable=`, which the helper calls on each wrapped child."""
    node = match.node
    if isinstance(node, ast.Call):
        if not _helper_arguments(node):
            return None
        target: ast.AST = node.func
    else:
        parent = ctx.analysis.parent(node)
        if not (isinstance(parent, ast.keyword) and parent.arg == "auto_wrapper_callable"):
            return None
        target = node
    needed = helper_imports(ctx, match, "fully_shard")
    if needed is None:
        return None
    start, end = ctx.src.node_span(target)
    return Plan((Edit(start, end, HELPER_NAMES["fully_shard"]),), needed, Safety.UNSAFE)


def _helper_arguments(call: ast.Call) -> bool:
    """Whether `_fully_shard` keeps the meaning of every argument (forwarded `*args`/`**kwargs` too)."""
    plain = [a for a in call.args if not isinstance(a, ast.Starred)]
    if not call.args or isinstance(call.args[0], ast.Starred) or len(plain) > 2:
        return False
    for keyword in call.keywords:
        if keyword.arg is None or keyword.arg in FSDP_KEPT or keyword.arg in FSDP_DROPPED:
            continue
        none = isinstance(keyword.value, ast.Constant) and keyword.value.value is None
        if keyword.arg not in FSDP_DECLINED or not none:
            return False
    return True


def checkpoint_module(ctx: FixContext, match: Match) -> Plan | None:
    """`checkpoint_module(m)` -> `_checkpoint_module(m)`, a helper that patches `m.forward` in place
    with torch's activation checkpointing and returns `m`, as torch_xla's did (so a call used only
    for its effect keeps it, and the state dict keeps its keys)."""
    call = matched_call(match)
    if call is None or len(call.args) != 1 or call.keywords or isinstance(call.args[0], ast.Starred):
        return None
    needed = helper_imports(ctx, match, "checkpoint_module")
    if needed is None:
        return None
    start, end = ctx.src.node_span(call.func)
    return Plan((Edit(start, end, HELPER_NAMES["checkpoint_module"]),), needed)


def consolidate_checkpoints(ctx: FixContext, match: Match) -> Plan | None:
    """`consolidate_sharded_model_checkpoints(...)` -> the helper that writes `_shard_metadata`'s full state dict."""
    return _helper_callee(
        ctx, match, "consolidate_checkpoints", ("ckpt_prefix", "ckpt_suffix", "save_path", "save_model")
    )


def shard_metadata(ctx: FixContext, match: Match) -> Plan | None:
    """`model.get_shard_metadata()` -> `_shard_metadata(model)`: the DCP full state dict, gathered on every rank."""
    call = matched_call(match)
    if call is None or call.args or call.keywords or not isinstance(call.func, ast.Attribute):
        return None
    needed = helper_imports(ctx, match, "shard_metadata")
    if needed is None:
        return None
    text = f"{HELPER_NAMES['shard_metadata']}({ctx.segment(call.func.value)})"
    return ctx.replace(call, text, needed, safety=Safety.UNSAFE)


# torch_xla ZeRO-1's parameters besides `params`, `optimizer_class` and the optimizer's own
# `**defaults` go to the helper as written: it keeps `grad_clipping`/`max_norm` (torch_xla clipped
# the gradient norm to 1.0 by default) and ignores what only shapes XLA collectives (`pin_layout`,
# the bucket sizes, `coalesce_cc`, ...). Sharding groups, a master weight dtype other than
# float32, lazy initialisation and gradient accumulation hooks decline.
ZERO_DECLINED = {"optimizer_dtype": (None, "torch.float32"), "sharding_groups": (None,), "grad_norm_groups": (None,)}
ZERO_DECLINED_FLAGS = ("lazy_init", "use_grad_acc_hook")


def zero_redundancy_optimizer(ctx: FixContext, match: Match) -> Plan | None:
    """torch_xla's `ZeroRedundancyOptimizer(params, optim.SGD, ...)` -> `_ZeroRedundancyOptimizer(...)`,
    torch's ZeRO plus the gradient averaging (and clipping) torch_xla's `step` did."""
    call = matched_call(match)
    if call is None or len(call.args) != 2 or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    for keyword in call.keywords:
        if keyword.arg is None:
            return None
        text = ctx.segment(keyword.value)
        if keyword.arg in ZERO_DECLINED and text not in map(str, ZERO_DECLINED[keyword.arg]):
            return None
        if keyword.arg in ZERO_DECLINED_FLAGS and text not in ("False", "None"):
            return None
    needed = helper_imports(ctx, match, "zero_redundancy_optimizer")  # with `_average_gradients`, which its step calls
    if needed is None:
        return None
    start, end = ctx.src.node_span(call.func)
    return Plan((Edit(start, end, HELPER_NAMES["zero_redundancy_optimizer"]),), needed, Safety.UNSAFE)


def _helper_callee(ctx: FixContext, match: Match, helper: str, parameters: tuple[str, ...]) -> Plan | None:
    """Call helper `helper` in place of the matched call, whose arguments it takes as they are."""
    call = matched_call(match)
    if call is None or any(isinstance(a, ast.Starred) for a in call.args) or len(call.args) > len(parameters):
        return None
    if any(k.arg not in parameters for k in call.keywords):
        return None
    needed = helper_imports(ctx, match, helper)
    if needed is None:
        return None
    start, end = ctx.src.node_span(call.func)
    return Plan((Edit(start, end, HELPER_NAMES[helper]),), needed, Safety.UNSAFE)


_SHARD_METADATA = "torch_xla.distributed.fsdp.XlaFullyShardedDataParallel.get_shard_metadata"
_XLA_FSDP = "torch_xla.distributed.fsdp"


@needles("get_shard_metadata")
def shard_metadata_call(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`x.get_shard_metadata()` in a module that imports torch_xla's FSDP (no other API has it)."""
    assert isinstance(node, ast.Call)
    func = node.func
    if (
        not isinstance(func, ast.Attribute)
        or func.attr != "get_shard_metadata"
        or analysis.qualified(func.value, scope)
    ):
        return
    if not _imports_xla_fsdp(analysis):
        return
    entry = next((e for e in rule.maps if e.old == _SHARD_METADATA), None) or MapEntry(old=_SHARD_METADATA)
    yield Match(rule, node, scope, entry, _SHARD_METADATA, ".get_shard_metadata()")


# What only torch_xla's FSDP wrapper has: an FSDP2 module (sharded in place) raises AttributeError.
_XLA_FSDP_ONLY = ("clip_grad_norm_", "all_reduce_op", "module", "params_with_grad", "set_gradient_divide_factors")
_CALLED = ("clip_grad_norm_", "all_reduce_op", "set_gradient_divide_factors")


@needles(*_XLA_FSDP_ONLY)
def fsdp_method(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`model.clip_grad_norm_(...)`, `model.module` and the other members of torch_xla's FSDP
    wrapper that FSDP2 has not, on a local object in a module that imports torch_xla's FSDP."""
    assert isinstance(node, ast.Attribute)
    if node.attr not in _XLA_FSDP_ONLY or not isinstance(node.ctx, ast.Load) or analysis.qualified(node.value, scope):
        return
    if not _imports_xla_fsdp(analysis):
        return
    parent = analysis.parent(node)
    called = isinstance(parent, ast.Call) and parent.func is node
    if called != (node.attr in _CALLED):
        return
    old = f"{_XLA_FSDP}.XlaFullyShardedDataParallel.{node.attr}"
    entry = next((e for e in rule.maps if e.old == old), None) or MapEntry(old=old)
    written = f"{analysis.segment(node.value)}.{node.attr}"
    yield Match(rule, parent if called and parent is not None else node, scope, entry, old, written)


def fsdp_clip_grad_norm(ctx: FixContext, match: Match) -> Plan | None:
    """`model.clip_grad_norm_(max_norm, norm_type)` -> `torch.nn.utils.clip_grad_norm_(model.parameters(), ...)`:
    FSDP2's gradients are DTensors, whose norm torch's function computes over every shard."""
    call = matched_call(match)
    if call is None or not isinstance(call.func, ast.Attribute) or not all(k.arg for k in call.keywords):
        return None
    if len(call.args) > 2 or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    receiver = ctx.segment(call.func.value)
    if not isinstance(call.func.value, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
        receiver = f"({receiver})"
    rendered = ctx.render("{torch}.nn.utils.clip_grad_norm_", match)
    if rendered is None:
        return None
    text = f"{rendered[0]}({receiver}.parameters(), {ctx.args_text(call)})"
    return ctx.replace(call, text, rendered[1], safety=Safety.UNSAFE)


def _imports_xla_fsdp(analysis: Analysis) -> bool:
    return analysis.fact(_find_xla_fsdp_import)


def _find_xla_fsdp_import(analysis: Analysis) -> bool:
    return any(
        b.kind == "import" and (b.target == _XLA_FSDP or b.target.startswith(_XLA_FSDP + "."))
        for scope in analysis.resolver.scope_of.values()
        for bindings in scope.bindings.values()
        for b in bindings
    )


DETECTORS: Mapping[str, tuple[tuple[type, ...], DetectorFn]] = MappingProxyType(
    {"shard_metadata_call": ((ast.Call,), shard_metadata_call), "fsdp_method": ((ast.Attribute,), fsdp_method)}
)


FIXES: Mapping[str, FixFn] = MappingProxyType(
    {
        "xla_fsdp": xla_fsdp,
        "checkpoint_module": checkpoint_module,
        "consolidate_checkpoints": consolidate_checkpoints,
        "shard_metadata": shard_metadata,
        "zero_redundancy_optimizer": zero_redundancy_optimizer,
        "fsdp_clip_grad_norm": fsdp_clip_grad_norm,
    }
)
