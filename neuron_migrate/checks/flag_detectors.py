"""Feature flags that gate torch_xla code paths: after migration, what they guard never runs.

`is_torch_xla_available()`, `is_xla_available()`, `"torch_xla" in sys.modules`,
`importlib.util.find_spec("torch_xla")`, `DistributedType.XLA`, and reads of the torch_xla-era
environment variables (`XLA_USE_BF16`, `XLA_DOWNCAST_BF16`, `PJRT_DEVICE`). The finding names
the lines the test guards, when it is an `if`/`elif`/`while` condition or a conditional expression.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator

from neuron_migrate.analysis.analyze import Analysis, Match
from neuron_migrate.analysis.names import Scope, dotted
from neuron_migrate.catalogue import MapEntry, RuleSpec

_AVAILABILITY = frozenset({"is_torch_xla_available", "is_xla_available", "is_torch_tpu_available", "is_tpu_available"})
_FIND_SPEC = frozenset({"importlib.util.find_spec", "importlib.find_loader", "pkgutil.find_loader"})
_ENV_READS = frozenset({"os.environ.get", "os.getenv"})
_ENVIRON = frozenset({"os.environ"})
_SYS_MODULES = frozenset({"sys.modules"})
_UNGUARDED = "Port or remove the code that depends on `{old}`; after migration it is false or unset"


def _string(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def xla_feature_flag(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """A test of whether torch_xla is in use; the match names the lines it guards."""
    flag = _flag(rule, analysis, node, scope)
    if flag is None:
        return
    entry, written = flag
    lines = _guarded_lines(analysis, node)
    if not lines:
        entry = MapEntry(old=entry.old, message=_UNGUARDED)
    yield Match(rule, node, scope, entry, written, written, (("lines", lines),))


@functools.lru_cache(maxsize=64)
def _variables(maps: tuple[MapEntry, ...]) -> dict[str, MapEntry]:
    return {entry.old: entry for entry in maps}


def _flag(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> tuple[MapEntry, str] | None:
    if isinstance(node, ast.Call):
        name = dotted(node.func) or ""
        if name.rsplit(".", 1)[-1] in _AVAILABILITY:
            return MapEntry(old=name), f"{name}()"
        names = analysis.call_names(node, scope)
        if not names:
            return None
        first = _string(node.args[0]) if node.args else None
        if names & _FIND_SPEC and first is not None and first.split(".")[0] == "torch_xla":
            return MapEntry(old=first), analysis.segment(node)
        variables = _variables(rule.maps)
        if names & _ENV_READS and first in variables:
            return variables[first], analysis.segment(node)
    elif isinstance(node, ast.Attribute):
        if node.attr == "XLA" and (dotted(node.value) or "").rsplit(".", 1)[-1] == "DistributedType":
            return MapEntry(old="DistributedType.XLA"), dotted(node) or "DistributedType.XLA"
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
        key = _string(node.left)
        if key is None:
            return None
        container = analysis.qualified(node.comparators[0], scope)
        if key.split(".")[0] == "torch_xla" and container & _SYS_MODULES:
            return MapEntry(old=key), analysis.segment(node)
        variables = _variables(rule.maps)
        if key in variables and container & _ENVIRON:
            return variables[key], analysis.segment(node)
    elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        key = _string(node.slice)
        if key is not None and key in _variables(rule.maps) and analysis.qualified(node.value, scope) & _ENVIRON:
            return _variables(rule.maps)[key], analysis.segment(node)
    return None


def _guarded_lines(analysis: Analysis, node: ast.AST) -> str:
    """` (lines 12-15)` for the block an `if`/`while`/conditional expression test guards; else ``."""
    child: ast.AST = node
    parent = analysis.parent(node)
    while parent is not None and not isinstance(parent, ast.stmt) and not isinstance(parent, ast.IfExp):
        child, parent = parent, analysis.parent(parent)
    if isinstance(parent, (ast.If, ast.While)) and parent.test is child and parent.body:
        first, last = parent.body[0].lineno, parent.body[-1].end_lineno or parent.body[-1].lineno
    elif isinstance(parent, ast.IfExp) and parent.test is child:
        first, last = parent.body.lineno, parent.body.end_lineno or parent.body.lineno
    else:
        return ""
    return f" (line {first})" if first == last else f" (lines {first}-{last})"
