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

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.names import Scope
from neuron_migrate.analysis.values import Edit, Match, Plan
from neuron_migrate.checks.helpers import helper_imports
from neuron_migrate.checks.toolkit import DetectorFn, FixContext, FixFn
from neuron_migrate.checks.toolkit_calls import argument, literal, only_args, operand
from neuron_migrate.checks.toolkit_layout import arguments, dropped, one_line, renamed
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
    items = arguments(call)
    holder = items[0] if items else None
    if optimizer is None or (holder is not optimizer and getattr(holder, "arg", None) != "optimizer"):
        return None  # the optimizer written after other arguments: a human orders them
    assert holder is not None
    rest = [edit for item in items[1:] for edit in _step_argument(ctx, call, item)]
    kept = [item for item in items[1:] if _kept(call, item)]
    if _wrapped_before(ctx, match):
        callee = f"{operand(ctx, optimizer)}.step"
        if not kept:
            return ctx.replace(call, f"{callee}()", safety=Safety.SAFE)
        start, next_start = ctx.src.node_span(holder)[0], ctx.src.node_span(kept[0])[0]
        moved_lines = [e for e in renamed(ctx, call, callee)[1:] if not start <= e.start < next_start]
        edits = [Edit(*ctx.src.node_span(call.func), callee), *moved_lines, Edit(start, next_start, ""), *rest]
        return Plan(tuple(edits), safety=Safety.SAFE, new=one_line(ctx, call, edits))
    needed = helper_imports(ctx, match, "optimizer_step")
    if needed is None:
        return None
    edits = renamed(ctx, call, "_optimizer_step")
    if isinstance(holder, ast.keyword):  # `optimizer=opt` -> `opt`
        edits.append(Edit(ctx.src.node_span(holder)[0], ctx.src.node_span(optimizer)[0], ""))
    return Plan((*edits, *rest), needed, safety=Safety.SAFE, new=one_line(ctx, call, [*edits, *rest]))


def _kept(call: ast.Call, item: ast.expr | ast.keyword) -> bool:
    """Whether an argument after the optimizer becomes an argument of the step: `optimizer_args`
    (by keyword, or second), unless an empty dict."""
    value = item.value if isinstance(item, ast.keyword) else item
    named = item.arg == "optimizer_args" if isinstance(item, ast.keyword) else call.args[1:2] == [item]
    return named and not (isinstance(value, ast.Dict) and not value.keys)


def _step_argument(ctx: FixContext, call: ast.Call, item: ast.expr | ast.keyword) -> list[Edit]:
    """The edits for an argument after the optimizer: `optimizer_args={"closure": c}` ->
    `closure=c`, any other mapping -> `**mapping`; the rest (`groups=None`, `pin_layout`,
    `barrier`, an empty `optimizer_args`) go."""
    if not _kept(call, item):
        return [dropped(ctx, call, item)]
    value = item.value if isinstance(item, ast.keyword) else item
    start = ctx.src.node_span(item)[0]
    keys = value.keys if isinstance(value, ast.Dict) else []
    if not isinstance(value, ast.Dict) or not all(
        isinstance(k, ast.Constant) and isinstance(k.value, str) and k.value.isidentifier() for k in keys
    ):
        return [Edit(start, ctx.src.node_span(value)[0], "**")]
    edits: list[Edit] = []
    for key, entry in zip(keys, value.values):
        assert isinstance(key, ast.Constant) and isinstance(key.value, str)  # checked above
        edits.append(
            Edit(start if not edits else ctx.src.node_span(key)[0], ctx.src.node_span(entry)[0], f"{key.value}=")
        )
    edits.append(Edit(ctx.src.node_span(value.values[-1])[1], ctx.src.node_span(value)[1], ""))
    return edits


