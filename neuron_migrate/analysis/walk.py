"""The one pass over a module's tree: link parents, and collect the matches of the enabled rules.

A statement that spells nothing an enabled rule can match through is not visited
(`analysis/reach.py`); the analysis links the nodes inside it when first asked about one.
"""

from __future__ import annotations

import ast

from neuron_migrate.analysis.analyze import Analysis, children
from neuron_migrate.analysis.index import XLA_ROOT, RuleIndex
from neuron_migrate.analysis.names import CHILD_FIELDS, Scope, dotted
from neuron_migrate.analysis.reach import skipper
from neuron_migrate.analysis.values import Match
from neuron_migrate.catalogue import MapEntry, RuleSpec

# Whether `walk` skips the statements no enabled rule can match in (`analysis/reach.py`); the
# tests turn it off to compare the findings with and without it.
SKIP_UNREACHABLE = True
_LEAVES = frozenset(
    {ast.Constant, ast.Name, ast.Pass, ast.Break, ast.Continue, ast.Global, ast.Nonlocal}
)  # no child nodes
_STATEMENTS = frozenset(cls for cls in CHILD_FIELDS if issubclass(cls, ast.stmt))
_SCOPE_NODES = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.Lambda,
    ast.ClassDef,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


def walk(analysis: Analysis, index: RuleIndex) -> list[Match]:
    """Visit every node once, set parent links, and collect the matches of enabled rules.

    A statement that spells nothing an enabled rule can match through is not visited
    (`analysis/reach.py`); the parent links inside it are set on the first question about one.
    """
    matches: list[Match] = []
    extend = matches.extend
    analysis.import_rules = index.import_rules
    stack: list[tuple[ast.AST, Scope]] = [(analysis.tree, analysis.resolver.module_scope)]
    pop, push = stack.pop, stack.append
    scope_of = analysis.resolver.scope_of
    detectors, unresolved = index.detectors, index.unresolved
    handled = analysis.handled
    reach = index.reach if SKIP_UNREACHABLE else None
    skip = skipper(reach, analysis.resolver, analysis.src) if reach is not None else None
    skipped = analysis.skipped
    parents = analysis.parents
    while stack:
        node, scope = pop()
        kind = type(node)  # `type(node) is X` (faster than isinstance here) does not narrow for mypy:
        if skip is not None and kind in _STATEMENTS and skip(node):  # type: ignore[arg-type]  # a statement
            skipped.append(node)  # type: ignore[arg-type]  # (as above): linked when first asked about
            continue
        if kind is ast.Call:  # hence the ignores below, each on a node whose class was just tested
            resolves = bool(analysis.call_names(node, scope))  # type: ignore[arg-type]
            if resolves and id(node) not in handled:  # a detector that rewrites an enclosing node claimed it
                extend(_match_call(analysis, node, scope, index))  # type: ignore[arg-type]
            for rule, detector in (detectors if resolves else unresolved).get(kind, ()):
                extend(detector(rule, analysis, node, scope))
        elif (
            (kind is ast.Name or kind is ast.Attribute)
            and type(node.ctx) is ast.Load  # type: ignore[attr-defined]
            and (kind is ast.Name or dotted(node) is not None)
        ):
            resolves = bool(analysis.qualified(node, scope))  # a name, or a whole `a.b.c` chain
            if resolves and id(node) not in handled:
                extend(_match_reference(analysis, node, scope, index))
            for rule, detector in (detectors if resolves else unresolved).get(kind, ()):
                extend(detector(rule, analysis, node, scope))
            if kind is ast.Attribute:
                _link_chain(parents, node)  # a whole chain is one reference: its parts are not visited
            continue
        else:
            for rule, detector in detectors.get(kind, ()):
                extend(detector(rule, analysis, node, scope))
            if kind in _LEAVES:
                continue
        kids = children(node)
        inner = scope_of.get(node, scope) if kind in _SCOPE_NODES else scope
        if inner is scope:
            for child in reversed(kids):
                parents[child] = node
                push((child, scope))
            continue
        outer_parts = _outer_parts(node)
        for child in reversed(kids):
            parents[child] = node
            push((child, scope if any(child is o for o in outer_parts) else inner))
    return matches


_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")  # the fields that hold statements


def walk_imports(analysis: Analysis, index: RuleIndex) -> list[Match]:
    """The matches `walk` finds at import statements with the import rules, without the walk.

    The statements are the resolver's, found through the names they bind (each binding keeps
    its statement and is in the scope `walk` passes). Statements are linked to their parents
    (the questions an import's fix asks); the nodes inside them on the first question about
    one, as for statements `walk` skips.
    """
    analysis.import_rules = index.import_rules
    tree, parents = analysis.tree, analysis.parents
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        for name in _BLOCKS:
            block = getattr(node, name, None)
            if type(block) is list:
                for child in block:
                    parents[child] = node
                    stack.append(child)
    analysis.skipped.extend(tree.body)
    statements: dict[int, tuple[ast.Import | ast.ImportFrom, Scope]] = {}
    for scope in analysis.resolver.scope_of.values():
        found: list[ast.AST | None] = [b.node for bindings in scope.bindings.values() for b in bindings]
        found += [star for _, star in scope.stars]
        for statement in found:
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                statements.setdefault(id(statement), (statement, scope))
    matches: list[Match] = []
    for statement, scope in statements.values():
        for rule, detector in index.detectors.get(type(statement), ()):
            if rule in index.import_rules:
                matches.extend(detector(rule, analysis, statement, scope))
    return matches


