"""The process group around a launch (NM309): whether the launched function starts one, and only
behind a condition (itself or in a function of the file it calls), and the statements the launch
fix adds after it to start one under torchrun and to destroy it where the program's main path ends.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from neuron_migrate.analysis.values import Edit, Match, Plan
from neuron_migrate.checks.toolkit import FixContext


def defined_here(ctx: FixContext, fn: ast.expr, match: Match) -> bool:
    """Whether `fn` names a function defined in this file (so its body is known to the check)."""
    if not isinstance(fn, ast.Name):
        return False
    bindings = ctx.analysis.resolver.lookup(fn.id, match.scope)
    return bool(bindings) and all(isinstance(b.node, (ast.FunctionDef, ast.AsyncFunctionDef)) for b in bindings)


def with_process_group_after(ctx: FixContext, match: Match, plan: Plan, holder: ast.stmt) -> Plan | None:
    """`plan`, which also starts a process group after `holder` (the launched function's
    statement whose `init_process_group` runs only behind a condition, such as a flag), under
    torchrun and unless one exists: else the ranks would train independently."""
    guard = ctx.render('if "WORLD_SIZE" in {os}.environ and not {dist}.is_initialized():', match)
    init = ctx.render('{dist}.init_process_group("neuron")', match)
    span = ctx.statement_lines(holder)
    if guard is None or init is None or span is None:
        return None
    indent = ctx.src.indent_of(holder.lineno)
    unit, newline = ctx.analysis.indent_unit(), ctx.src.newline
    inserted = f"{indent}{guard[0]}{newline}{indent}{unit}{init[0]}{newline}"
    imports = tuple(dict.fromkeys(plan.imports + guard[1] + init[1]))
    return replace(plan, edits=(*plan.edits, Edit(span[1], span[1], inserted)), imports=imports)


def destroyed_after(ctx: FixContext, match: Match, plan: Plan, stmt: ast.stmt | None) -> Plan | None:
    """`plan`, which also destroys the process group (the one `with_process_group_after` starts
    in the launched function, or its own) right after `stmt`, the launch, when one exists then:
    the program's main path ends there. Unchanged when the file destroys a group itself or the
    launch is not a statement of its own."""
    span = ctx.statement_lines(stmt) if stmt is not None else None
    if stmt is None or span is None or calls(ctx, "destroy_process_group"):
        return plan
    guard = ctx.render("if {dist}.is_initialized():", match)
    destroy = ctx.render("{dist}.destroy_process_group()", match)
    if guard is None or destroy is None:
        return plan
    indent, unit, newline = ctx.src.indent_of(stmt.lineno), ctx.analysis.indent_unit(), ctx.src.newline
    inserted = f"{indent}{guard[0]}{newline}{indent}{unit}{destroy[0]}{newline}"
    imports = tuple(dict.fromkeys(plan.imports + guard[1] + destroy[1]))
    return replace(plan, edits=(*plan.edits, Edit(span[1], span[1], inserted)), imports=imports)


def only_conditional_init(ctx: FixContext, fn: ast.expr, match: Match) -> ast.stmt | None:
    """The statement that holds the `init_process_group` of the launched function, or of a
    function of this file it calls (`_mp_fn` -> `train`), when every call of that name in the
    file sits in that one function under a condition and none on its own top level; else None
    (the process group is known to start, or is started elsewhere)."""
    if not isinstance(fn, ast.Name) or not defined_here(ctx, fn, match):
        return None
    launched = ctx.analysis.resolver.lookup(fn.id, match.scope)[0].node
    assert isinstance(launched, (ast.FunctionDef, ast.AsyncFunctionDef))
    inits = [n for n in ctx.analysis.nodes(ast.Call) if _call_name(n) == "init_process_group"]
    owners = {id(_top_function(ctx, init)): _top_function(ctx, init) for init in inits}
    function = next(iter(owners.values())) if len(owners) == 1 else None
    if function is None or function not in _called_from(ctx, launched):
        return None
    holders: list[ast.stmt] = []
    for init in inits:
        below: ast.AST = init
        current: ast.AST | None = ctx.analysis.parent(init)
        while current is not None and current is not function:
            current, below = ctx.analysis.parent(current), current  # type: ignore[assignment]
        if not isinstance(below, ast.stmt) or below not in function.body:
            return None
        if isinstance(below, ast.Expr) and below.value is init:
            return None  # on the function's top level: the process group starts
        if isinstance(below, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return None
        holders.append(below)
    return holders[-1] if holders else None


def _top_function(ctx: FixContext, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The module-level function `node` is in (None at module level or in a class)."""
    current: ast.AST | None = node
    found = None
    while current is not None:
        parent = ctx.analysis.parent(current)
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)) and parent is ctx.analysis.tree:
            found = current
        current = parent
    return found


_CALL_DEPTH = 3  # how many calls deep the launch follows the launched function to its process group


def _called_from(ctx: FixContext, function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    """`function` and the module-level functions of this file it calls, directly or through them."""
    resolver = ctx.analysis.resolver
    found: list[ast.AST] = [function]
    frontier: list[ast.AST] = [function]
    for _ in range(_CALL_DEPTH):
        reached: list[ast.AST] = []
        for caller in frontier:
            for call in (n for n in ast.walk(caller) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)):
                bindings = resolver.lookup(call.func.id, resolver.module_scope)  # type: ignore[attr-defined]
                callee = bindings[0].node if len(bindings) == 1 else None
                if isinstance(callee, (ast.FunctionDef, ast.AsyncFunctionDef)) and callee not in found:
                    found.append(callee)
                    reached.append(callee)
        frontier = reached
    return found


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def calls_init_process_group(ctx: FixContext) -> bool:
    """Whether anything called `init_process_group` is called anywhere in the module."""
    return calls(ctx, "init_process_group")


def calls(ctx: FixContext, name: str) -> bool:
    """Whether anything called `name` is called anywhere in the module."""
    return any(_call_name(node) == name for node in ctx.analysis.nodes(ast.Call))
