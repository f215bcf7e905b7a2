"""Compilation (NM206, NM501-NM507): `torch_xla.compile` and `torch.compile` arguments.

What the Neuron backend accepts (`modes`, `options` keys, `dynamic`) comes from the target
version's compat data, so a release that widens support is a data change.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from neuron_migrate import compat
from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.index import needles, resolved_only
from neuron_migrate.analysis.names import Scope, dotted
from neuron_migrate.analysis.values import Detail, Edit, Match, Plan
from neuron_migrate.catalogue import MapEntry, RuleSpec
from neuron_migrate.checks.toolkit import FixContext, FixFn
from neuron_migrate.checks.toolkit_calls import (
    entry_for,
    is_default,
    keyword_of,
    matched_call,
    plain_args,
    string_value,
)
from neuron_migrate.checks.toolkit_layout import appended
from neuron_migrate.model import Safety


@dataclass(frozen=True)
class AddKeyword(Detail):
    """The keyword arguments (`name=value`, several joined by `, `) the match's fix appends to the call."""

    keyword: str


_COMPILE = {"torch.compile", "torch._dynamo.optimize"}


@resolved_only
@needles(names=_COMPILE)
def compile_backend(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`torch.compile(m, backend="openxla")` and `torch._dynamo.optimize("openxla")`."""
    assert isinstance(node, ast.Call)
    names = analysis.call_names(node, scope)
    if not names & _COMPILE:
        return
    backend = next((k.value for k in node.keywords if k.arg == "backend"), None)
    if backend is None and "torch._dynamo.optimize" in names and node.args:
        backend = node.args[0]
    text = string_value(backend)
    entry = entry_for(rule, text) if text is not None else None
    if entry is not None and backend is not None:
        yield Match(rule, backend, scope, entry, text or "", text or "", (("new", "neuron"),))


DetectorFn = Callable[[RuleSpec, Analysis, ast.AST, Scope], Iterator[Match]]


# `--target accelerator` keeps code that runs on CUDA and the CPU, where no `neuron` backend exists.
_PORTABLE_BACKEND = 'Pass `backend="neuron"` to `{old}` only when the current accelerator is `neuron`'


COMPILE = frozenset({"torch.compile", "torch.compiler.compile"})


_OPTIMIZE = frozenset({"torch._dynamo.optimize"})


SET_DEFAULT_BACKEND = frozenset(
    {"torch.compiler.set_default_backend", "torch._dynamo.backends.registry.set_default_backend"}
)


def _spreads(call: ast.Call) -> bool:
    """`f(*args)` / `f(**kwargs)`: any keyword may be hidden in there."""
    return any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args)


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
@needles(names=COMPILE | _OPTIMIZE)
def dynamic_true(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`torch.compile(..., dynamic=True)` and `torch._dynamo.optimize(..., dynamic=True)`."""
    if not _compile_call(analysis, node, scope, COMPILE | _OPTIMIZE) or _support(analysis).dynamic:
        return
    keyword = keyword_of(node, "dynamic")  # type: ignore[arg-type]  # _compile_call checked it is a Call
    if keyword is not None and isinstance(keyword.value, ast.Constant) and keyword.value.value is True:
        yield Match(
            rule, keyword.value, scope, MapEntry(old="dynamic=True", new="False"), "torch.compile", "dynamic=True"
        )


@resolved_only
@needles(names=COMPILE)  # the call, or a decorator (in the definition's span)
def dynamic_unset(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`torch.compile(...)` (or `@torch.compile`) that leaves `dynamic` to Dynamo's default, where
    the Neuron backend may compile it: a call that names a backend, in any module, or any call in
    a module that sets a default backend. A call with neither is NM507's finding, whose fix adds
    `dynamic=False` with the backend (one finding per call)."""
    found = list(_missing_keyword(rule, analysis, node, scope, "dynamic", "dynamic=False"))
    if found and (_names_backend(node) or _sets_default_backend(analysis)):
        yield from found


def _names_backend(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and keyword_of(node, "backend") is not None


@resolved_only
@needles(names=COMPILE)  # as dynamic_unset
def backend_unset(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`torch.compile(...)` with no `backend`, in a module that never sets a default backend; where
    `dynamic` is unset too, the fix passes `dynamic=False` with it, as the Neuron docs do (NM503's
    advice, which it leaves to this finding on such a call)."""
    found = list(_missing_keyword(rule, analysis, node, scope, "backend", _BACKEND))
    if found and not _sets_default_backend(analysis):  # walk the module only when it matters
        for match in found:
            call = match.node if isinstance(match.node, ast.Call) else None
            keyword = _BACKEND if call is not None and keyword_of(call, "dynamic") else f"{_BACKEND}, dynamic=False"
            yield replace(match, detail=AddKeyword(keyword), values=(("keyword", keyword),))


_BACKEND = 'backend="neuron"'


def _missing_keyword(
    rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope, name: str, keyword: str
) -> Iterator[Match]:
    if isinstance(node, ast.Call):
        if _compile_call(analysis, node, scope) and keyword_of(node, name) is None and not _spreads(node):
            yield Match(
                rule,
                node,
                scope,
                _keyword_entry(name),
                "torch.compile",
                dotted(node.func) or "torch.compile",
                detail=AddKeyword(keyword),
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
            detail=AddKeyword(keyword),
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
@needles(names=COMPILE)
def compile_mode(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`torch.compile(..., mode="max-autotune")`: a mode the backend ignores."""
    if not _compile_call(analysis, node, scope):
        return
    keyword = keyword_of(node, "mode")  # type: ignore[arg-type]  # _compile_call checked it is a Call
    mode = string_value(keyword.value) if keyword is not None else None
    if keyword is not None and mode is not None and mode not in _support(analysis).modes:
        yield Match(rule, keyword, scope, MapEntry(old=mode, fix="remove_keyword"), "torch.compile", mode)


@resolved_only
@needles(names=COMPILE)
def compile_options(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """Keys of `torch.compile(..., options={...})` that the Neuron backend does not read."""
    if not _compile_call(analysis, node, scope):
        return
    keyword = keyword_of(node, "options")  # type: ignore[arg-type]  # _compile_call checked it is a Call
    known = _support(analysis).options
    for key_node, key in _option_keys(analysis, keyword.value if keyword else None, scope):
        if key not in known:
            values = (("known", ", ".join(f"`{k}`" for k in known)),)
            yield Match(rule, key_node, scope, MapEntry(old=key), "torch.compile", key, values)


def _option_keys(analysis: Analysis, value: ast.AST | None, scope: Scope) -> Iterator[tuple[ast.AST, str]]:
    """String keys of a dict literal or of `dict(key=...)`."""
    if isinstance(value, ast.Dict):
        for key in value.keys:
            text = string_value(key)
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
@needles(names=COMPILE | _OPTIMIZE | SET_DEFAULT_BACKEND)
def cuda_backend(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`backend="inductor"` / `"cudagraphs"` in torch.compile, `_dynamo.optimize` or `set_default_backend`."""
    assert isinstance(node, ast.Call)
    names = analysis.call_names(node, scope)
    backend: ast.AST | None = None
    if names & COMPILE:
        keyword = keyword_of(node, "backend")
        backend = keyword.value if keyword else None
    elif names & (_OPTIMIZE | SET_DEFAULT_BACKEND):
        keyword = keyword_of(node, "backend")
        backend = keyword.value if keyword else node.args[0] if node.args else None
    text = string_value(backend)
    entry = next((e for e in rule.maps if e.old == text), None) if text is not None else None
    if entry is not None and backend is not None:
        yield Match(rule, backend, scope, entry, text or "", text or "", (("new", "neuron"),))


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def remove_keyword(ctx: FixContext, match: Match) -> Plan | None:
    """Delete the matched keyword argument and the comma that joins it to its neighbour."""
    keyword = match.node
    call = ctx.analysis.parent(keyword)
    if not isinstance(keyword, ast.keyword) or not isinstance(call, ast.Call):
        return None
    items: list[ast.expr | ast.keyword] = sorted([*call.args, *call.keywords], key=lambda n: (n.lineno, n.col_offset))
    start, end = ctx.src.node_span(keyword)
    position = next(i for i, item in enumerate(items) if item is keyword)
    if position > 0:
        start = ctx.src.node_span(items[position - 1])[1]
    elif len(items) > 1:
        end = ctx.src.node_span(items[1])[0]
    if "#" in ctx.src.text[start:end]:
        return None  # a comment would go with it
    return Plan((Edit(start, end, ""),))


def add_keyword(ctx: FixContext, match: Match) -> Plan | None:
    """Append the keyword arguments of the match's `AddKeyword` (`a=1` or `a=1, b=2`) to a call,
    or call a bare decorator with them."""
    if not isinstance(match.detail, AddKeyword):
        return None
    keyword = match.detail.keyword
    node = match.node
    if not isinstance(node, ast.Call):
        return ctx.replace(node, f"{ctx.segment(node)}({keyword})")
    return Plan((appended(ctx, node, tuple(keyword.split(", "))),))


# torch_xla.compile's XLA-only arguments that change nothing a `torch.compile` user sees.
_COMPILE_DROPPED = ("name",)


def xla_compile(ctx: FixContext, match: Match) -> Plan | None:
    """`torch_xla.compile(fn, full_graph=b, name=n)` -> `torch.compile(fn, backend="neuron", dynamic=False, fullgraph=b)`."""
    call = matched_call(match)
    if call is None or len(call.args) != 1 or not plain_args(call):
        return None
    extra = []
    for keyword in call.keywords:
        if keyword.arg == "full_graph":
            if not _runs_backward(ctx, match, call.args[0]):
                extra.append(f", fullgraph={ctx.segment(keyword.value)}")
        elif keyword.arg not in _COMPILE_DROPPED and not is_default(match, keyword):
            return None  # `num_different_graphs_allowed` and the like: a human decides
    rendered = ctx.render('{torch}.compile({0}, backend="neuron", dynamic=False', match)
    if rendered is None:
        return None
    return ctx.replace(call, rendered[0] + "".join(extra) + ")", rendered[1])


def _runs_backward(ctx: FixContext, match: Match, fn: ast.expr) -> bool:
    """Whether `fn` is a function of this file that calls `.backward()`.

    torch_xla traced such a step into one graph; Dynamo with `fullgraph=True` raises at the
    backward call instead, so the fix leaves `fullgraph` out and lets Dynamo split the graph.
    """
    bindings = ctx.analysis.resolver.lookup(fn.id, match.scope) if isinstance(fn, ast.Name) else []
    node = bindings[0].node if len(bindings) == 1 else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"
        for n in ast.walk(node)
    )


DETECTORS: Mapping[str, tuple[tuple[type, ...], DetectorFn]] = MappingProxyType(
    {
        "compile_backend": ((ast.Call,), compile_backend),
        "compile_dynamic_true": ((ast.Call,), dynamic_true),
        "compile_dynamic_unset": ((ast.Call, *_DEFINITIONS), dynamic_unset),
        "compile_backend_unset": ((ast.Call, *_DEFINITIONS), backend_unset),
        "compile_mode": ((ast.Call,), compile_mode),
        "compile_options": ((ast.Call,), compile_options),
        "compile_cuda_backend": ((ast.Call,), cuda_backend),
    }
)


FIXES: Mapping[str, FixFn] = MappingProxyType(
    {
        "remove_keyword": remove_keyword,
        "add_keyword": add_keyword,
        "xla_compile": xla_compile,
    }
)