def reduce_gradients(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.reduce_gradients(opt)` -> `_reduce_gradients(opt)`: the gradient average of `optimizer_step`, no step.

    With replica `groups=`, `_reduce_gradients_in_groups(opt, groups)`: the sum over this rank's
    group (a `dist.new_group` each), scaled by 1 / world size, as torch_xla scaled it.

    Where DDP or FSDP already averaged the gradients, averaging equal gradients again changes
    nothing, so the rewrite is safe either way.
    """
    call = match.node
    if not isinstance(call, ast.Call) or ctx.expression_statement(match) is None:
        return None
    if not only_args(call, {"optimizer": 0, "groups": 1, "pin_layout": 2}):
        return None
    optimizer, groups = argument(call, "optimizer", 0), argument(call, "groups", 1)
    if isinstance(groups, ast.Constant) and groups.value is None:
        groups = None  # `groups=None`: the default process group
    helper = "reduce_gradients" if groups is None else "reduce_gradients_in_groups"
    needed = helper_imports(ctx, match, helper) if optimizer is not None else None
    if optimizer is None or needed is None:
        return None
    arguments = ctx.segment(optimizer) + ("" if groups is None else f", {ctx.segment(groups)}")
    return ctx.replace(call, f"_{helper}({arguments})", needed)


_DATA_PARALLEL = (
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_shard",
    "torch.distributed._composable.fsdp.fully_shard",
)


def _wrapped_before(ctx: FixContext, match: Match) -> bool:
    """Whether a DDP/FSDP call runs before the match on every path that has ranks to average, in
    the same function body.

    Only calls in the function's (or module's) own block, or in `with` blocks inside it, count,
    and those under an `if` that holds wherever there is more than one rank (`world_size > 1`):
    a wrapper under `if use_ddp:`, in a loop or in another function may not have run.
    """
    analysis = ctx.analysis
    step = _statement_of(analysis, match.node)
    owner = analysis.owner(match.node)
    if step is None:
        return False
    for stmt in _straight_line(owner.body):
        if stmt.lineno >= step.lineno:
            break
        if _wraps(analysis, stmt, match.scope):
            return True
        ranks = isinstance(stmt, ast.If) and _multi_rank_test(analysis, stmt.test, match.scope, owner)
        if ranks and any(_wraps(analysis, inner, match.scope) for inner in _straight_line(stmt.body)):  # type: ignore[attr-defined]
            return True  # DDP wherever there is more than one rank: elsewhere nothing is averaged
    return False


def _wraps(analysis: Analysis, stmt: ast.stmt, scope: Scope) -> bool:
    return any(
        isinstance(node, ast.Call) and any(n.startswith(_DATA_PARALLEL) for n in analysis.call_names(node, scope))
        for node in _walk_same_scope(stmt)
    )


_WORLD_SIZE = frozenset(
    {
        "torch_xla.runtime.world_size",
        "torch_xla.core.xla_model.xrt_world_size",
        "torch.distributed.get_world_size",
        "torch.distributed.distributed_c10d.get_world_size",
    }
)
_PROCESS_GROUP = frozenset({"torch.distributed.is_initialized", "torch.distributed.distributed_c10d.is_initialized"})


def _multi_rank_test(analysis: Analysis, test: ast.expr, scope: Scope, owner: ast.AST) -> bool:
    """Whether `test` holds exactly where gradients need averaging: more than one rank
    (`world_size > 1`, `!= 1`, `>= 2`), or a process group exists (`dist.is_initialized()`, torchrun's
    `"WORLD_SIZE" in os.environ`); on the other path `_optimizer_step` would average nothing."""
    if isinstance(test, ast.Call) and not test.args and analysis.call_names(test, scope) & _PROCESS_GROUP:
        return True
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return False
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(op, ast.In) and isinstance(left, ast.Constant) and left.value == "WORLD_SIZE":
        return "os.environ" in analysis.qualified(right, scope)
    bound = {(ast.Gt, 1), (ast.NotEq, 1), (ast.GtE, 2)}
    if isinstance(right, ast.Constant) and (type(op), right.value) in bound:
        return _world_size(analysis, left, scope, owner)
    flipped = {(ast.Lt, 1), (ast.NotEq, 1), (ast.LtE, 2)}
    return (
        isinstance(left, ast.Constant)
        and (type(op), left.value) in flipped
        and _world_size(analysis, right, scope, owner)
    )


def _world_size(analysis: Analysis, node: ast.expr, scope: Scope, owner: ast.AST, depth: int = 0) -> bool:
    """Whether `node` is the world size: a call that reads it, `int(os.environ.get("WORLD_SIZE", ...))`,
    or a name the function assigns once from one of them."""
    if isinstance(node, ast.Call):
        if analysis.call_names(node, scope) & _WORLD_SIZE:
            return True
        inner = (
            node.args[0] if len(node.args) == 1 and isinstance(node.func, ast.Name) and node.func.id == "int" else None
        )
        if isinstance(inner, ast.Call) and inner.args and isinstance(inner.args[0], ast.Constant):
            return inner.args[0].value == "WORLD_SIZE" and "os.environ.get" in analysis.call_names(inner, scope)
        return False
    if not isinstance(node, ast.Name) or depth:
        return False
    assigned = [
        s.value
        for s in ast.walk(owner)
        if isinstance(s, ast.Assign) and [getattr(t, "id", None) for t in s.targets] == [node.id]
    ]
    return len(assigned) == 1 and _world_size(analysis, assigned[0], scope, owner, depth + 1)


def _statement_of(analysis: Analysis, node: ast.AST) -> ast.stmt | None:
    current: ast.AST | None = node
    while current is not None and not isinstance(current, ast.stmt):
        current = analysis.parent(current)
    return current


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


# -- syncfree optimizers (their constructors are NM105's) ---------------------------------------
def syncfree_steps(analysis: Analysis) -> dict[int, list[tuple[ast.stmt, str, str]]] | None:
    """Each torch_xla syncfree optimizer's constructor call (by id) -> its `x.step(found_inf=f)`
    statements, as (statement, `x`, `f`); None when some `step(found_inf=...)` call has no such
    owner (an optimizer passed in, kept in a container) or is not a statement of its own."""
    return analysis.fact(_find_syncfree_steps)


def _find_syncfree_steps(analysis: Analysis) -> dict[int, list[tuple[ast.stmt, str, str]]] | None:
    src = analysis.src
    constructors: dict[tuple[int, str], int] = {}  # (scope node id, target text) -> constructor call id
    for assign in analysis.nodes(ast.Assign):
        value = assign.value
        if not isinstance(value, ast.Call) or len(assign.targets) != 1:
            continue
        if not any(
            n.startswith("torch_xla.amp.syncfree.") for n in analysis.call_names(value, _scope_of(analysis, assign))
        ):
            continue
        target = assign.targets[0]
        constructors[(id(_owner_node(analysis, assign, target)), src.segment(target))] = id(value)
    found: dict[int, list[tuple[ast.stmt, str, str]]] = {}
    for mapping in analysis.nodes(ast.Dict):  # `optimizer_args={"found_inf": f}`
        if any(isinstance(k, ast.Constant) and k.value == "found_inf" for k in mapping.keys):
            return None
    for call in analysis.nodes(ast.Call):
        func = call.func
        keyword = next((k for k in call.keywords if k.arg == "found_inf"), None)
        if keyword is None:
            continue
        if not isinstance(func, ast.Attribute) or func.attr != "step":
            return None  # `dict(found_inf=f)`, a wrapper's step: it reaches a step the fix cannot see
        owner = constructors.get((id(_owner_node(analysis, call, func.value)), src.segment(func.value)))
        stmt = analysis.parent(call)
        if owner is None or call.args or len(call.keywords) != 1 or not analysis.is_expression_statement(call):
            return None
        found.setdefault(owner, []).append((stmt, src.segment(func.value), src.segment(keyword.value)))  # type: ignore[arg-type]
    return found


def _owner_node(analysis: Analysis, node: ast.AST, target: ast.AST) -> ast.AST:
    """Where a name written at `node` lives: its function (a plain name), or its class (`self.x`)."""
    current = analysis.parent(node)
    want_class = isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"
    while current is not None:
        if want_class and isinstance(current, ast.ClassDef):
            return current
        if not want_class and isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return current
        current = analysis.parent(current)
    return analysis.tree


def _scope_of(analysis: Analysis, node: ast.AST) -> Scope:
    current = analysis.parent(node)
    while current is not None and current not in analysis.resolver.scope_of:
        current = analysis.parent(current)
    return analysis.resolver.scope_for(current if current is not None else analysis.tree)


def syncfree_optimizer(ctx: FixContext, match: Match) -> Plan | None:
    """`syncfree.SGD(...)` -> `torch.optim.SGD(...)`, its `opt.step(found_inf=f)` calls ->
    `if not f: opt.step()` (syncfree skipped the update for a non-zero `found_inf`). None when a
    `step(found_inf=...)` call has no owner the fix can follow: `torch.optim` takes no `found_inf`."""
    rendered = ctx.render("{torch}.optim." + match.qualified.rsplit(".", 1)[-1], match)
    steps = syncfree_steps(ctx.analysis)
    if rendered is None or steps is None:
        return None
    target = match.node.func if isinstance(match.node, ast.Call) else match.node
    edits = [Edit(*ctx.src.node_span(target), rendered[0])]
    for stmt, receiver, found_inf in steps.get(id(match.node), []):
        replaced = ctx.replace_statement(stmt, [f"if not {found_inf}:", f"\t{receiver}.step()"])
        if replaced is None:
            return None
        edits.extend(replaced.edits)
    return Plan(tuple(edits), rendered[1])


# torch_xla's GradScaler(init_scale, growth_factor, backoff_factor, growth_interval, enabled,
# use_zero_grad): torch's takes the device first, then the same five.
_SCALER_ARGS = {"init_scale": 0, "growth_factor": 1, "backoff_factor": 2, "growth_interval": 3, "enabled": 4}


def grad_scaler(ctx: FixContext, match: Match) -> Plan | None:
    """`torch_xla.amp.GradScaler(...)` -> `torch.amp.GradScaler("neuron", ...)`, without
    `use_zero_grad` (torch's scaler skips an overflowing step; torch_xla's, with that option,
    stepped with zeroed gradients, which still moves momentum and weight decay). Unsafe.

    `*args` and `**kwargs` pass through as written (accelerate's `xamp.GradScaler(**kwargs)`):
    after the device, torch's parameters are torch_xla's in the same order and with the same
    names, less `use_zero_grad`, so every argument both share binds the same; a `use_zero_grad`
    in them makes torch's constructor raise `TypeError` at once, never a silent change."""
    call = match.node
    if not isinstance(call, ast.Call) or ctx.analysis.target != "neuron":
        return None
    allowed = {**_SCALER_ARGS, "use_zero_grad": 5}
    written = [a for a in call.args if not isinstance(a, ast.Starred)]
    named = [k for k in call.keywords if k.arg is not None]
    if not only_args(ast.Call(func=call.func, args=written, keywords=named), allowed):
        return None
    kept = [ctx.segment(a) for a in (call.args if len(written) < len(call.args) else call.args[:5])]
    kept += [ctx.segment(k) for k in call.keywords if k.arg != "use_zero_grad"]
    rendered = ctx.render("{torch}.amp.GradScaler(" + ", ".join(['"neuron"', *kept]) + ")", match)
    if rendered is None:
        return None
    return ctx.replace(call, rendered[0], rendered[1], safety=Safety.UNSAFE)


DETECTORS: Mapping[str, tuple[tuple[type, ...], DetectorFn]] = MappingProxyType({})
FIXES: Mapping[str, FixFn] = MappingProxyType({"optimizer_step": optimizer_step, "reduce_gradients": reduce_gradients})
