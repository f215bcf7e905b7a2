"""Python detectors for patterns a qualified name alone cannot express.

A rule names its detector with `detector = "..."`; the detector reads the rule's `[[map]]`
entries for its data (strings, variable names). Each detector is a pure function
(rule, analysis, node, scope) -> matches, run on the node types it lists.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from types import MappingProxyType

from neuron_migrate.analysis.analyze import (
    XLA_ROOT,
    Analysis,
    Match,
    import_rule,
    resolved_only,
)
from neuron_migrate.analysis.names import Scope
from neuron_migrate.catalogue import MapEntry, RuleSpec
from neuron_migrate.checks import (
    api_detectors,
    compile_detectors,
    cuda,
    device_strings,
    flag_detectors,
    import_uses,
)

DetectorFn = Callable[[RuleSpec, Analysis, ast.AST, Scope], Iterator[Match]]


def _entry_for(rule: RuleSpec, value: str) -> MapEntry | None:
    """The rule's map entry for an exact value, or the longest matching `prefix` entry."""
    best: MapEntry | None = None
    for entry in rule.maps:
        if entry.old == value:
            return entry
        if entry.prefix and value.startswith(entry.old) and (best is None or len(entry.old) > len(best.old)):
            best = entry
    return best


def _string(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


# -- imports -----------------------------------------------------------------------------
def _xla_modules(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        return [module] if node.level == 0 and (module == XLA_ROOT or module.startswith(XLA_ROOT + ".")) else []
    return [a.name for a in node.names if a.name == XLA_ROOT or a.name.startswith(XLA_ROOT + ".")]


@import_rule
def xla_import(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """Imports of torch_xla modules; entries with `old` list the modules this rule owns."""
    assert isinstance(node, (ast.Import, ast.ImportFrom))
    for module in _xla_modules(node):
        entry = _entry_for(rule, module)
        if entry is None:
            continue
        if entry.old == XLA_ROOT and entry.prefix and _claimed_elsewhere(analysis, module, rule):
            continue
        if entry.fix == "remove_import" and not import_uses.import_used(analysis, node):
            reason = import_uses.keep_reason(analysis, node)
            entry = replace(entry, message=reason) if reason is not None else entry
        yield Match(rule, node, scope, entry, module, module)
        return


def _claimed_elsewhere(analysis: Analysis, module: str, rule: RuleSpec) -> bool:
    """Whether another enabled import rule has a more specific entry for `module`."""
    for other in analysis.import_rules:  # type: ignore[attr-defined]
        if other is not rule and _entry_for(other, module) is not None:
            return True
    return False


# -- environment variables -------------------------------------------------------------------
_ENVIRON = {"os.environ"}


@resolved_only
def env_var(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """Environment variables set from Python: `os.environ[K] = v`, `setdefault`, `putenv`, `update`."""
    for name, target, stmt_node in _env_writes(analysis, node, scope):
        entry = _entry_for(rule, name)
        if entry is not None:
            yield Match(rule, target, scope, entry, name, name, (("stmt", "1" if stmt_node else ""),))


def _env_writes(analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[tuple[str, ast.AST, bool]]:
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Subscript) and analysis.qualified(target.value, scope) & _ENVIRON:
                key = _string(target.slice)
                if key is not None:
                    yield key, node, len(node.targets) == 1
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        func = node.func
        names = analysis.call_names(node, scope)
        if names & {"os.environ.setdefault", "os.putenv", "os.environ.__setitem__"}:
            key = _string(node.args[0]) if node.args else None
            if key is not None:
                yield key, node, analysis.is_expression_statement(node)
        elif func.attr == "update" and analysis.qualified(func.value, scope) & _ENVIRON:
            for keyword in node.keywords:
                if keyword.arg:
                    yield keyword.arg, keyword, False
            if node.args and isinstance(node.args[0], ast.Dict):
                for key_node in node.args[0].keys:
                    key = _string(key_node)
                    if key is not None:
                        yield key, key_node, False  # type: ignore[misc]


# -- process groups and compile backends ------------------------------------------------------
_INIT_PG = {"torch.distributed.init_process_group", "torch.distributed.distributed_c10d.init_process_group"}


_NEW_GROUP = {"torch.distributed.new_group", "torch.distributed.distributed_c10d.new_group"}


@resolved_only
def process_group(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`init_process_group("xla", init_method="xla://")`, `new_group(backend="xla")`, and a backend
    held in a constant, class attribute or default argument."""
    assert isinstance(node, ast.Call)
    names = analysis.call_names(node, scope)
    if names & _INIT_PG:
        backend = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "backend"), None)
    elif names & _NEW_GROUP:
        backend = next(
            (k.value for k in node.keywords if k.arg == "backend"), node.args[2] if len(node.args) > 2 else None
        )
    else:
        return
    text = _string(backend)
    if text is None or names & _NEW_GROUP:
        source = backend if text is not None else _backend_source(analysis, backend, scope)
        if source is not None and source.value == "xla":
            safety = None if text is not None else device_strings.variable_safety(analysis, backend)  # type: ignore[arg-type]
            entry = MapEntry(old="xla", fix="replace_string", safety=safety)
            yield Match(rule, source, scope, entry, "xla", "xla", (("new", "neuron"),))
        return
    entry = _entry_for(rule, text)
    if entry is None and "xla" in text.split(",")[-1]:
        entry = MapEntry(old=text, message="Rewrite the backend `{old}` as `cpu:gloo,neuron:neuron`", safety=None)
        entry = replace(entry, fix=None)
    if entry is not None:
        yield Match(rule, node, scope, entry, text, text)


def _backend_source(analysis: Analysis, backend: ast.AST | None, scope: Scope) -> ast.Constant | None:
    return device_strings.string_source(analysis, backend, scope) if backend is not None else None


_COMPILE = {"torch.compile", "torch._dynamo.optimize"}


@resolved_only
def compile_backend(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`torch.compile(m, backend="openxla")` and `torch._dynamo.optimize("openxla")`."""
    assert isinstance(node, ast.Call)
    names = analysis.call_names(node, scope)
    if not names & _COMPILE:
        return
    backend = next((k.value for k in node.keywords if k.arg == "backend"), None)
    if backend is None and "torch._dynamo.optimize" in names and node.args:
        backend = node.args[0]
    text = _string(backend)
    entry = _entry_for(rule, text) if text is not None else None
    if entry is not None and backend is not None:
        yield Match(rule, backend, scope, entry, text or "", text or "", (("new", "neuron"),))


DETECTORS: Mapping[str, tuple[tuple[type, ...], DetectorFn]] = MappingProxyType(
    {
        "xla_import": ((ast.Import, ast.ImportFrom), xla_import),
        "device_string": ((ast.Call, ast.Compare), device_strings.device_string),
        "env_var": ((ast.Assign, ast.Call), env_var),
        "process_group": ((ast.Call,), process_group),
        "compile_backend": ((ast.Call,), compile_backend),
        "xla_feature_flag": ((ast.Call, ast.Compare, ast.Attribute, ast.Subscript), flag_detectors.xla_feature_flag),
        **api_detectors.DETECTORS,
        **compile_detectors.DETECTORS,
        **cuda.DETECTORS,
    }
)
