"""Tests a fix turns into a literal: `if xr.using_pjrt():` becomes `True`, so the `if` folds to
the branch that runs, as `_merged_branches` (checks/launch.py) folds an `if` whose two branches
start the same process group. No `if True:` or `if not True: raise ...` is left behind.
"""

from __future__ import annotations

import ast

from neuron_migrate.analysis.values import Edit, Match, Plan
from neuron_migrate.checks.toolkit import FixContext

_LITERALS = {"True": True, "False": False}


def folded(ctx: FixContext, match: Match, plan: Plan) -> Plan | None:
    """`plan` rewritten to fold the `if` whose whole test (or `not` of it) it makes `True` or
    `False`; None when it does not (the plan stays as it is).

    `if True:` keeps its body, one level out, and loses its `else`; `if False:` keeps its `else`
    block the same way, becomes its `elif` (`elif c:` -> `if c:`), or goes whole (a block left
    empty gets its `pass` from engine/empty_blocks). The test runs nothing once it is a literal,
    so dropping it drops nothing. Left as the plan wrote it: an `elif`, an `if` sharing a line
    with its block, and a kept block holding a string over several lines (its text must not be
    re-indented).
    """
    if len(plan.edits) != 1 or plan.transform is not None or plan.edits[0][2] not in _LITERALS:
        return None
    start, end, text = plan.edits[0]
    analysis = ctx.analysis
    test: ast.AST | None = next(
        (
            n
            for n in (match.node, analysis.parent(match.node))
            if n is not None and ctx.src.node_span(n) == (start, end)
        ),
        None,
    )
    value = _LITERALS[text]
    parent = analysis.parent(test) if test is not None else None
    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
        test, value, parent = parent, not value, analysis.parent(parent)
    if not isinstance(parent, ast.If) or parent.test is not test:
        return None
    edit = _fold(ctx, parent, value)
    if edit is None:
        return None
    deletes = (parent,) if edit[2] == "" else ()
    return Plan((edit,), plan.imports, plan.safety, plan.description, deletes)


def _fold(ctx: FixContext, stmt: ast.If, value: bool) -> Edit | None:
    src = ctx.src
    span = ctx.statement_lines(stmt)
    if span is None or src.line_text(stmt.lineno).lstrip().startswith("elif") or stmt.body[0].lineno == stmt.lineno:
        return None
    if value:
        return _kept(ctx, stmt, stmt.body, stmt.lineno + 1, span)
    if not stmt.orelse:
        return Edit(*span, "")
    first = stmt.orelse[0]
    if isinstance(first, ast.If) and src.line_text(first.lineno).lstrip().startswith("elif"):
        elif_at = src.line_start(first.lineno) + len(src.indent_of(first.lineno))
        return Edit(span[0], elif_at + len("elif"), src.indent_of(stmt.lineno) + "if")
    line = src.else_line(stmt)
    return None if line is None else _kept(ctx, stmt, stmt.orelse, line + 1, span)  # None: `else: x`


def _kept(ctx: FixContext, stmt: ast.If, block: list[ast.stmt], first_line: int, span: tuple[int, int]) -> Edit | None:
    """The edit that replaces `stmt` with the lines `first_line`.. of `block`, one level out."""
    src = ctx.src
    for node in (n for s in block for n in ast.walk(s)):
        if isinstance(node, (ast.Constant, ast.JoinedStr)) and node.lineno != node.end_lineno:
            return None
    outer, inner = src.indent_of(stmt.lineno), src.indent_of(block[0].lineno)
    if not inner.startswith(outer) or len(inner) == len(outer):
        return None
    extra = len(inner) - len(outer)
    last = block[-1].end_lineno or block[-1].lineno
    lines = []
    for number in range(first_line, last + 1):
        line = src.text[src.line_start(number) : src.line_start(number + 1)]
        if line.startswith(outer) and line.strip():
            rest = line[len(outer) :]
            line = outer + rest[min(extra, len(rest) - len(rest.lstrip(" \t"))) :]
        lines.append(line)
    return Edit(span[0], span[1], "".join(lines))
