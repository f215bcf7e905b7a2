"""Detectors for `torch.compile` arguments the Neuron backend rejects, ignores or needs.

What the backend accepts (`modes`, `options` keys, `dynamic`) comes from the target version's
compat data, so a release that widens support is a data change.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from types import MappingProxyType

from neuron_migrate import compat
from neuron_migrate.analysis.analyze import Analysis, Match, resolved_only
from neuron_migrate.analysis.names import Scope, dotted
from neuron_migrate.catalogue import MapEntry, RuleSpec
from neuron_migrate.model import Safety

DetectorFn = Callable[[RuleSpec, Analysis, ast.AST, Scope], Iterator[Match]]

# `--target accelerator` keeps code that runs on CUDA and the CPU, where no `neuron` backend exists.
_PORTABLE_BACKEND = 'Pass `backend="neuron"` to `{old}` only when the current accelerator is `neuron`'
COMPILE = frozenset({"torch.compile", "torch.compiler.compile"})
_OPTIMIZE = frozenset({"torch._dynamo.optimize"})
SET_DEFAULT_BACKEND = frozenset(
    {"torch.compiler.set_default_backend", "torch._dynamo.backends.registry.set_default_backend"}
)


def _keyword(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def _spreads(call: ast.Call) -> bool:
    """`f(*args)` / `f(**kwargs)`: any keyword may be hidden in there."""
    return any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args)


def _string(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _compile_call(analysis: Analysis, node: ast.AST, scope: Scope, names: frozenset[str] = COMPILE) -> bool:
    return isinstance(node, ast.Call) and bool(analysis.call_names(node, scope) & names)


def _support(analysis: Analysis) -> compat.CompileSupport:
    return compat.load_release(analysis.target_version).compile


def _bare_decorators(analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[ast.expr]:
    """`@torch.compile` written without parentheses on a function or class."""
    for decorator in getattr(node, "decorator_list", ()):
        if dotted(decorator) is not None and analysis.qualified(decorator, scope) & COMPILE:
            yield decorator


@resolved_only
def dynamic_true(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`torch.compile(..., dynamic=True)` and `torch._dynamo.optimize(..., dynamic=True)`."""
    if not _compile_call(analysis, node, scope, COMPILE | _OPTIMIZE) or _support(analysis).dynamic:
        return
    keyword = _keyword(node, "dynamic")  # type: ignore[arg-type]
    if keyword is not None and isinstance(keyword.value, ast.Constant) and keyword.value.value is True:
        yield Match(
            rule, keyword.value, scope, MapEntry(old="dynamic=True", new="False"), "torch.compile", "dynamic=True"
        )


@resolved_only
def dynamic_unset(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`torch.compile(...)` (or `@torch.compile`) that leaves `dynamic` to Dynamo's default."""
    yield from _missing_keyword(rule, analysis, node, scope, "dynamic", "dynamic=False")


@resolved_only
def backend_unset(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`torch.compile(...)` with no `backend`, in a module that never sets a default backend."""
    found = list(_missing_keyword(rule, analysis, node, scope, "backend", 'backend="neuron"'))
    if found and not _sets_default_backend(analysis):  # walk the module only when it matters
        yield from found


def _missing_keyword(
    rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope, name: str, keyword: str
) -> Iterator[Match]:
    if isinstance(node, ast.Call):
        if _compile_call(analysis, node, scope) and _keyword(node, name) is None and not _spreads(node):
            yield Match(
                rule,
                node,
                scope,
                _keyword_entry(name),
                "torch.compile",
                dotted(node.func) or "torch.compile",
                (("keyword", keyword),),
            )
        return
    for decorator in _bare_decorators(analysis, node, scope):
        yield Match(
            rule,
            decorator,
            scope,
            _keyword_entry(name),
            "torch.compile",
            dotted(decorator) or "torch.compile",
            (("keyword", keyword),),
        )


def _keyword_entry(name: str) -> MapEntry:
    entry = MapEntry(old=f"torch.compile:{name}", fix="add_keyword")
    if name == "backend":
        entry = replace(entry, accelerator_safety=Safety.MANUAL, accelerator_message=_PORTABLE_BACKEND)
    return entry


def _sets_default_backend(analysis: Analysis) -> bool:
    """Whether the module calls `torch.compiler.set_default_backend(...)` anywhere."""
    module = analysis.resolver.module_scope
    for node in analysis.nodes(ast.Call):
        if dotted(node.func) and analysis.qualified(node.func, module) & SET_DEFAULT_BACKEND:
            return True
    return False


@resolved_only
def compile_mode(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`torch.compile(..., mode="max-autotune")`: a mode the backend ignores."""
    if not _compile_call(analysis, node, scope):
        return
    keyword = _keyword(node, "mode")  # type: ignore[arg-type]
    mode = _string(keyword.value) if keyword is not None else None
    if keyword is not None and mode is not None and mode not in _support(analysis).modes:
        yield Match(rule, keyword, scope, MapEntry(old=mode, fix="remove_keyword"), "torch.compile", mode)


@resolved_only
def compile_options(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """Keys of `torch.compile(..., options={...})` that the Neuron backend does not read."""
    if not _compile_call(analysis, node, scope):
        return
    keyword = _keyword(node, "options")  # type: ignore[arg-type]
    known = _support(analysis).options
    for key_node, key in _option_keys(analysis, keyword.value if keyword else None, scope):
        if key not in known:
            values = (("known", ", ".join(f"`{k}`" for k in known)),)
            yield Match(rule, key_node, scope, MapEntry(old=key), "torch.compile", key, values)


def _option_keys(analysis: Analysis, value: ast.AST | None, scope: Scope) -> Iterator[tuple[ast.AST, str]]:
    """String keys of a dict literal or of `dict(key=...)`."""
    if isinstance(value, ast.Dict):
        for key in value.keys:
            text = _string(key)
            if key is not None and text is not None:
                yield key, text
    elif (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "dict"
        and not analysis.resolver.lookup("dict", scope)
    ):
        for keyword in value.keywords:
            if keyword.arg is not None:
                yield keyword, keyword.arg


@resolved_only
def cuda_backend(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`backend="inductor"` / `"cudagraphs"` in torch.compile, `_dynamo.optimize` or `set_default_backend`."""
    assert isinstance(node, ast.Call)
    names = analysis.call_names(node, scope)
    backend: ast.AST | None = None
    if names & COMPILE:
        keyword = _keyword(node, "backend")
        backend = keyword.value if keyword else None
    elif names & (_OPTIMIZE | SET_DEFAULT_BACKEND):
        keyword = _keyword(node, "backend")
        backend = keyword.value if keyword else node.args[0] if node.args else None
    text = _string(backend)
    entry = next((e for e in rule.maps if e.old == text), None) if text is not None else None
    if entry is not None and backend is not None:
        yield Match(rule, backend, scope, entry, text or "", text or "", (("new", "neuron"),))


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
DETECTORS: Mapping[str, tuple[tuple[type, ...], DetectorFn]] = MappingProxyType(
    {
        "compile_dynamic_true": ((ast.Call,), dynamic_true),
        "compile_dynamic_unset": ((ast.Call, *_DEFINITIONS), dynamic_unset),
        "compile_backend_unset": ((ast.Call, *_DEFINITIONS), backend_unset),
        "compile_mode": ((ast.Call,), compile_mode),
        "compile_options": ((ast.Call,), compile_options),
        "compile_cuda_backend": ((ast.Call,), cuda_backend),
    }
)
