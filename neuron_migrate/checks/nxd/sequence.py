"""NxD sequence parallelism (NM323, NM340): the sequence scatter/gather and the hand-written
all-reduce of the sequence-parallel norms' gradients.

`scatter_to_sequence_parallel_region(x)` keeps this rank's slice of the sequence dimension, its
gradient gathered back; natively `DTensor.from_local(x, _MESH["tp"], [Replicate()],
run_check=False).redistribute(_MESH["tp"], [Shard(0)]).to_local()`. The gather is the reverse, its
gradient reduce-scattered (`to_local(grad_placements=[Partial()])`) as NxD's did into a
tensor-parallel region.

Training scripts sum the gradients of the norm weights NxD tags with `sequence_parallel_enabled`
over the tensor-parallel group, in a function of their own. Under DTensor those norms are
`SequenceParallel` and their gradients are reduced already: summing them again doubles them, so
the function and its calls go (NM340).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.index import needles
from neuron_migrate.analysis.names import Scope
from neuron_migrate.analysis.values import Match, Plan
from neuron_migrate.catalogue import RuleSpec, load_catalogue
from neuron_migrate.checks.nxd.mesh import MESH, mesh_source
from neuron_migrate.checks.toolkit import FixContext
from neuron_migrate.checks.toolkit_calls import argument, literal

TAG = "sequence_parallel_enabled"
_REDUCTIONS = frozenset(
    {
        "torch_xla.core.xla_model.all_reduce",
        "torch.distributed.all_reduce",
        "neuronx_distributed.parallel_layers.mappings.reduce_from_tensor_model_parallel_region",
        "neuronx_distributed.parallel_layers.reduce_from_tensor_model_parallel_region",
        "neuronx_distributed.parallel_layers.grads.bucket_allreduce_gradients",
    }
)


def _mesh_ready(ctx: FixContext) -> bool:
    rule = next(s for s in load_catalogue() if s.name == "nxd_parallel_state")
    return mesh_source(ctx.analysis, rule) is not None


def _dimension(ctx: FixContext, call: ast.Call) -> str | None:
    node = argument(call, "sequence_dimension", 1)
    if node is None:
        return "0"
    return ctx.segment(node) if isinstance(literal(node), int) else None


def sequence_scatter(ctx: FixContext, match: Match) -> Plan | None:
    """`scatter_to_sequence_parallel_region(x)` -> this rank's sequence shard of `x`, as a DTensor redistribution."""
    call = match.node
    if not isinstance(call, ast.Call) or not _mesh_ready(ctx) or argument(call, "input_", 0) is None:
        return None
    dim = _dimension(ctx, call)
    if dim is None:
        return None
    x = ctx.segment(argument(call, "input_", 0))  # type: ignore[arg-type]
    mesh = f'{MESH}["tp"]'
    text = f"{{DTensor}}.from_local({x}, {mesh}, [{{Replicate}}()], run_check=False).redistribute({mesh}, [{{Shard}}({dim})]).to_local()"
    rendered = ctx.render(text, match)
    return ctx.replace(call, rendered[0], rendered[1]) if rendered else None


def sequence_gather(ctx: FixContext, match: Match) -> Plan | None:
    """`gather_from_sequence_parallel_region(x)` -> the whole sequence; the gradient reduce-scattered
    into a tensor-parallel region (`to_model_parallel=True`, NxD's default) or sliced (`False`)."""
    call = match.node
    if not isinstance(call, ast.Call) or not _mesh_ready(ctx) or argument(call, "input_", 0) is None:
        return None
    dim = _dimension(ctx, call)
    into = literal(argument(call, "to_model_parallel", 2))
    if dim is None or into not in (None, True, False):
        return None
    x = ctx.segment(argument(call, "input_", 0))  # type: ignore[arg-type]
    mesh = f'{MESH}["tp"]'
    local = ".to_local(grad_placements=[{Partial}()])" if into in (None, True) else ".to_local()"
    text = f"{{DTensor}}.from_local({x}, {mesh}, [{{Shard}}({dim})], run_check=False).redistribute({mesh}, [{{Replicate}}()]){local}"
    rendered = ctx.render(text, match)
    return ctx.replace(call, rendered[0], rendered[1]) if rendered else None


