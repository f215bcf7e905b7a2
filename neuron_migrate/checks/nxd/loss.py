"""NxD's vocabulary-parallel cross-entropy (NM325) -> `loss_parallel()` around `F.cross_entropy`.

`loss = parallel_cross_entropy(logits, labels)` took this rank's vocabulary shard of the logits (a
column-parallel head with `gather_output=False`) and returned the loss per token. Natively the shard
is a DTensor on the mesh's `tp` dimension, `DTensor.from_local(logits, _MESH["tp"], [Shard(-1)])`,
and `F.cross_entropy(..., reduction="none")` of it under `loss_parallel()` computes the same loss
without gathering the vocabulary. The backward must run under the same context, so the statements
from the loss to its `.backward()` (in the same block) move into `with loss_parallel():`; without a
backward there, the call is left to a person.
"""

from __future__ import annotations

import ast

from neuron_migrate.analysis.analyze import body_of
from neuron_migrate.analysis.values import Edit, Match, Plan
from neuron_migrate.checks.nxd.mesh import MESH, mesh_source
from neuron_migrate.checks.toolkit import FixContext
from neuron_migrate.checks.toolkit_calls import argument, operand

_NXD_MESH_RULE = "nxd_parallel_state"


def parallel_cross_entropy(ctx: FixContext, match: Match) -> Plan | None:
    """The loss call rewritten, and its statements through the backward moved under `loss_parallel()`."""
    call = match.node
    if not isinstance(call, ast.Call) or len(call.args) > 3 or _mesh_missing(ctx, match):
        return None
    logits, target = argument(call, "vocab_parallel_logits", 0), argument(call, "target", 1)
    if logits is None or target is None or not isinstance(target, (ast.Name, ast.Attribute)):
        return None  # the target is read twice below: a name or attribute only
    stmt = _statement_of(ctx, call)
    block = body_of(ctx.analysis.parent(stmt), stmt) if stmt is not None else None  # type: ignore[arg-type]
    if stmt is None or block is None:
        return None
    backward = _backward_after(block, stmt)
    if backward is None or _multiline_strings(block, stmt, backward):
        return None
    text = (
        f'{{F}}.cross_entropy({{DTensor}}.from_local({ctx.segment(logits)}, {MESH}["tp"], [{{Shard}}(-1)])'
        f'.flatten(0, -2), {operand(ctx, target)}.flatten(), reduction="none").view_as({ctx.segment(target)})'
    )
    rendered, context = ctx.render(text, match), ctx.render("with {loss_parallel}():", match)
    if rendered is None or context is None:
        return None
    start, end = ctx.src.node_span(call)
    edits = [Edit(start, end, ctx.wrap(call, rendered[0])), *_indent_edits(ctx, block, stmt, backward, context[0])]
    return Plan(tuple(sorted(edits)), (*rendered[1], *context[1]))


def _mesh_missing(ctx: FixContext, match: Match) -> bool:
    from neuron_migrate.catalogue import load_catalogue

    rule = next(s for s in load_catalogue() if s.name == _NXD_MESH_RULE)
    return mesh_source(ctx.analysis, rule) is None


def _statement_of(ctx: FixContext, node: ast.AST) -> ast.stmt | None:
    current: ast.AST | None = node
    while current is not None and not isinstance(current, ast.stmt):
        current = ctx.analysis.parent(current)
    return current


def _backward_after(block: list[ast.stmt], stmt: ast.stmt) -> ast.stmt | None:
    """The first statement after `stmt` in its block that calls `.backward(...)`."""
    index = next(i for i, s in enumerate(block) if s is stmt)
    for later in block[index + 1 :]:
        for node in ast.walk(later):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "backward":
                return later
    return None


def _multiline_strings(block: list[ast.stmt], first: ast.stmt, last: ast.stmt) -> bool:
    """Whether a string in the statements spans lines (indenting its lines would change it)."""
    statements = block[block.index(first) : block.index(last) + 1]
    return any(
        isinstance(node, (ast.Constant, ast.JoinedStr)) and node.lineno != node.end_lineno
        for stmt in statements
        for node in ast.walk(stmt)
    )


def _indent_edits(ctx: FixContext, block: list[ast.stmt], first: ast.stmt, last: ast.stmt, header: str) -> list[Edit]:
    """`with ...:` before `first`'s line and one more indent on each non-blank line through `last`."""
    unit, newline = ctx.analysis.indent_unit(), ctx.src.newline
    indent = ctx.src.indent_of(first.lineno)
    start = ctx.src.line_start(first.lineno)
    edits = [Edit(start, start, f"{indent}{header}{newline}{unit}")]
    for line in range(first.lineno + 1, (last.end_lineno or last.lineno) + 1):
        if ctx.src.line_text(line).strip():
            at = ctx.src.line_start(line)
            edits.append(Edit(at, at, unit))
    return edits