def _outer_parts(node: ast.AST) -> list[ast.AST]:
    """Children of a scope node that are evaluated in the enclosing scope."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        args = node.args
        parts: list[ast.AST] = [*node.decorator_list, *args.defaults]
        parts += [d for d in args.kw_defaults if d is not None]
        return parts + ([node.returns] if node.returns is not None else [])
    if isinstance(node, ast.Lambda):
        return [*node.args.defaults, *[d for d in node.args.kw_defaults if d is not None]]
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *node.keywords]
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return [node.generators[0]]
    return []


def _link_chain(parents: dict[ast.AST, ast.AST | None], node: ast.AST) -> None:
    while isinstance(node, ast.Attribute):
        parents[node.value] = node
        node = node.value


def _written(analysis: Analysis, node: ast.AST) -> str:
    return dotted(node) or analysis.segment(node)


def _match_call(analysis: Analysis, call: ast.Call, scope: Scope, index: RuleIndex) -> list[Match]:
    names = analysis.call_names(call, scope)
    if not names:
        return []
    found: list[Match] = []
    seen: set[tuple[str, str]] = set()
    for name in sorted(names):
        for rule, entry in _decisive(index.entries_for(name)):
            if (rule.code, entry.old) in seen:
                continue
            seen.add((rule.code, entry.old))
            analysis.handled.add(id(call.func))
            found.append(Match(rule, call, scope, entry, name, _written(analysis, call.func)))
    return found


def _decisive(pairs: list[tuple[RuleSpec, MapEntry]]) -> list[tuple[RuleSpec, MapEntry]]:
    """The entries that decide a name: its own where it has one, else those of the modules above it."""
    own = [pair for pair in pairs if not pair[1].prefix]
    return own or pairs


def _match_reference(analysis: Analysis, node: ast.AST, scope: Scope, index: RuleIndex) -> list[Match]:
    """The entries' matches for a name or a whole chain, else for the API the chain reads an
    attribute of (`__version__.split` of `from torch_xla import __version__`), else the catch-all's."""
    part: ast.AST = node
    while isinstance(part, (ast.Name, ast.Attribute)):
        found = _entry_matches(analysis, part, scope, index)
        if found:
            return found
        part = part.value if isinstance(part, ast.Attribute) else None  # type: ignore[assignment]
    names = analysis.qualified(node, scope)
    if index.catch_all is None or not names:
        return []
    xla = sorted(n for n in names if n == XLA_ROOT or n.startswith(XLA_ROOT + "."))
    if not xla or not all(index.undecided(n) for n in _chain_names(analysis, node, scope)):
        return []  # a rule that is not enabled decides it: not "no mapping"
    return [Match(index.catch_all, node, scope, None, xla[0], _written(analysis, node))]


def _chain_names(analysis: Analysis, node: ast.AST, scope: Scope) -> list[str]:
    """The qualified names of a chain and of each chain it reads an attribute of."""
    names: list[str] = []
    while isinstance(node, (ast.Name, ast.Attribute)):
        names += analysis.qualified(node, scope)
        node = node.value if isinstance(node, ast.Attribute) else None  # type: ignore[assignment]
    return names


def _entry_matches(analysis: Analysis, node: ast.AST, scope: Scope, index: RuleIndex) -> list[Match]:
    found: list[Match] = []
    seen: set[tuple[str, str]] = set()
    for name in sorted(analysis.qualified(node, scope)):
        for rule, entry in _decisive(index.entries_for(name)):
            if entry.calls_only or (rule.code, entry.old) in seen:
                continue
            seen.add((rule.code, entry.old))
            found.append(Match(rule, node, scope, entry, name, _written(analysis, node)))
    return found


def loads_of(analysis: Analysis, names: frozenset[str]) -> list[tuple[ast.Name, Scope]]:
    """Every read of one of `names` (a load, or a `del`, which reads the binding it removes),
    with the scope it is read in, as the walk assigns scopes."""
    found: list[tuple[ast.Name, Scope]] = []
    scope_of = analysis.resolver.scope_of
    stack: list[tuple[ast.AST, Scope]] = [(analysis.tree, analysis.resolver.module_scope)]
    while stack:
        node, scope = stack.pop()
        kind = type(node)
        if kind is ast.Name:
            if node.id in names and type(node.ctx) is not ast.Store:  # type: ignore[attr-defined]  # a Name
                found.append((node, scope))  # type: ignore[arg-type]  # (as above)
            continue
        inner = scope_of.get(node, scope) if kind in _SCOPE_NODES else scope
        if inner is scope:
            stack.extend((child, scope) for child in children(node))
            continue
        outer_parts = _outer_parts(node)
        stack.extend((child, scope if any(child is o for o in outer_parts) else inner) for child in children(node))
    return found
