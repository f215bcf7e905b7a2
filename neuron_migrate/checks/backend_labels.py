"""Backend labels (NM310): the strings a process-group backend is chosen from, where they are
kept, and the comparisons that read them again.

A fix that renames the `"xla"` backend held in a name or attribute (`backend = "xla" if c else
"gloo"`, a class's `dist_backend = "xla"`) must rename it where the program tests it too (`if
backend == "xla":`), or that branch is dead after the migration. A test of an attribute named as
a backend that this file never sets (`self.dist_backend == "xla"`, set in another module, whose
own fix renames it) is rewritten likewise.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.names import Scope
from neuron_migrate.analysis.values import Match
from neuron_migrate.catalogue import MapEntry, RuleSpec
from neuron_migrate.checks.toolkit_calls import string_value
from neuron_migrate.model import Safety


def branch_strings(analysis: Analysis, node: ast.AST | None, scope: Scope) -> list[ast.Constant]:
    """The strings a conditional expression can yield (`"xla" if on_xla else "gloo"`), written in
    place or assigned once to the name `node`; [] when a branch is anything but a string or
    another such expression."""
    if isinstance(node, ast.Name):
        bindings = analysis.resolver.lookup(node.id, scope)
        target = bindings[0].node if len(bindings) == 1 else None
        assign = next((a for a in analysis.nodes(ast.Assign) if a.targets == [target]), None)
        if assign is None:
            return []
        node = assign.value
    if not isinstance(node, ast.IfExp):
        return []
    found: list[ast.Constant] = []
    for branch in (node.body, node.orelse):
        if isinstance(branch, ast.IfExp):
            inner = branch_strings(analysis, branch, scope)
            if not inner:
                return []
            found += inner
        elif isinstance(branch, ast.Constant) and string_value(branch) is not None:
            found.append(branch)
        else:
            return []
    return found


def exported_backend(rule: RuleSpec, analysis: Analysis, node: ast.Assign, scope: Scope) -> Iterator[Match]:
    """`dist_backend = "xla"` in a class body or at module level, named as a backend and read
    nowhere in this file: another module passes it to `init_process_group` (unsafe: unseen)."""
    if scope.parent is not None and not scope.is_class:
        return
    target = node.targets[0] if len(node.targets) == 1 else None
    if not isinstance(target, ast.Name) or "backend" not in target.id.lower() or string_value(node.value) != "xla":
        return
    if any(_reads(n, target.id) for n in analysis.nodes(ast.Name, ast.Attribute)):
        return  # read here: the call that reads it decides
    entry = MapEntry(old="xla", fix="replace_string", safety=Safety.UNSAFE)
    yield Match(rule, node.value, scope, entry, "xla", "xla", (("new", "neuron"),))


def _reads(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.Name):
        return node.id == name and isinstance(node.ctx, ast.Load)
    return isinstance(node, ast.Attribute) and node.attr == name


def label_comparisons(analysis: Analysis, holder: ast.AST) -> list[ast.Constant]:
    """The `"xla"` strings this file compares the name or attribute `holder` with (`==`, `!=`, `in`)."""
    key = _key(holder)
    if key is None:
        return []
    return [text for node in analysis.nodes(ast.Compare) for text, other in _xla_operands(node) if _key(other) == key]


def foreign_comparisons(analysis: Analysis, node: ast.Compare) -> list[ast.Constant]:
    """The `"xla"` strings `node` compares `self.<...backend...>` with, where this file never sets
    that attribute: a class of another module does, and its fix renames the value there."""
    found = []
    for text, other in _xla_operands(node):
        if not isinstance(other, ast.Attribute) or not isinstance(other.value, ast.Name):
            continue
        inherited = other.value.id in ("self", "cls") and not _set_here(analysis, other.attr)
        if inherited and "backend" in other.attr.lower():
            found.append(text)
    return found


def _key(node: ast.AST) -> tuple[str, str] | None:
    if isinstance(node, ast.Name):
        return ("name", node.id)
    if isinstance(node, ast.Attribute):
        return ("attr", node.attr)
    return None


def _xla_operands(node: ast.Compare) -> list[tuple[ast.Constant, ast.AST]]:
    """Each `"xla"` the comparison tests an operand against, with that operand."""
    found: list[tuple[ast.Constant, ast.AST]] = []
    operands = [node.left, *node.comparators]
    for op, left, right in zip(node.ops, operands, operands[1:]):
        if isinstance(op, (ast.Eq, ast.NotEq)):
            found += [(a, b) for a, b in ((left, right), (right, left)) if string_value(a) == "xla"]  # type: ignore[misc]
        elif isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            found += [(e, left) for e in right.elts if string_value(e) == "xla"]  # type: ignore[misc]
    return found


def _set_here(analysis: Analysis, attr: str) -> bool:
    """Whether this file assigns `attr` (as an attribute, or a name in a class body)."""
    for node in analysis.nodes(ast.Attribute, ast.Name):
        stored = isinstance(getattr(node, "ctx", None), ast.Store)
        if stored and (getattr(node, "attr", None) == attr or getattr(node, "id", None) == attr):
            return True
    return False


COMPARED = 'Compare with `"neuron"` here too; the fix renames the `"xla"` backend this reads'


def renamed_label(
    rule: RuleSpec, node: ast.Constant, scope: Scope, safety: Safety | None, message: str | None = None
) -> Match:
    """The match that renames one `"xla"` label to `"neuron"` (in a test of it: `message`)."""
    entry = MapEntry(old="xla", fix="replace_string", safety=safety, message=message)
    return Match(rule, node, scope, entry, "xla", "xla", (("new", "neuron"),))
