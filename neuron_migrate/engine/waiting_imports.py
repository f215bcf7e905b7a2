"""Torch_xla imports waiting on other fixes: whether the safe fixes could leave one unused (so
`check` runs them in memory to learn it, `engine/pipeline._imports_fixed_later`), and the message
of one that `--fix` removes with the fixes of its uses."""

from __future__ import annotations

import ast

from neuron_migrate.analysis.analyze import Analysis, parent_of
from neuron_migrate.engine.check import Planned
from neuron_migrate.model import Safety


def may_go(analysis: Analysis, planned: list[Planned], waiting: Planned, import_codes: frozenset[str]) -> bool:
    """Whether the safe fixes could leave this import unused: no torch_xla use through a name it
    binds is left without a safe fix, outside every safe fix's edits. A use that nothing fixes
    keeps the import through every round, so such an import needs no in-memory fix run.

    Imports kept by other reasons (strings that need the `xla` backend, `__all__`, annotations)
    and imports without such uses may go: for those the rounds decide.
    """
    stmt = waiting.match.node if waiting.match is not None else None
    if not isinstance(stmt, (ast.Import, ast.ImportFrom)) or any(a.name == "*" for a in stmt.names):
        return True
    assert waiting.match is not None
    scope, resolver = waiting.match.scope, analysis.resolver
    bindings = {
        name: scope.bindings.get(name) for alias in stmt.names for name in [alias.asname or alias.name.split(".")[0]]
    }
    safe = [p.plan for p in planned if p.plan is not None and p.applicability is Safety.SAFE]
    spans = [(start, end) for plan in safe for start, end, _ in plan.edits]
    # A block a fix empties goes with its `if` (engine/apply.py): what the `if` holds may go too.
    spans += [analysis.src.node_span(_outermost_block(stmt)) for plan in safe for stmt in plan.deletes]
    for p in planned:
        match = p.match
        if match is None or p.finding.code in import_codes or (p.plan is not None and p.applicability is Safety.SAFE):
            continue
        head = match.written.split(".", 1)[0]
        if not match.qualified or head not in bindings or resolver.lookup(head, match.scope) is not bindings[head]:
            continue  # not a use of this import's binding (another scope's, or no name at all)
        start, end = analysis.src.node_span(match.node)
        if not any(s <= start and end <= e for s, e in spans):
            return False
    return True


_SCOPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _outermost_block(stmt: ast.stmt) -> ast.AST:
    """The outermost compound statement around `stmt` in its function (or `stmt` itself)."""
    node: ast.AST = stmt
    parent = parent_of(node)
    while parent is not None and not isinstance(parent, _SCOPES):
        node, parent = parent, parent_of(parent)
    return node


def goes_with_uses(snippet: str) -> str:
    """The message of an import `--fix` removes with the fixes of its uses, naming the module."""
    try:
        (stmt,) = ast.parse(snippet.strip()).body
    except (SyntaxError, ValueError):
        stmt = None
    if isinstance(stmt, ast.Import):
        what = f"the `{', '.join(a.name for a in stmt.names)}` import"
    elif isinstance(stmt, ast.ImportFrom) and stmt.module:
        what = f"the `{stmt.module}` import"
    else:
        what = "this import"
    return f"Remove {what}; `--fix` removes it once the other fixes in this file leave it unneeded"
