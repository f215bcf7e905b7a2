"""NxD imports (NM338), removed once nothing uses them, and the catch-all for NxD names no concept
rule maps (NM337)."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import replace

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.index import import_rule, needles, resolved_only
from neuron_migrate.analysis.names import Scope
from neuron_migrate.analysis.values import Match, Plan
from neuron_migrate.catalogue import RuleSpec, load_catalogue
from neuron_migrate.checks.toolkit import FixContext
from neuron_migrate.checks.toolkit_calls import entry_for
from neuron_migrate.checks.xla_imports import import_used, keep_reason

NXD_ROOT = "neuronx_distributed"
STILL_USED = "Port the uses of `{old}` (each has its finding), then remove the import"


def is_nxd(name: str | None) -> bool:
    return name is not None and (name == NXD_ROOT or name.startswith(NXD_ROOT + "."))


def _nxd_modules(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.ImportFrom):
        return [node.module] if node.level == 0 and is_nxd(node.module) else []  # type: ignore[list-item]
    return [a.name for a in node.names if is_nxd(a.name)]


@import_rule
@needles(NXD_ROOT)  # the import spells the neuronx_distributed package
def nxd_import(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """Imports of neuronx_distributed modules: removable once unused, else the uses come first."""
    assert isinstance(node, (ast.Import, ast.ImportFrom))
    for module in _nxd_modules(node):
        entry = entry_for(rule, module)
        if entry is None:
            continue
        if import_used(analysis, node):
            entry = replace(entry, message=STILL_USED)
        else:
            reason = keep_reason(analysis, node)
            entry = replace(entry, message=reason) if reason is not None else entry
        yield Match(rule, node, scope, entry, module, module)
        return


def remove_nxd_import(ctx: FixContext, match: Match) -> Plan | None:
    """Delete a neuronx_distributed import whose names nothing reads any more."""
    stmt = match.node
    assert isinstance(stmt, (ast.Import, ast.ImportFrom))
    if import_used(ctx.analysis, stmt) or keep_reason(ctx.analysis, stmt) is not None:
        return None
    return nxd_removal(ctx, stmt)


REMOVE_NXD_IMPORT = "remove_nxd_import"


def nxd_removal(ctx: FixContext, stmt: ast.Import | ast.ImportFrom) -> Plan | None:
    """The deletion `remove_nxd_import` makes of `stmt` once nothing uses it (planned on the text
    as it is, for an import the other fixes free); None where a person decides."""
    if isinstance(stmt, ast.Import) and not all(is_nxd(a.name) for a in stmt.names):
        return None  # `import torch, neuronx_distributed`: a human splits it
    if isinstance(ctx.analysis.parent(stmt), ast.Try):
        return None  # an optional import decided a branch: a human keeps the one that runs now
    return ctx.delete_statement(stmt)


@functools.cache
def _claimed() -> tuple[frozenset[str], tuple[str, ...]]:
    """The NxD names the concept rules map: exact names, and the prefixes they map with all below."""
    exact: set[str] = set()
    prefixes: set[str] = set()
    for spec in load_catalogue():
        if spec.detector != "qualified":
            continue
        for entry in spec.maps:
            if is_nxd(entry.old):
                (prefixes if entry.prefix else exact).add(entry.old)
    return frozenset(exact), tuple(sorted(prefixes))


def claimed(name: str) -> bool:
    """Whether a concept rule maps the NxD name `name` (exactly or under one of its prefixes)."""
    exact, prefixes = _claimed()
    return name in exact or any(name == p or name.startswith(p + ".") for p in prefixes)


@resolved_only
@needles(under=(NXD_ROOT,))
def nxd_other_api(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """A use of a neuronx_distributed name that no concept rule maps (the NxD catch-all)."""
    if not isinstance(node, (ast.Name, ast.Attribute)) or not isinstance(node.ctx, ast.Load):
        return
    names = sorted(n for n in analysis.qualified(node, scope) if is_nxd(n))
    if not names or any(claimed(n) for n in names):
        return
    parent = analysis.parent(node)
    if isinstance(parent, ast.Attribute) and parent.value is node:
        return  # part of a longer chain: the chain is the reference
    yield Match(rule, node, scope, None, names[0], analysis.segment(node))