# -- the hand-written gradient all-reduce (NM340) -------------------------------------------------
def _reads_tag(node: ast.AST) -> bool:
    """Whether `node` reads the NxD tag: `p.sequence_parallel_enabled` or `getattr(p, "sequence_parallel_enabled", ...)`."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Attribute) and inner.attr == TAG and isinstance(inner.ctx, ast.Load):
            return True
        if _names_tag(inner, "getattr"):
            return True
    return False


def _names_tag(node: ast.AST, function: str) -> bool:
    """`getattr(p, "sequence_parallel_enabled", ...)` / `setattr(...)`: the tag by its name."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == function):
        return False
    return len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value == TAG


def _reduces(analysis: Analysis, node: ast.AST, scope: Scope) -> bool:
    return any(
        isinstance(inner, ast.Call) and analysis.call_names(inner, scope) & _REDUCTIONS for inner in ast.walk(node)
    )


@needles(names=_REDUCTIONS)  # its body calls one of the reductions
def sequence_grad_sum(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """A function (or a loop outside one) that all-reduces gradients of parameters it selects by NxD's tag."""
    if isinstance(node, ast.FunctionDef):
        if _is_grad_sum(analysis, node):
            yield Match(rule, node, scope, rule.maps[0] if rule.maps else None, node.name, node.name)
        return
    assert isinstance(node, ast.For)
    enclosing = [a for a in _ancestors(analysis, node) if isinstance(a, ast.FunctionDef)]
    if any(_is_grad_sum(analysis, function) for function in enclosing):
        return  # the function around it is the finding
    if _reads_tag(node) and _reduces(analysis, node, scope):
        yield Match(rule, node, scope, rule.maps[0] if rule.maps else None, "for", "for")


def _ancestors(analysis: Analysis, node: ast.AST) -> Iterator[ast.AST]:
    current = analysis.parent(node)
    while current is not None:
        yield current
        current = analysis.parent(current)


def _is_grad_sum(analysis: Analysis, function: ast.FunctionDef) -> bool:
    return _reads_tag(function) and _reduces(analysis, function, analysis.resolver.scope_for(function))


def delete_grad_sum(ctx: FixContext, match: Match) -> Plan | None:
    """Delete the function and every call of it (each a statement of its own), or the loop."""
    node = match.node
    if _tags_by_hand(ctx.analysis):
        return None  # norms tagged by this file's own code are not SequenceParallel: their sums stay
    if isinstance(node, ast.For):
        return ctx.delete_statement(node)
    assert isinstance(node, ast.FunctionDef)
    if ctx.analysis.owner(node) is not ctx.analysis.tree or ctx.statement_lines(node) is None:
        return None
    uses = [n for n in ctx.analysis.nodes(ast.Name) if n.id == node.name and isinstance(n.ctx, ast.Load)]
    statements = []
    for use in uses:
        call = ctx.analysis.parent(use)
        stmt = ctx.analysis.parent(call) if isinstance(call, ast.Call) and call.func is use else None
        if not (isinstance(stmt, ast.Expr) and stmt.value is call) or ctx.statement_lines(stmt) is None:
            return None  # passed around or used as a value: a person removes it
        statements.append(stmt)
    plans = [ctx.delete_statement(s) for s in (node, *statements)]
    if any(p is None for p in plans):
        return None
    edits = tuple(sorted(e for p in plans for e in p.edits))  # type: ignore[union-attr]
    return Plan(edits, deletes=tuple(s for p in plans for s in p.deletes))  # type: ignore[union-attr]


def _tags_by_hand(analysis: Analysis) -> bool:
    """Whether the file sets the tag itself (`w.sequence_parallel_enabled = True`, `setattr(...)`)."""
    for node in analysis.nodes(ast.Attribute):
        if node.attr == TAG and isinstance(node.ctx, ast.Store):
            return True
    return any(_names_tag(call, "setattr") for call in analysis.nodes(ast.Call))


def delete_call(ctx: FixContext, match: Match) -> Plan | None:
    """NxD's own `allreduce_sequence_parallel_gradients(optimizer)` on a line of its own: deleted."""
    stmt = ctx.expression_statement(match) if isinstance(match.node, ast.Call) else None
    return ctx.delete_statement(stmt) if stmt is not None else None
