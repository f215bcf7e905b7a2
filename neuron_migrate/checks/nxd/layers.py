"""NxD tensor-parallel layers (NM321) and sequence-parallel norms (NM323) -> torch layers and a plan.

Each class whose `__init__` builds NxD layers as its own attributes (`self.up =
ColumnParallelLinear(...)`) gets the plain layers with the same shapes and, at the end of its
`__init__`, where NxD sharded them, `parallelize_module(self, _MESH["tp"], {"up": ColwiseParallel(),
...})`: the plan of its own attribute names on the mesh's `tp` dimension. The layout keywords become
the plan's layouts (`layouts.py`). Every NxD layer of a class is planned together, in one plan that each
of their findings carries (the engine applies it once): a class is converted whole or not at all.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from neuron_migrate.analysis.values import Edit, Match, Plan, Request
from neuron_migrate.catalogue import MapEntry, RuleSpec
from neuron_migrate.checks.nxd.layouts import LAYERS, Converted, convert
from neuron_migrate.checks.nxd.mesh import MESH, mesh_source, scope_at
from neuron_migrate.checks.toolkit import FixContext
from neuron_migrate.checks.toolkit_calls import entry_for, line_length
from neuron_migrate.signatures import default_argument


@dataclass(frozen=True)
class Site:
    """One NxD layer built in `__init__`: its statement, call, attribute and the entry it matched."""

    stmt: ast.Assign
    call: ast.Call
    attribute: str
    entry: MapEntry


def tp_layer(ctx: FixContext, match: Match) -> Plan | None:
    """The whole class's plan (see the module docstring); None when any of its layers cannot be kept."""
    init = _init_of(ctx, match.node)
    if init is None:
        return None
    found = ctx.analysis.fact(_class_plans)
    if id(init) not in found:
        found[id(init)] = _plan_class(ctx, match, init)
    return found[id(init)]


def _class_plans(analysis: object) -> dict[int, Plan | None]:
    """The plans of the file's classes, by their `__init__` (filled as their layers are fixed)."""
    return {}


def _init_of(ctx: FixContext, node: ast.AST) -> ast.FunctionDef | None:
    """The `__init__` of a class whose body holds `node`'s statement directly."""
    stmt = ctx.analysis.parent(node)
    function = ctx.analysis.parent(stmt) if isinstance(stmt, ast.Assign) and stmt.value is node else None
    if not (isinstance(function, ast.FunctionDef) and function.name == "__init__" and stmt in function.body):
        return None
    return function if isinstance(ctx.analysis.parent(function), ast.ClassDef) else None


def _sites(ctx: FixContext, rules: tuple[RuleSpec, ...], init: ast.FunctionDef) -> list[Site] | None:
    """Every NxD layer `__init__` builds, each as `self.<attr> = Layer(...)` on its own statement;
    None when one is built any other way (in a loop, a list, a condition): the class stays whole."""
    scope = scope_at(ctx.analysis, init.body[0])
    sites: list[Site] = []
    for node in ast.walk(init):
        if not isinstance(node, ast.Call):
            continue
        names = ctx.analysis.call_names(node, scope)
        layer = next((n for n in sorted(names) if n in LAYERS), None)
        if layer is None:
            continue
        stmt = ctx.analysis.parent(node)
        if (
            not isinstance(stmt, ast.Assign)
            or len(stmt.targets) != 1
            or stmt not in init.body
            or stmt.value is not node
        ):
            return None
        target = stmt.targets[0]
        entry = next((e for r in rules for e in [entry_for(r, layer)] if e is not None), None)
        if not (isinstance(target, ast.Attribute) and _is_self(target.value)) or entry is None:
            return None
        sites.append(Site(stmt, node, target.attr, entry))
    return sites


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _plan_class(ctx: FixContext, match: Match, init: ast.FunctionDef) -> Plan | None:
    if mesh_source(ctx.analysis, _mesh_rule(match)) is None:
        return None  # no mesh in this file: the plan needs `_MESH["tp"]`
    sites = _sites(ctx, (match.rule, *_sibling_rules(match)), init)
    if not sites or any(_refused(site) for site in sites):
        return None
    converted = [convert(ctx, LAYERS[_layer_name(ctx, site)], site.call) for site in sites]
    if any(c is None for c in converted):
        return None
    edits: list[Edit] = []
    imports: list[Request] = []
    entries: list[str] = []
    for site, layer in zip(sites, converted, strict=True):
        assert layer is not None
        rendered = ctx.render(layer.text, match)
        if rendered is None:
            return None
        start, end = ctx.src.node_span(site.call)
        edits.append(Edit(start, end, rendered[0]))
        imports += rendered[1]
        if layer.style and layer.condition:
            entries.append(f'**({{"{site.attribute}": {layer.style}}} if {layer.condition} else {{}})')
        elif layer.style:
            entries.append(f'"{site.attribute}": {layer.style}')
        if layer.init is not None:
            no_grad = ctx.render("{torch}.no_grad()", match)
            if no_grad is None:
                return None
            edits.append(_init_edit(ctx, site, no_grad[0], layer.init))
            imports += no_grad[1]
    if entries:
        statement = _parallelize(ctx, match, init, entries)
        if statement is None:
            return None
        edits.append(statement[0])
        imports += statement[1]
    return Plan(tuple(sorted(edits)), tuple(dict.fromkeys(imports)))


