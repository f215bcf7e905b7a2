"""Optimizer steps and gradients (NM204): `xm.optimizer_step(opt)` -> `opt.step()`.

torch_xla's step all-reduced the gradients; on TorchNeuron that is DDP's or FSDP's job. Where a
wrapper is applied on every path before the step, the fix writes `opt.step()`; elsewhere it
calls `_optimizer_step(opt)`, a helper written into the file that averages the gradients over
the default process group first, as torch_xla did.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from types import MappingProxyType

from neuron_migrate.analysis.analyze import Analysis, Match, Plan
from neuron_migrate.checks.helpers import helper_imports
from neuron_migrate.checks.toolkit import DetectorFn, FixContext, FixFn, argument, literal, only_args, operand
from neuron_migrate.model import Safety


def optimizer_step(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.optimizer_step(opt)` -> `opt.step()` under certain DDP/FSDP, else `_optimizer_step(opt)`.

    `_optimizer_step` is written into the file: it averages the gradients over the default
    process group, as torch_xla did, then steps. Where DDP already averaged them, averaging
    equal gradients again changes nothing, so both rewrites are safe.
    """
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    allowed = {"optimizer": 0, "optimizer_args": 1, "groups": 2, "pin_layout": 3, "barrier": -1}
    if not only_args(call, allowed) or literal(argument(call, "groups", 2)) is not None:
        return None  # replica groups; `groups=None` is the default
    optimizer = argument(call, "optimizer", 0)
    if optimizer is None:
        return None
    args = _step_arguments(ctx, argument(call, "optimizer_args", 1))
    if _wrapped_before(ctx, match):
        plan = ctx.replace(call, f"{operand(ctx, optimizer)}.step({args})", safety=Safety.SAFE)
        return ctx.with_rewrite(
            plan, call, "neuron_migrate.checks.optimizer_cst:optimizer_step", func="{optimizer}.step"
        )
    needed = helper_imports(ctx, match, "optimizer_step")
    if needed is None:
        return None
    inner = ", ".join(part for part in (ctx.segment(optimizer), args) if part)
    plan = ctx.replace(call, f"_optimizer_step({inner})", needed, safety=Safety.SAFE)
    return ctx.with_rewrite(plan, call, "neuron_migrate.checks.optimizer_cst:optimizer_step", func="_optimizer_step")


def reduce_gradients(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.reduce_gradients(opt)` -> `_reduce_gradients(opt)`: the gradient average of `optimizer_step`, no step.

    Where DDP or FSDP already averaged the gradients, averaging equal gradients again changes
    nothing, so the rewrite is safe either way.
    """
    call = match.node
    if not isinstance(call, ast.Call) or ctx.expression_statement(match) is None:
        return None
    if not only_args(call, {"optimizer": 0, "groups": 1, "pin_layout": 2}, match):
        return None  # `groups=[[0, 1], ...]`: replica groups become process groups; a human maps them
    optimizer = argument(call, "optimizer", 0)
    needed = helper_imports(ctx, match, "reduce_gradients") if optimizer is not None else None
    if needed is None:
        return None
    return ctx.replace(call, f"_reduce_gradients({ctx.segment(optimizer)})", needed)  # type: ignore[arg-type]


def _step_arguments(ctx: FixContext, extra: ast.expr | None) -> str:
    """`optimizer_args={"closure": c}` -> `closure=c`; any other mapping -> `**mapping`."""
    if extra is None:
        return ""
    if isinstance(extra, ast.Dict) and all(
        isinstance(k, ast.Constant) and isinstance(k.value, str) and k.value.isidentifier() for k in extra.keys
    ):
        return ", ".join(f"{k.value}={ctx.segment(v)}" for k, v in zip(extra.keys, extra.values))  # type: ignore[union-attr]
    return f"**{ctx.segment(extra)}"


_DATA_PARALLEL = (
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_shard",
    "torch.distributed._composable.fsdp.fully_shard",
)


def _wrapped_before(ctx: FixContext, match: Match) -> bool:
    """Whether a DDP/FSDP call runs on every path before the match, in the same function body.

    Only calls in the function's (or module's) own block, or in `with` blocks inside it, count:
    a wrapper under `if use_ddp:`, in a loop or in another function may not have run.
    """
    analysis = ctx.analysis
    step = _statement_of(analysis, match.node)
    owner = _owner(analysis, match.node)
    if step is None:
        return False
    for stmt in _straight_line(owner.body):
        if stmt.lineno >= step.lineno:
            break
        for node in _walk_same_scope(stmt):
            if isinstance(node, ast.Call) and any(
                n.startswith(_DATA_PARALLEL) for n in analysis.call_names(node, match.scope)
            ):
                return True
    return False


def _statement_of(analysis: Analysis, node: ast.AST) -> ast.stmt | None:
    current: ast.AST | None = node
    while current is not None and not isinstance(current, ast.stmt):
        current = analysis.parent(current)
    return current


def _owner(analysis: Analysis, node: ast.AST) -> ast.Module | ast.FunctionDef | ast.AsyncFunctionDef:
    current = analysis.parent(node)
    while current is not None and not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        current = analysis.parent(current)
    return current if current is not None else analysis.tree  # type: ignore[return-value]


def _straight_line(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of `body` that always run in order: `with` blocks are entered, nothing else."""
    for stmt in body:
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from _straight_line(stmt.body)
        else:
            yield stmt


def _walk_same_scope(stmt: ast.stmt) -> Iterator[ast.AST]:
    """Nodes of a simple statement that always run with it: no nested blocks, branches or lambdas."""
    if not isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)):
        return
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _MAYBE_SKIPPED):
            stack.extend(ast.iter_child_nodes(node))


# Expressions whose parts may not run: `a if c else b`, `a and b`, lambdas, comprehensions.
_MAYBE_SKIPPED = (ast.IfExp, ast.BoolOp, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


DETECTORS: Mapping[str, tuple[tuple[type, ...], DetectorFn]] = MappingProxyType({})
FIXES: Mapping[str, FixFn] = MappingProxyType({"optimizer_step": optimizer_step, "reduce_gradients": reduce_gradients})
