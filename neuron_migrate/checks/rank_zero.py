"""The test for global rank 0 at a statement, the rank-0 `if`s a print already sits in or
joins, and where a process group surely exists: what the rank fixes (`checks/ranks.py`) guard
their statements with.

`int(os.environ.get("RANK", 0)) == 0` (torchrun's `RANK`, right before `init_process_group` and
after it, and 0 in a plain `python` process), or `rank == 0` where the function holds the global
rank in `rank` already; an `if` that tests a rank (`if xm.is_master_ordinal():`) takes the guard
into its own test rather than gaining a nested one. Where the function (or module) called
`init_process_group` itself, unconditionally, before the code in question, the group exists there
and `dist.get_rank()`, `dist.get_world_size()` and a plain `dist.barrier()` are what a reviewer
writes.
"""

from __future__ import annotations

import ast
import re

from neuron_migrate.analysis.values import Edit, Match, Plan, Request
from neuron_migrate.checks.toolkit import FixContext
from neuron_migrate.checks.toolkit_calls import argument, line_length

_INIT = frozenset({"torch.distributed.init_process_group", "torch.distributed.distributed_c10d.init_process_group"})
_DESTROY = "destroy_process_group"


def group_exists(ctx: FixContext, match: Match, node: ast.AST) -> bool:
    """Whether the default process group surely exists when `node` runs: a statement of its
    function's (or the module's) own body that comes before the one holding `node` is a bare
    `init_process_group(...)` call (it returns only once the group exists), and no
    `destroy_process_group` is called in between."""
    analysis = ctx.analysis
    owner = analysis.owner(node)
    top: ast.AST = node
    while analysis.parent(top) is not owner:
        parent = analysis.parent(top)
        if parent is None:
            return False
        top = parent
    body = owner.body
    index = next((i for i, s in enumerate(body) if s is top), 0)
    scope = analysis.resolver.scope_for(owner)
    for position, stmt in enumerate(body[:index]):
        value = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(value, ast.Call) and analysis.call_names(value, scope) & _INIT:
            return not any(_destroys(s) for s in body[position + 1 : index])
    return False


def _destroys(stmt: ast.stmt) -> bool:
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name == _DESTROY:
                return True
    return False


_GLOBAL_RANKS = frozenset(
    {
        "torch_xla.core.xla_model.get_ordinal",
        "torch_xla.runtime.global_ordinal",
        "torch.distributed.get_rank",
        "torch.distributed.distributed_c10d.get_rank",
    }
)


def global_rank0(ctx: FixContext, match: Match, stmt: ast.stmt) -> tuple[str, tuple[Request, ...]] | None:
    """The test for global rank 0 at `stmt`: `rank == 0` where the function already holds the
    global rank in `rank` (`rank = xm.get_ordinal()`, bound once, before `stmt`), else the
    environment's `RANK`, which is right before `init_process_group` too; `dist.get_rank()`
    where the process group surely exists (`group_exists`)."""
    name = rank_variable(ctx, match, stmt)
    if name is not None:
        return f"{name} == 0", ()
    if group_exists(ctx, match, stmt):
        return ctx.render("{dist}.get_rank() == 0", match)
    return ctx.render('int({os}.environ.get("RANK", 0)) == 0', match)


def rank_variable(ctx: FixContext, match: Match, node: ast.AST) -> str | None:
    """A local name of `node`'s function (or module) that holds the global rank when `node` runs:
    assigned once, from a rank query with no arguments, by a statement of the function's own body
    that comes before the one holding `node`, and bound nowhere else (no `global`, no loop)."""
    owner = ctx.analysis.owner(node)
    top: ast.AST = node
    while ctx.analysis.parent(top) is not owner:
        parent = ctx.analysis.parent(top)
        if parent is None:
            return None
        top = parent
    body = owner.body
    index = next((i for i, s in enumerate(body) if s is top), None)
    for assign in body[:index] if index is not None else ():
        if not (isinstance(assign, ast.Assign) and len(assign.targets) == 1 and isinstance(assign.value, ast.Call)):
            continue
        target, value = assign.targets[0], assign.value
        if not isinstance(target, ast.Name) or value.args or value.keywords:
            continue
        if not ctx.analysis.call_names(value, match.scope) & _GLOBAL_RANKS:
            continue
        shared = any(target.id in n.names for n in ctx.analysis.nodes(ast.Global, ast.Nonlocal))  # type: ignore[attr-defined]
        if _bindings(owner, target.id) == 1 and not shared:
            return target.id
    return None