def _layer_name(ctx: FixContext, site: Site) -> str:
    names = ctx.analysis.call_names(site.call, scope_at(ctx.analysis, site.call))
    return next(n for n in sorted(names) if n in LAYERS)


def _refused(site: Site) -> bool:
    """Whether a layer passes an argument its entry declines, or one its API does not have."""
    params = {p.name: p for p in site.entry.params}
    if any(isinstance(a, ast.Starred) for a in site.call.args) or len(site.call.args) > 2:
        return True
    for keyword in site.call.keywords:
        param = params.get(keyword.arg or "**")
        if param is None and "**kwargs" not in params:
            return True
        declined = param is not None and param.action == "decline"
        if declined and not default_argument(site.entry.old, param.name, keyword.value):  # type: ignore[union-attr]
            return True
    return False


def _mesh_rule(match: Match) -> RuleSpec:
    from neuron_migrate.catalogue import load_catalogue

    return next(s for s in load_catalogue() if s.name == "nxd_parallel_state")


def _sibling_rules(match: Match) -> tuple[RuleSpec, ...]:
    """The other rule whose layers share a class plan (TP layers and sequence-parallel norms)."""
    from neuron_migrate.catalogue import load_catalogue

    wanted = {"nxd_parallel_layer", "nxd_sequence_parallel"} - {match.rule.name}
    return tuple(s for s in load_catalogue() if s.name in wanted)


def _init_edit(ctx: FixContext, site: Site, no_grad: str, init: str) -> Edit:
    """`with torch.no_grad(): init(self.<attr>.weight)` after the layer's statement: NxD called
    `init_method` on the full weight before sharding it, as `parallelize_module` does next."""
    end = ctx.src.node_span(site.stmt)[1]
    indent, unit, newline = ctx.src.indent_of(site.stmt.lineno), ctx.analysis.indent_unit(), ctx.src.newline
    body = f"{newline}{indent}with {no_grad}:{newline}{indent}{unit}{init}(self.{site.attribute}.weight)"
    return Edit(end, end, body)


def _parallelize(
    ctx: FixContext, match: Match, init: ast.FunctionDef, entries: list[str]
) -> tuple[Edit, tuple[Request, ...]] | None:
    """The `parallelize_module(self, _MESH["tp"], {...})` statement appended to `__init__`'s body."""
    last = init.body[-1]
    end = ctx.src.node_span(last)[1]
    if ctx.statement_lines(last) is None:
        return None
    indent, unit, newline = ctx.src.indent_of(init.body[0].lineno), ctx.analysis.indent_unit(), ctx.src.newline
    one_line = f'{{parallelize_module}}(self, {MESH}["tp"], {{{", ".join(entries)}}})'
    rendered = ctx.render(one_line, match)
    if rendered is None:
        return None
    if len(indent) + len(rendered[0]) > line_length(ctx.src.text):
        inner = indent + unit
        lines = ["{parallelize_module}(", f"{inner}self,", f'{inner}{MESH}["tp"],', f"{inner}{{"]
        lines += [f"{inner}{unit}{entry}," for entry in entries] + [f"{inner}}},", f"{indent})"]
        rendered = ctx.render(newline.join(lines), match)
        if rendered is None:
            return None
    return Edit(end, end, f"{newline}{indent}{rendered[0]}"), rendered[1]


__all__ = ["Converted", "tp_layer"]
