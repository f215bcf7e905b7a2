"""Sharding (NM311): torch_xla FSDP -> FSDP2, `XlaFullyShardedDataParallel(model, ...)` -> `fully_shard`."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from types import MappingProxyType

from neuron_migrate.analysis.analyze import Match, Plan
from neuron_migrate.checks.toolkit import DetectorFn, FixContext, FixFn
from neuron_migrate.model import Safety

TRANSFORMER_POLICY = "torch_xla.distributed.fsdp.wrap.transformer_auto_wrap_policy"


# XLA-only arguments: layout pinning, graph barriers and flattening have no FSDP2 meaning.
XLA_ONLY = frozenset(
    {
        "pin_layout_in_collective_ops", "mark_step_on_finalization", "optimization_barrier_in_forward",
        "optimization_barrier_in_backward", "shard_param_on_dim_0", "flatten_parameters",
        "execute_sharding_on_init", "use_all_gather_via_all_reduce",
    }
)  # fmt: skip


_LOOP_NAME = "submodule"


def xla_fsdp(ctx: FixContext, match: Match) -> Plan | None:
    """`m = FSDP(net, auto_wrap_policy=p, compute_dtype=d)` -> `fully_shard` on p's classes, then on `m`."""
    call = match.node
    stmt = ctx.analysis.parent(call)
    if not isinstance(call, ast.Call) or not isinstance(stmt, ast.Assign) or stmt.value is not call:
        return None
    if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], (ast.Name, ast.Attribute)):
        return None
    if len(call.args) != 1 or isinstance(call.args[0], ast.Starred) or any(k.arg is None for k in call.keywords):
        return None
    options = _shard_options(ctx, call)
    policy = next((k.value for k in call.keywords if k.arg == "auto_wrap_policy"), None)
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


def _shard_options(ctx: FixContext, call: ast.Call) -> list[str] | None:
    """`fully_shard` keyword arguments for the XLA FSDP ones; None when one has no FSDP2 meaning."""
    options: list[str] = []
    mixed: list[str] = []
    for keyword in call.keywords:
        value = ctx.segment(keyword.value)
        if keyword.arg == "compute_dtype":
            mixed.append(f"param_dtype={value}")
        elif keyword.arg == "reshard_after_forward":
            options.append(f"reshard_after_forward={value}")
        elif keyword.arg not in XLA_ONLY and keyword.arg != "auto_wrap_policy":
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


DETECTORS: Mapping[str, tuple[tuple[type, ...], DetectorFn]] = MappingProxyType({})


FIXES: Mapping[str, FixFn] = MappingProxyType(
    {
        "xla_fsdp": xla_fsdp,
    }
)