def _bindings(tree: ast.AST, name: str) -> int:
    """How many times `name` is bound anywhere under `tree` (nested functions included)."""
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            count += node.id == name and not isinstance(node.ctx, ast.Load)
        elif isinstance(node, ast.arg | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            count += (node.arg if isinstance(node, ast.arg) else node.name) == name
        elif isinstance(node, ast.alias):
            count += (node.asname or node.name.partition(".")[0]) == name
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar):
            count += node.name == name
        elif isinstance(node, ast.MatchMapping):
            count += node.rest == name
    return count


def inside_rank0(ctx: FixContext, match: Match, stmt: ast.stmt, guard: str) -> bool:
    """Whether an `if` around `stmt` (in its own function) runs its body on global rank 0 only."""
    child: ast.AST = stmt
    current = ctx.analysis.parent(stmt)
    while current is not None and not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        if isinstance(current, ast.If) and child in current.body and _is_global_rank0(ctx, match, current.test, guard):
            return True
        child, current = current, ctx.analysis.parent(current)
    return False


_RANK_TEST = re.compile(r"rank|ordinal|master", re.IGNORECASE)
_ENV_RANK0 = re.compile(r"""int\(\w+\.environ\.get\((["'])RANK\1, 0\)\) == 0""")


def merge_rank0(ctx: FixContext, match: Match, outer: ast.If, stmt: ast.stmt, body: str) -> Plan | None:
    """`body` on global rank 0 only, in place of `stmt`, the whole body of `outer`, an `if` that
    already tests a rank (`if xm.is_master_ordinal():`, a `LOCAL_RANK` check): the two guards are
    merged into that `if` rather than nested."""
    guard = global_rank0(ctx, match, stmt)
    if guard is None:
        return None
    if _is_global_rank0(ctx, match, outer.test, guard[0]):
        return ctx.replace_statement(stmt, [body])  # the `if` already runs on rank 0 only
    return _merge_into_if(ctx, outer, stmt, guard[0], body, guard[1])


def _merge_into_if(
    ctx: FixContext, outer: ast.If, stmt: ast.stmt, guard: str, body: str, imports: tuple[Request, ...]
) -> Plan | None:
    """`if test:\n    stmt` -> `if test and (guard):\n    body`, by two edits that leave the test's
    own text alone (another fix may be rewriting it in the same round)."""
    span = ctx.statement_lines(stmt)
    if span is None:
        return None
    start, end = ctx.src.node_span(outer.test)
    test = outer.test
    low = isinstance(test, (ast.IfExp, ast.Lambda, ast.NamedExpr)) or (
        isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or)
    )
    indent = ctx.src.indent_of(outer.lineno).replace("\t", ctx.analysis.indent_unit())
    tail = f" and {guard}"
    header = len(indent) + len("if ") + (end - start) + 2 * low + len(tail) + 1
    if header > line_length(ctx.src.text):
        newline, unit = ctx.src.newline, ctx.analysis.indent_unit()
        tail = f" and ({newline}{indent}{unit}{guard}{newline}{indent})"
    s_start, s_end = ctx.src.node_span(stmt)
    edits = [Edit(end, end, (")" if low else "") + tail), Edit(s_start, s_end, body)]
    if low:
        edits.insert(0, Edit(start, start, "("))
    return Plan(tuple(edits), imports)


def _is_global_rank0(ctx: FixContext, match: Match, test: ast.expr, guard: str) -> bool:
    """Whether `test` is the rank-0 guard itself, or `xm.is_master_ordinal(local=False)`
    (which NM303 rewrites into that guard)."""
    text = " ".join(ctx.segment(test).split())
    if text == guard or _ENV_RANK0.fullmatch(text):
        return True
    if not isinstance(test, ast.Call) or "torch_xla.core.xla_model.is_master_ordinal" not in ctx.analysis.call_names(
        test, match.scope
    ):
        return False
    local = argument(test, "local", 0)
    return isinstance(local, ast.Constant) and local.value is False and len(test.args) + len(test.keywords) == 1


def sole_body_of_rank_if(ctx: FixContext, stmt: ast.stmt) -> ast.If | None:
    """The `if` whose only statement is `stmt`, when its test is a rank check and nothing but
    `:` and whitespace lies between them (no comment to lose)."""
    parent = ctx.analysis.parent(stmt)
    if not isinstance(parent, ast.If) or parent.orelse or len(parent.body) != 1 or parent.body[0] is not stmt:
        return None
    if not _RANK_TEST.search(ctx.segment(parent.test)):
        return None
    between = ctx.src.text[ctx.src.node_span(parent.test)[1] : ctx.src.node_span(stmt)[0]]
    return parent if between.strip() == ":" else None
