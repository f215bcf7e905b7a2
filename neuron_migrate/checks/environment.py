"""Environment (NM603-NM606): XLA-era environment variables and the feature flags that gate XLA code.

`is_torch_xla_available()`, `"torch_xla" in sys.modules`, `importlib.util.find_spec("torch_xla")`,
`DistributedType.XLA` and reads of torch_xla-era variables are reported with the lines they
guard; statements that only set an XLA variable are removed.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.index import needles, resolved_only
from neuron_migrate.analysis.names import Scope, dotted
from neuron_migrate.analysis.values import Detail, Match, Plan
from neuron_migrate.catalogue import MapEntry, RuleSpec
from neuron_migrate.checks.toolkit import DetectorFn, FixContext, FixFn
from neuron_migrate.checks.toolkit_calls import entry_for, string_value


@dataclass(frozen=True)
class EnvWrite(Detail):
    """An environment variable written: `statement` when the write is a statement of its own,
    which the fix may delete."""

    statement: bool


# -- environment variables -------------------------------------------------------------------
_ENVIRON = {"os.environ"}


@resolved_only
@needles(names={"os.putenv"}, under=_ENVIRON)  # `os.environ[...]`, `.setdefault`, `.update`
def env_var(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """Environment variables set from Python: `os.environ[K] = v`, `setdefault`, `putenv`, `update`."""
    for name, target, stmt_node in _env_writes(analysis, node, scope):
        entry = entry_for(rule, name)
        if entry is not None:
            yield Match(rule, target, scope, entry, name, name, detail=EnvWrite(stmt_node))


def _env_writes(analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[tuple[str, ast.AST, bool]]:
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Subscript) and analysis.qualified(target.value, scope) & _ENVIRON:
                key = string_value(target.slice)
                if key is not None:
                    yield key, node, len(node.targets) == 1
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        func = node.func
        names = analysis.call_names(node, scope)
        if names & {"os.environ.setdefault", "os.putenv", "os.environ.__setitem__"}:
            key = string_value(node.args[0]) if node.args else None
            if key is not None:
                yield key, node, analysis.is_expression_statement(node)
        elif func.attr == "update" and analysis.qualified(func.value, scope) & _ENVIRON:
            for keyword in node.keywords:
                if keyword.arg:
                    yield keyword.arg, keyword, False
            if node.args and isinstance(node.args[0], ast.Dict):
                for key_node in node.args[0].keys:
                    key = string_value(key_node)
                    if key is not None and key_node is not None:
                        yield key, key_node, False


def remove_env_statement(ctx: FixContext, match: Match) -> Plan | None:
    """Delete a statement whose only effect is to set a torch_xla-era environment variable."""
    if not isinstance(match.detail, EnvWrite) or not match.detail.statement:
        return None
    node = match.node
    stmt = node if isinstance(node, ast.stmt) else ctx.analysis.parent(node)
    return ctx.delete_statement(stmt) if isinstance(stmt, ast.stmt) else None


_AVAILABILITY = frozenset({"is_torch_xla_available", "is_xla_available", "is_torch_tpu_available", "is_tpu_available"})


_FIND_SPEC = frozenset({"importlib.util.find_spec", "importlib.find_loader", "pkgutil.find_loader"})


_ENV_READS = frozenset({"os.environ.get", "os.getenv"})


_SYS_MODULES = frozenset({"sys.modules"})


_UNGUARDED = "Port or remove the code that depends on `{old}`; after migration it is false or unset"


@needles(
    "XLA", *_AVAILABILITY, names=_FIND_SPEC | _SYS_MODULES | {"os.getenv"}, under=_ENVIRON
)  # `os.environ.get` is under `os.environ`
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
        first = string_value(node.args[0]) if node.args else None
        if names & _FIND_SPEC and first is not None and first.split(".")[0] == "torch_xla":
            return MapEntry(old=first), analysis.segment(node)
        variables = _variables(rule.maps)
        if names & _ENV_READS and first in variables:
            return variables[first], analysis.segment(node)
    elif isinstance(node, ast.Attribute):
        if node.attr == "XLA" and (dotted(node.value) or "").rsplit(".", 1)[-1] == "DistributedType":
            return MapEntry(old="DistributedType.XLA"), dotted(node) or "DistributedType.XLA"
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
        key = string_value(node.left)
        if key is None:
            return None
        container = analysis.qualified(node.comparators[0], scope)
        if key.split(".")[0] == "torch_xla" and container & _SYS_MODULES:
            return MapEntry(old=key), analysis.segment(node)
        variables = _variables(rule.maps)
        if key in variables and container & _ENVIRON:
            return variables[key], analysis.segment(node)
    elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        key = string_value(node.slice)
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


DETECTORS: Mapping[str, tuple[tuple[type, ...], DetectorFn]] = MappingProxyType(
    {
        "env_var": ((ast.Assign, ast.Call), env_var),
        "xla_feature_flag": ((ast.Call, ast.Compare, ast.Attribute, ast.Subscript), xla_feature_flag),
    }
)


FIXES: Mapping[str, FixFn] = MappingProxyType(
    {
        "remove_env_statement": remove_env_statement,
    }
)
