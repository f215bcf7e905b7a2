"""Execution model (NM201-NM205, NM212): graph cuts, step contexts, step closures, optimizer steps.

torch_xla recorded lazy tensors and ran a graph at each cut; TorchNeuron runs eagerly, so cuts
and step contexts go, a step closure runs where it is called, and `xm.optimizer_step` becomes
`opt.step()` (with a gradient-averaging helper where no DDP/FSDP wrapper does it)."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from types import MappingProxyType

from neuron_migrate.analysis.analyze import (
    Analysis,
    Match,
    Plan,
)
from neuron_migrate.analysis.source import kept_comments
from neuron_migrate.checks.helpers import named_helper_imports
from neuron_migrate.checks.toolkit import DetectorFn, FixContext, FixFn, argument, literal, only_args, operand
from neuron_migrate.model import Safety


# -- execution model --------------------------------------------------------------------
def remove_statement(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.mark_step()` on its own line -> nothing."""
    stmt = ctx.expression_statement(match)
    return ctx.delete_statement(stmt) if stmt is not None else None


def sync(ctx: FixContext, match: Match) -> Plan | None:
    """`torch_xla.sync()` -> nothing; `torch_xla.sync(wait=True)` -> synchronize."""
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    if not only_args(call, {"wait": -1, "reset_scope": -1}):
        return None
    wait = literal(argument(call, "wait", -1))
    if wait is ...:
        return None
    if wait:
        rendered = ctx.render("{torch}.accelerator.synchronize()", match)
        return ctx.replace(call, rendered[0], rendered[1]) if rendered else None
    return remove_statement(ctx, match)


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
    if not only_args(call, allowed) or argument(call, "groups", 2) is not None:
        return None
    optimizer = argument(call, "optimizer", 0)
    if optimizer is None:
        return None
    args = _step_arguments(ctx, argument(call, "optimizer_args", 1))
    if _wrapped_before(ctx, match):
        plan = ctx.replace(call, f"{operand(ctx, optimizer)}.step({args})", safety=Safety.SAFE)
        return ctx.with_rewrite(
            plan, call, "neuron_migrate.checks.execution_cst:optimizer_step", func="{optimizer}.step"
        )
    needed = named_helper_imports(ctx, match, "optimizer_step")
    if needed is None:
        return None
    inner = ", ".join(part for part in (ctx.segment(optimizer), args) if part)
    plan = ctx.replace(call, f"_optimizer_step({inner})", needed, safety=Safety.SAFE)
    return ctx.with_rewrite(plan, call, "neuron_migrate.checks.execution_cst:optimizer_step", func="_optimizer_step")


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


def step_closure(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.add_step_closure(fn, args=(a, b))` -> `fn(a, b)` (runs now rather than after the step)."""
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    if not only_args(call, {"closure": 0, "args": 1, "run_async": 2}):
        return None
    closure = argument(call, "closure", 0)
    args = argument(call, "args", 1)
    if closure is None:
        return None
    if args is None:
        inner = ""
    elif isinstance(args, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in args.elts):
        inner = ", ".join(ctx.segment(e) for e in args.elts)
    else:
        inner = f"*{ctx.segment(args)}"
    if _comment_between(ctx, call, [closure, args]):
        return None  # a comment on the call itself has no place in `fn(...)`
    return ctx.with_rewrite(
        ctx.replace(call, f"{operand(ctx, closure)}({inner})"), call, "neuron_migrate.checks.execution_cst:step_closure"
    )


def _comment_between(ctx: FixContext, node: ast.AST, parts: list[ast.AST | None]) -> bool:
    """Whether `node`'s text has a comment outside `parts` (which the rewrite keeps)."""
    start, end = ctx.src.node_span(node)
    text = ctx.src.text
    if "#" not in text[start:end] or not kept_comments(text[start:end]):
        return False
    outside = []
    last = start
    for part in sorted((p for p in parts if p is not None), key=ctx.src.node_span):
        part_start, part_end = ctx.src.node_span(part)
        outside.append(text[last:part_start])
        last = part_end
    outside.append(text[last:end])
    return any("#" in piece for piece in outside)


def step_context(ctx: FixContext, match: Match) -> Plan | None:
    """`with torch_xla.step(): body` -> `body`, dedented one level."""
    item = ctx.analysis.parent(match.node)
    stmt = ctx.analysis.parent(item) if isinstance(item, ast.withitem) else None
    if not isinstance(stmt, ast.With) or len(stmt.items) != 1 or item.optional_vars is not None:  # type: ignore[union-attr]
        return None
    span = ctx.statement_lines(stmt)
    first = stmt.body[0]
    if span is None or first.lineno == stmt.lineno:
        return None
    if any(
        isinstance(n, ast.Constant) and isinstance(n.value, (str, bytes)) and n.lineno != n.end_lineno
        for n in ast.walk(stmt)
    ):
        return None  # dedenting would change a multi-line string
    outer = ctx.src.indent_of(stmt.lineno)
    inner = ctx.src.indent_of(first.lineno)
    body_start = ctx.src.line_start(first.lineno)
    lines = ctx.src.text[body_start : span[1]].splitlines(keepends=True)
    dedented = []
    for line in lines:
        if line.startswith(inner):
            dedented.append(outer + line[len(inner) :])
        elif line.strip():
            return None  # a continuation line indented less than the body; leave it to a human
        else:
            dedented.append(line)
    return Plan(((span[0], span[1], "".join(dedented)),))


DETECTORS: Mapping[str, tuple[tuple[type, ...], DetectorFn]] = MappingProxyType({})


FIXES: Mapping[str, FixFn] = MappingProxyType(
    {
        "remove_statement": remove_statement,
        "sync": sync,
        "optimizer_step": optimizer_step,
        "step_closure": step_closure,
        "step_context": step_context,
    }
)
