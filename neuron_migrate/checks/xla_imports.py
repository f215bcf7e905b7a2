"""torch_xla imports (NM601, NM602): when an import is reported, and when it may go.

The detector and `remove_import` ask the same questions here (uses per scope, side effects,
star imports, names kept by strings), so a finding's message says why an import stays exactly
when the fix declines to remove it.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from types import MappingProxyType

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.index import XLA_ROOT, import_rule, needles
from neuron_migrate.analysis.names import BUILTINS, Resolver, Scope
from neuron_migrate.analysis.values import Edit, Match, Plan
from neuron_migrate.catalogue import RuleSpec
from neuron_migrate.checks.toolkit import DetectorFn, FixContext, FixFn
from neuron_migrate.checks.toolkit_calls import entry_for
from neuron_migrate.checks.xla_probes import (
    PROBE_BY_HAND,
    PROBE_STILL_USED,
    folds,
    is_optional_import,
    is_xla,
    neuron_path,
    probe_of,
)

# Modules imported for their side effect: they register the `xla` backend and init methods.
BACKEND_MODULES = (
    "torch_xla.distributed.xla_backend",
    "torch_xla.experimental.pjrt_backend",
    "torch_xla.experimental.pjrt",
)


_PATCHERS = ("patch", "patch.object", "patch.dict", "patch.multiple")
REMOVE_IMPORT = "remove_import"  # the fix that reads `keep_reason` (rules name it in `fix = ...`)


def bound_names(stmt: ast.Import | ast.ImportFrom) -> list[str]:
    """The names an import statement binds for torch_xla (`*` for a star import): in
    `import torch, torch_xla.core.xla_model as xm`, only `xm`; every name of an import without
    torch_xla (neuronx_distributed's, whose rules remove it the same way)."""
    names = [(alias, alias.asname or alias.name.split(".")[0]) for alias in stmt.names]
    return [name for alias, name in names if is_xla(stmt, alias)] or [name for _, name in names]


# -- uses, per scope ---------------------------------------------------------------------
def binding_used(resolver: Resolver, name: str, scope: Scope) -> bool:
    """Whether a load of `name` anywhere can see `scope`'s binding of it."""
    own = scope.bindings.get(name)
    if own is None:
        return resolver.is_loaded(name)
    return any(name in other.loads and resolver.lookup(name, other) is own for other in resolver.scope_of.values())


def import_scope(analysis: Analysis, stmt: ast.stmt) -> Scope:
    """The scope an import statement binds its names in."""
    return _binding_scopes(analysis).get(id(stmt), analysis.resolver.module_scope)


def _binding_scopes(analysis: Analysis) -> dict[int, Scope]:
    """Statement id -> the scope it binds names in (the first, as scopes are listed), once per module."""
    return analysis.fact(_find_binding_scopes)


def _find_binding_scopes(analysis: Analysis) -> dict[int, Scope]:
    found: dict[int, Scope] = {}
    for scope in analysis.resolver.scope_of.values():
        for bindings in scope.bindings.values():
            for binding in bindings:
                if binding.node is not None:
                    found.setdefault(id(binding.node), scope)
    return found


# -- side effects --------------------------------------------------------------------------
def _backend_strings(analysis: Analysis) -> tuple[tuple[ast.Constant, str], ...]:
    """Every string that still needs the `xla` backend (`"xla"`, `xla://`, `pjrt://`), with its
    text, in file order."""
    return analysis.fact(_find_backend_strings)


def _find_backend_strings(analysis: Analysis) -> tuple[tuple[ast.Constant, str], ...]:
    found: list[tuple[ast.Constant, str]] = []
    for node in analysis.nodes(ast.Constant):
        value = node.value
        if isinstance(value, str) and ("xla" in value or "pjrt://" in value):
            text = value.strip()
            parts = [p.split(":")[-1] for p in text.split(",")]
            if "xla" in parts or text.startswith(("xla://", "pjrt://")):
                found.append((node, text))
    return tuple(found)


def imports_backend(stmt: ast.Import | ast.ImportFrom) -> bool:
    """Whether `stmt` imports a module that registers the `xla` backend (`BACKEND_MODULES`)."""
    if isinstance(stmt, ast.ImportFrom):
        return stmt.module in BACKEND_MODULES
    return any(a.name in BACKEND_MODULES for a in stmt.names)


# -- star imports --------------------------------------------------------------------------
def star_names(resolver: Resolver, known: bool) -> Iterator[str]:
    """Loaded names a star import provides: known API names (`known`), else unbound names."""
    for scope in resolver.scope_of.values():
        for name in scope.loads:
            if name in BUILTINS:
                continue
            bindings = resolver.lookup(name, scope)
            if any(b.kind == "star" for b in bindings) if known else not bindings:
                yield name


def import_used(analysis: Analysis, stmt: ast.Import | ast.ImportFrom) -> bool:
    """Whether a name this import binds is still read where this binding is visible."""
    resolver = analysis.resolver
    if any(alias.name == "*" for alias in stmt.names):
        return next(star_names(resolver, known=True), None) is not None
    scope = import_scope(analysis, stmt)
    return any(binding_used(resolver, name, scope) for name in bound_names(stmt))


# -- names kept alive by strings ---------------------------------------------------------
def keep_reason(analysis: Analysis, stmt: ast.Import | ast.ImportFrom) -> str | None:
    """Why an otherwise unused torch_xla import must stay, as a message; None when it may go."""
    if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
        missing = sorted(set(star_names(analysis.resolver, known=False)))
        if missing:
            return f"Import what `{missing[0]}` needs explicitly, then remove the `{{old}}` star import"
    first = next(keeping_strings(analysis, stmt), None)
    return first[1] if first is not None else None


def keeping_strings(analysis: Analysis, stmt: ast.Import | ast.ImportFrom) -> Iterator[tuple[ast.Constant, str]]:
    """The strings that keep `stmt`, each with what `keep_reason` says of it, in the order it reads them: a
    string that needs the `xla` backend `stmt` registers; for a module-level import, a module-level
    `__all__` entry, string annotation or `mock.patch` target that names what it binds."""
    if imports_backend(stmt):
        for node, text in _backend_strings(analysis):
            yield node, f'Keep the `{{old}}` import while `"{text}"` needs the `xla` backend it registers'
    if import_scope(analysis, stmt) is not analysis.resolver.module_scope:
        return
    kinds = (
        (
            _export_strings,
            "Remove `{name}` from `__all__`, then the `{{old}}` import; other modules import it from here",
        ),
        (_annotation_strings, "Rewrite the string annotations that name `{name}`, then remove the `{{old}}` import"),
        (_patch_strings, "Update the `mock.patch` targets that name `{name}`, then remove the `{{old}}` import"),
    )
    for name in (n for n in bound_names(stmt) if n != "*"):
        for strings, message in kinds:
            for node, named in strings(analysis):
                if name in named:
                    yield node, message.format(name=name)


_Strings = tuple[tuple[ast.Constant, frozenset[str]], ...]  # a string, and the names it keeps


def _export_strings(analysis: Analysis) -> _Strings:
    """The strings of a module-level `__all__` (assigned or extended with literals)."""
    return analysis.fact(_find_export_strings)


def _find_export_strings(analysis: Analysis) -> _Strings:
    found: list[tuple[ast.Constant, frozenset[str]]] = []
    for stmt in analysis.tree.body:
        value: ast.AST | None = None
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                value = stmt.value
        if value is not None:
            found += [(node, frozenset({text})) for node, text in _strings(value)]
    return tuple(found)


def _strings(node: ast.AST) -> Iterator[tuple[ast.Constant, str]]:
    for inner in ast.walk(node):
        if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
            yield inner, inner.value


def _annotations(analysis: Analysis) -> Iterator[ast.expr]:
    for node in analysis.nodes(ast.arg, ast.FunctionDef, ast.AsyncFunctionDef, ast.AnnAssign):
        if isinstance(node, ast.arg) and node.annotation is not None:
            yield node.annotation
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            yield node.returns
        elif isinstance(node, ast.AnnAssign):
            yield node.annotation


def _annotation_strings(analysis: Analysis) -> _Strings:
    """String annotations (`x: "xm.Device"`), with the names read inside, which the resolver cannot see."""
    return analysis.fact(_find_annotation_strings)


def _find_annotation_strings(analysis: Analysis) -> _Strings:
    found: list[tuple[ast.Constant, frozenset[str]]] = []
    for annotation in _annotations(analysis):
        for node, text in _strings(annotation):
            try:
                parsed = ast.parse(text.strip(), mode="eval")
            except SyntaxError:
                continue
            found.append((node, frozenset(n.id for n in ast.walk(parsed) if isinstance(n, ast.Name))))
    return tuple(found)


def _patch_strings(analysis: Analysis) -> _Strings:
    """`mock.patch("pkg.mod.name.attr")` targets, with the names they reach through this module."""
    return analysis.fact(_find_patch_strings)


def _find_patch_strings(analysis: Analysis) -> _Strings:
    found: list[tuple[ast.Constant, frozenset[str]]] = []
    for node in analysis.nodes(ast.Call):
        if not _is_patcher(node.func):
            continue
        for arg in node.args[:1]:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.append((arg, frozenset(arg.value.split(".")[1:])))  # the first part is a module, not ours
    return tuple(found)


def _is_patcher(func: ast.AST) -> bool:
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    chain = ".".join(reversed(parts))
    return any(chain == p or chain.endswith("." + p) for p in _PATCHERS) and "patch" in parts


# -- the detector and the fix -----------------------------------------------------------
def _xla_modules(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        return [module] if node.level == 0 and (module == XLA_ROOT or module.startswith(XLA_ROOT + ".")) else []
    return [a.name for a in node.names if a.name == XLA_ROOT or a.name.startswith(XLA_ROOT + ".")]


@import_rule
@needles(XLA_ROOT)  # the import spells the torch_xla module
def xla_import(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """Imports of torch_xla modules; entries with `old` list the modules this rule owns."""
    assert isinstance(node, (ast.Import, ast.ImportFrom))
    for module in _xla_modules(node):
        entry = entry_for(rule, module)
        if entry is None:
            continue
        if entry.old == XLA_ROOT and entry.prefix and _claimed_elsewhere(analysis, module, rule):
            continue
        if entry.fix == REMOVE_IMPORT and not import_used(analysis, node):
            reason = keep_reason(analysis, node) or (None if folds(analysis, node, scope) else PROBE_BY_HAND)
            entry = replace(entry, message=reason) if reason is not None else entry
        elif entry.fix == REMOVE_IMPORT and probe_of(analysis, node) is not None:
            entry = replace(entry, message=PROBE_STILL_USED)
        yield Match(rule, node, scope, entry, module, module)
        return


def _claimed_elsewhere(analysis: Analysis, module: str, rule: RuleSpec) -> bool:
    """Whether another enabled import rule has a more specific entry for `module`."""
    return any(other is not rule and entry_for(other, module) is not None for other in analysis.import_rules)


def remove_import(ctx: FixContext, match: Match) -> Plan | None:
    """Delete a torch_xla import whose names are no longer used where it binds them."""
    stmt = match.node
    assert isinstance(stmt, (ast.Import, ast.ImportFrom))
    if import_used(ctx.analysis, stmt) or keep_reason(ctx.analysis, stmt) is not None:
        return None
    return removal(ctx, stmt, match.scope)


def removal(
    ctx: FixContext,
    stmt: ast.Import | ast.ImportFrom,
    scope: Scope,
    gone: frozenset[str] = frozenset(),
    rewritten: Callable[[ast.Call], bool] | None = None,
) -> Plan | None:
    """The deletion `remove_import` makes of `stmt` (in `scope`) once nothing uses it and no
    string keeps it, planned on the text as it is, as if the names in `gone` were read nowhere
    (the names it binds, whose reads other fixes take away); None where a person decides.
    A probe's statements may call what other fixes rewrite (`rewritten`): what those calls become
    is known only once they are made."""
    if len(stmt.names) > 1 and not all(is_xla(stmt, alias) for alias in stmt.names):
        return _without_xla(ctx, stmt)
    parent = ctx.analysis.parent(stmt)
    if isinstance(parent, ast.Try) and any(s is stmt for s in parent.body):
        if is_optional_import(ctx.analysis, parent, gone):
            return ctx.delete_statement(parent)
        if _other_import_used(ctx, parent, stmt, gone):
            return None
        return neuron_path(ctx, parent, scope, rewritten)  # the import chose the branch that ran
    return ctx.delete_statement(stmt)


def _other_import_used(ctx: FixContext, probe: ast.Try, stmt: ast.stmt, gone: frozenset[str]) -> bool:
    """Whether another import of the probe is used (not counting the reads of names in `gone`)."""
    return any(
        other is not stmt and not set(bound_names(other)) <= gone and import_used(ctx.analysis, other)
        for other in probe.body
        if isinstance(other, (ast.Import, ast.ImportFrom))
    )


def _without_xla(ctx: FixContext, stmt: ast.Import | ast.ImportFrom) -> Plan:
    """`import torch, torch_xla.core.xla_model as xm` -> `import torch`: the other modules stay."""
    kept = [ctx.segment(alias) for alias in stmt.names if not is_xla(stmt, alias)]
    start, end = ctx.src.node_span(stmt)
    return Plan((Edit(start, end, "import " + ", ".join(kept)),))


DETECTORS: Mapping[str, tuple[tuple[type, ...], DetectorFn]] = MappingProxyType(
    {
        "xla_import": ((ast.Import, ast.ImportFrom), xla_import),
    }
)


FIXES: Mapping[str, FixFn] = MappingProxyType(
    {
        REMOVE_IMPORT: remove_import,
    }
)
