"""Execution model (NM201-NM203, NM205, NM212): graph cuts, step contexts, step closures.

torch_xla recorded lazy tensors and ran a graph at each cut; TorchNeuron runs every op eagerly,
so graph cuts, step contexts and eager-mode switches go, and a step closure runs where it is
called.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from types import MappingProxyType

from neuron_migrate.analysis.source import kept_comments
from neuron_migrate.analysis.values import Edit, Match, Plan
from neuron_migrate.checks.toolkit import DetectorFn, FixContext, FixFn
from neuron_migrate.checks.toolkit_calls import argument, literal, only_args, operand, synchronize
from neuron_migrate.checks.toolkit_layout import one_line


def remove_statement(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.mark_step()` on its own line -> nothing; so too `srv = xp.start_server(port)` when `srv` is never read.

    Rules of other concepts name it too (`fix = "remove_statement"`): it drops any call whose
    value and effect TorchNeuron does not need (metrics resets, profiler captures, cache setup).
    """
    stmt = ctx.expression_statement(match) or unused_assignment(ctx, match)
    return ctx.delete_statement(stmt) if stmt is not None else None


def _in_main_block(ctx: FixContext, stmt: ast.stmt) -> bool:
    node = ctx.analysis.parent(stmt)
    while node is not None and not isinstance(node, ast.Module):
        if isinstance(node, ast.If) and "__name__" in ctx.segment(node.test) and "__main__" in ctx.segment(node.test):
            return True
        node = ctx.analysis.parent(node)
    return False


def unused_assignment(ctx: FixContext, match: Match) -> ast.Assign | None:
    """`name = <the matched call>` in a function or a script's `if __name__ == "__main__":` block, where
    nothing in the module reads `name` (nor declares it global). Any other module-level name may be
    imported by other modules, so it stays."""
    stmt = ctx.analysis.parent(match.node)
    if not isinstance(stmt, ast.Assign) or stmt.value is not match.node or len(stmt.targets) != 1:
        return None
    if not isinstance(match.scope.node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _in_main_block(ctx, stmt):
        return None
    target = stmt.targets[0]
    if not isinstance(target, ast.Name):
        return None
    for node in ctx.analysis.nodes(ast.Name, ast.Global, ast.Nonlocal):
        if isinstance(node, ast.Name) and node.id == target.id and not isinstance(node.ctx, ast.Store):
            return None
        if isinstance(node, (ast.Global, ast.Nonlocal)) and target.id in node.names:
            return None
    return stmt


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
        return synchronize(ctx, match)
    return remove_statement(ctx, match)


def wait_device_ops(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.wait_device_ops()` -> `torch.accelerator.synchronize()` (guarded with `--target accelerator`)."""
    return synchronize(ctx, match) if isinstance(match.node, ast.Call) else None


def step_closure(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.add_step_closure(fn, args=(a, b))` -> `fn(a, b)` (runs now rather than after the step)."""
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    if not only_args(call, {"closure": 0, "args": 1, "run_async": 2}):
        return None
    closure = argument(call, "closure", 0)
    args = argument(call, "args", 1)
    if closure is None or _comment_between(ctx, call, [closure, args]):
        return None  # a comment on the call itself has no place in `fn(...)`
    start = ctx.src.node_span(call)[0]
    closure_start, closure_end = ctx.src.node_span(closure)
    if args is not None and ctx.src.node_span(args)[0] < closure_start:
        return _step_closure_reordered(ctx, call, closure, args)
    simple = isinstance(closure, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))
    edits = [Edit(start, closure_start, "" if simple else "("), *_closure_arguments(ctx, call, closure_end, args)]
    if not simple:
        edits[1] = edits[1]._replace(text=")" + edits[1].text)
    return Plan(tuple(edits), new=one_line(ctx, call, edits))


def _closure_arguments(ctx: FixContext, call: ast.Call, after: int, args: ast.expr | None) -> list[Edit]:
    """The edits that turn what follows the closure (from offset `after`) into its call's
    arguments: a tuple's or list's elements as they are written (its parentheses become the
    call's; `(a,)` loses its comma), any other value spread with `*`."""
    end = ctx.src.node_span(call)[1]
    if args is None:
        return [Edit(after, end, "()")]
    start, stop = ctx.src.node_span(args)
    text = ctx.src.text
    literal = (isinstance(args, ast.Tuple) and text[start] == "(") or isinstance(args, ast.List)
    if not literal or any(isinstance(e, ast.Starred) for e in args.elts):  # type: ignore[attr-defined]
        return [Edit(after, start, "(*"), Edit(stop, end, ")")]
    elements = args.elts  # type: ignore[attr-defined]  # a tuple or list: checked above
    closing = stop - 1
    if isinstance(args, ast.Tuple) and len(elements) == 1:
        last = ctx.src.node_span(elements[0])[1]
        if "\n" not in text[last:closing] and "\r" not in text[last:closing]:
            closing = last  # `(a,)` -> `fn(a)`
    return [Edit(after, start + 1, "("), Edit(closing, end, ")")]


def _step_closure_reordered(ctx: FixContext, call: ast.Call, closure: ast.expr, args: ast.expr) -> Plan | None:
    """`xm.add_step_closure(args=(a,), closure=fn)` -> `fn(a)`: the call written anew."""
    if isinstance(args, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in args.elts):
        inner = ", ".join(ctx.segment(e) for e in args.elts)
    else:
        inner = f"*{ctx.segment(args)}"
    return ctx.replace(call, f"{operand(ctx, closure)}({inner})")


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
    if not isinstance(stmt, ast.With) or len(stmt.items) != 1 or stmt.items[0].optional_vars is not None:
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
    return Plan((Edit(span[0], span[1], "".join(dedented)),))


DETECTORS: Mapping[str, tuple[tuple[type, ...], DetectorFn]] = MappingProxyType({})


FIXES: Mapping[str, FixFn] = MappingProxyType(
    {
        "remove_statement": remove_statement,
        "sync": sync,
        "wait_device_ops": wait_device_ops,
        "step_closure": step_closure,
        "step_context": step_context,
    }
)
