"""APIs and dtypes the TorchNeuron beta lacks (NM401-NM413), where a qualified name is not enough.

Module families (`torch.sparse`, `torch.func`, ...) are plain `[[map]]` data; what is here needs
an import statement, a keyword value or a method name. Method calls on arbitrary objects
(`.double()`, `.to_sparse()`) cannot be resolved by name, so they are reported only in modules
that import torch, and never when the receiver is an imported module.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import replace
from types import MappingProxyType

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.index import needles, resolved_only, resolved_only_on
from neuron_migrate.analysis.names import Scope, dotted
from neuron_migrate.analysis.values import Edit, Match, Plan
from neuron_migrate.catalogue import MapEntry, RuleSpec
from neuron_migrate.checks.tensor_places import on_cpu
from neuron_migrate.checks.toolkit import DetectorFn, FixContext, FixFn
from neuron_migrate.checks.toolkit_calls import keyword_of

FLOAT64 = frozenset({"torch.float64", "torch.double"})
_NUMPY_FLOAT64 = frozenset({"numpy.float64", "numpy.double", "numpy.float_"})


_SPARSE_LAYOUTS = frozenset(f"torch.sparse_{n}" for n in ("coo", "csr", "csc", "bsr", "bsc"))


_TO_SPARSE = frozenset(
    {"to_sparse", "to_sparse_coo", "to_sparse_csr", "to_sparse_csc", "to_sparse_bsr", "to_sparse_bsc"}
)


_SPARSE_GRAD_OWNERS = {
    "torch.nn.Embedding": "torch.nn.Embedding",
    "torch.nn.modules.sparse.Embedding": "torch.nn.Embedding",
    "torch.nn.EmbeddingBag": "torch.nn.EmbeddingBag",
    "torch.nn.modules.sparse.EmbeddingBag": "torch.nn.EmbeddingBag",
    "torch.nn.functional.embedding": "torch.nn.functional.embedding",
    "torch.nn.functional.embedding_bag": "torch.nn.functional.embedding_bag",
}


_NUMPY_CASTS = frozenset({"astype", "view"})


# Methods whose result no longer has the dtype `torch.from_numpy` gave it.
_CASTS = frozenset({"float", "half", "bfloat16", "long", "int", "short", "bool", "byte", "char"})


_FROM_NUMPY = frozenset({"torch.from_numpy"})
_TENSOR_FROM_DATA = frozenset({"torch.tensor", "torch.as_tensor", "torch.asarray"})


# NumPy functions whose result is an integer array.
_INTEGER_FACTORIES = frozenset(
    {
        "numpy.random.randint",
        "numpy.random.permutation",
        "numpy.random.random_integers",
        "numpy.argsort",
        "numpy.argmax",
        "numpy.argmin",
        "numpy.nonzero",
        "numpy.bincount",
    }
)


# NumPy functions whose result is float64 unless a dtype is given.
_FLOAT64_FACTORIES = frozenset(
    f"numpy.{n}"
    for n in ("zeros", "ones", "empty", "eye", "identity", "linspace", "logspace", "geomspace", "loadtxt", "genfromtxt")
)


def _is_true(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def imports_torch(analysis: Analysis) -> bool:
    """Whether any scope of the module imports torch (or a torch submodule)."""
    for scope in analysis.resolver.scope_of.values():
        for bindings in scope.bindings.values():
            if any(b.kind == "import" and (b.target == "torch" or b.target.startswith("torch.")) for b in bindings):
                return True
    return False


def _receiver_is_module(analysis: Analysis, func: ast.Attribute, scope: Scope) -> bool:
    """`np.double(...)`: the method belongs to an imported name, not to a tensor or module object."""
    return bool(analysis.qualified(func.value, scope))


def _best_entry(rule: RuleSpec, name: str) -> MapEntry | None:
    """The rule's entry for `name`: exact, else the longest `prefix` entry above it."""
    best: MapEntry | None = None
    for entry in rule.maps:
        if entry.old == name:
            return entry
        if entry.prefix and name.startswith(entry.old + ".") and (best is None or len(entry.old) > len(best.old)):
            best = entry
    return best


# -- imports (torchao, MXFP8) -------------------------------------------------------------------
def _imported_modules(node: ast.Import | ast.ImportFrom) -> list[tuple[str, str]]:
    """(fully qualified module or name, the module as written) for each name an import brings in."""
    if isinstance(node, ast.Import):
        return [(alias.name, alias.name) for alias in node.names]
    if node.level or not node.module:
        return []
    names = [(f"{node.module}.{a.name}", node.module) for a in node.names if a.name != "*"]
    return names + [(node.module, node.module)]


@needles(maps="words")  # an import spells each module and name it brings in
def module_import(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """An import of a module the rule lists; one match per statement, for its most specific entry."""
    assert isinstance(node, (ast.Import, ast.ImportFrom))
    found: list[tuple[int, MapEntry, str, str]] = []
    for qualified, written in _imported_modules(node):
        entry = _best_entry(rule, qualified)
        if entry is not None:
            found.append((len(entry.old), entry, qualified, written))
    if found:
        _, entry, qualified, module = max(found, key=lambda item: item[0])
        written = module if _best_entry(rule, module) is entry else qualified
        yield Match(rule, node, scope, entry, qualified, written)


# -- sparse tensors ------------------------------------------------------------------------------
@needles("layout", "sparse", "sparse_grad", *_TO_SPARSE, names={f"torch.Tensor.{n}" for n in _TO_SPARSE})
def sparse_use(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`.to_sparse*()`, `layout=torch.sparse_*`, `Embedding(sparse=True)`, `gather(sparse_grad=True)`."""
    assert isinstance(node, ast.Call)
    names = analysis.call_names(node, scope)
    func = node.func
    layout = keyword_of(node, "layout")
    if layout is not None:
        found = sorted(analysis.qualified(layout.value, scope) & _SPARSE_LAYOUTS)
        if found:
            yield _match(rule, layout.value, scope, found[0], dotted(layout.value) or found[0])
    attr = (
        func.attr
        if isinstance(func, ast.Attribute)
        and func.attr in ("gather", *_TO_SPARSE)
        and not _receiver_is_module(analysis, func, scope)
        else None
    )
    tensor_method = sorted(n for n in names if n.startswith("torch.Tensor.") and n.rsplit(".", 1)[1] in _TO_SPARSE)
    if tensor_method or (attr in _TO_SPARSE and imports_torch(analysis)):
        name = tensor_method[0].rsplit(".", 1)[1] if tensor_method else attr
        yield _match(rule, node, scope, f"torch.Tensor.{name}", f".{name}()")
    owner = next((_SPARSE_GRAD_OWNERS[n] for n in sorted(names) if n in _SPARSE_GRAD_OWNERS), None)
    sparse = keyword_of(node, "sparse")
    if owner is not None and sparse is not None and _is_true(sparse.value):
        yield _match(rule, sparse, scope, f"{owner}(sparse=True)", "sparse=True")
    grad = keyword_of(node, "sparse_grad")
    gather = "torch.gather" in names or (attr == "gather" and imports_torch(analysis))
    if grad is not None and _is_true(grad.value) and gather:
        yield _match(rule, grad, scope, "torch.gather(sparse_grad=True)", "sparse_grad=True")


def _match(rule: RuleSpec, node: ast.AST, scope: Scope, qualified: str, written: str, **fix: object) -> Match:
    """A match for `qualified`, with the message and severity of the rule's entry for it, if any."""
    listed = next((e for e in rule.maps if e.old == qualified), None)
    entry = replace(listed, **fix) if listed is not None else MapEntry(old=qualified, **fix)  # type: ignore[arg-type]  # fix: MapEntry's fields
    return Match(rule, node, scope, entry, qualified, written)


# -- module attributes, read or written --------------------------------------------------------
@resolved_only
@needles(maps="names")
def module_attribute(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """The whole chain below a listed module, also as an assignment target (`config.x = 1`)."""
    parent = analysis.parent(node)
    if isinstance(parent, ast.Attribute) and parent.value is node:
        return  # the outer chain is the match
    if isinstance(parent, ast.Call) and parent.func is node:
        return  # report the call once, at the call
    target = node.func if isinstance(node, ast.Call) else node
    written = dotted(target)
    if written is None:
        return
    for name in sorted(analysis.qualified(target, scope)):
        entry = _best_entry(rule, name)
        if entry is not None:
            yield Match(rule, node, scope, entry, name, written)
            return


# -- float64 -------------------------------------------------------------------------------------
@resolved_only_on(ast.Name, ast.Attribute)  # a name or chain must resolve to `torch.DoubleTensor`
@needles("float", "DoubleTensor", names=FLOAT64)  # a float64 value, or the builtin `float`
def float64_dtype(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`dtype=torch.float64`, `.to(torch.double)`, `.type(...)`, `set_default_dtype(...)`, `torch.DoubleTensor`.

    Not on the CPU (`device="cpu"`, `x.cpu().double()`), where float64 stays float64, and not in
    lookup tables (`{"DoubleTensor": torch.DoubleTensor}`), which create no tensor.
    """
    if isinstance(node, ast.Call):
        slots = _dtype_slots(analysis, node, scope)
        if not slots or on_cpu(analysis, node, scope):
            return
        for value in slots:
            match = _float64_value(rule, analysis, node, value, scope)
            if match is not None:
                yield match
    elif (
        _last_name(node) == "DoubleTensor"
        and not _in_table(analysis, node)
        and "torch.DoubleTensor" in analysis.qualified(node, scope)
    ):
        written = dotted(node) or "torch.DoubleTensor"
        new = (
            "{torch}.FloatTensor" if isinstance(node, ast.Attribute) or _imported_name(analysis, node, scope) else None
        )
        yield _match(rule, node, scope, "torch.DoubleTensor", written, new=new)


def _in_table(analysis: Analysis, node: ast.AST) -> bool:
    """A value in a dict literal, or in a list/tuple/set inside one: data, not a tensor."""
    parent = analysis.parent(node)
    if isinstance(parent, (ast.List, ast.Tuple, ast.Set)):
        parent = analysis.parent(parent)
    return isinstance(parent, ast.Dict)


def _last_name(node: ast.AST) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None


def _imported_name(analysis: Analysis, node: ast.AST, scope: Scope) -> bool:
    """`float64` bound only by `from torch import float64 [as ...]`, not by an assignment."""
    bindings = analysis.resolver.lookup(node.id, scope) if isinstance(node, ast.Name) else []
    return bool(bindings) and all(b.kind == "import" for b in bindings)


def _dtype_slots(analysis: Analysis, call: ast.Call, scope: Scope) -> list[ast.expr]:
    """The argument expressions of `call` that hold a dtype."""
    slots = [k.value for k in call.keywords if k.arg == "dtype"]
    func = call.func
    method = (
        isinstance(func, ast.Attribute)
        and func.attr in ("to", "type")
        and not _receiver_is_module(analysis, func, scope)
    )
    if call.args and (method or analysis.call_names(call, scope) & {"torch.set_default_dtype"}):
        slots.append(call.args[0])
    return slots


def _float64_value(rule: RuleSpec, analysis: Analysis, call: ast.Call, value: ast.expr, scope: Scope) -> Match | None:
    names = analysis.qualified(value, scope)
    written = dotted(value) or ""
    if names & FLOAT64:
        direct = written.endswith((".float64", ".double")) or _imported_name(analysis, value, scope)
        return _match(rule, value, scope, "torch.float64", written, new="{torch}.float32" if direct else None)
    is_builtin_float = (
        isinstance(value, ast.Name) and value.id == "float" and not analysis.resolver.lookup("float", scope)
    )
    torch_call = any(n == "torch" or n.startswith("torch.") for n in analysis.call_names(call, scope))
    parent = analysis.parent(value)
    if is_builtin_float and torch_call and isinstance(parent, ast.keyword):
        return _match(rule, value, scope, "torch.float64", "float", new="{torch}.float32")
    return None


@needles("double")
def double_method(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`x.double()` with no arguments, on something that is not an imported module, in torch code."""
    assert isinstance(node, ast.Call)
    func = node.func
    if not isinstance(func, ast.Attribute) or func.attr != "double" or node.args or node.keywords:
        return
    if _receiver_is_module(analysis, func, scope) or not imports_torch(analysis) or on_cpu(analysis, node, scope):
        return
    yield Match(
        rule,
        node,
        scope,
        MapEntry(old="double", fix="rename_method"),
        "torch.Tensor.double",
        ".double()",
        (("new", "float"),),
    )


# -- NumPy arrays, which default to float64 ------------------------------------------------------------
@resolved_only
@needles(names=_FROM_NUMPY | _TENSOR_FROM_DATA)
def numpy_float64(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`torch.from_numpy(a)` and `torch.tensor(np_array)` that probably give a float64 tensor."""
    assert isinstance(node, ast.Call)
    names = analysis.call_names(node, scope)
    wanted = names & (_FROM_NUMPY | _TENSOR_FROM_DATA)
    if not wanted or not node.args or keyword_of(node, "dtype") is not None or _cast_after(analysis, node, scope):
        return
    made = _numpy_dtype(analysis, _numpy_source(analysis, node.args[0], scope), scope)
    written = f"{dotted(node.func) or 'torch'}(...)"
    if names & _FROM_NUMPY and made is not False:
        yield _match(rule, node, scope, "torch.from_numpy", written)
    elif names & _TENSOR_FROM_DATA and made:
        yield _match(rule, node, scope, min(names & _TENSOR_FROM_DATA), written)


def _cast_after(analysis: Analysis, call: ast.Call, scope: Scope) -> bool:
    """`torch.from_numpy(a).float()` or `.to(torch.float32)`: the float64 never reaches the device."""
    attribute = analysis.parent(call)
    outer = analysis.parent(attribute) if isinstance(attribute, ast.Attribute) else None
    if not isinstance(attribute, ast.Attribute) or not isinstance(outer, ast.Call) or outer.func is not attribute:
        return False
    if attribute.attr in _CASTS:
        return True
    if attribute.attr in ("to", "type", "view"):
        values = [*outer.args, *(k.value for k in outer.keywords if k.arg == "dtype")]
        return any(_other_torch_dtype(analysis.qualified(v, scope)) for v in values)
    return False


def _other_torch_dtype(names: set[str]) -> bool:
    """Whether `names` hold a torch dtype other than float64 (`torch.float32`, not `torch.Tensor`)."""
    return any(n.count(".") == 1 and n.startswith("torch.") and n not in FLOAT64 and n[6:7].islower() for n in names)


def _numpy_source(analysis: Analysis, node: ast.AST, scope: Scope) -> ast.Call | None:
    """The NumPy call that produced `node`: the node itself, or the value of a name's only assignment."""
    if isinstance(node, ast.Call):
        return node if _numpy_function(analysis, node, scope) else None
    if not isinstance(node, ast.Name):
        return None
    bindings = analysis.resolver.lookup(node.id, scope)
    if len(bindings) != 1 or bindings[0].kind != "local" or bindings[0].node is None:
        return None
    assign = analysis.parent(bindings[0].node)
    if (
        isinstance(assign, ast.Assign)
        and isinstance(assign.value, ast.Call)
        and _numpy_function(analysis, assign.value, scope)
    ):
        return assign.value
    return None


def _numpy_function(analysis: Analysis, call: ast.Call, scope: Scope) -> str | None:
    """The NumPy function `call` calls (`numpy.zeros`); `.astype` counts as its receiver's."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in _NUMPY_CASTS and call.args:
        return func.attr  # `a.astype(np.float32)`, `a.view(np.uint8)`: the dtype is the argument
    return next((n for n in sorted(analysis.call_names(call, scope)) if n.startswith("numpy.")), None)


def _numpy_dtype(analysis: Analysis, call: ast.Call | None, scope: Scope) -> bool | None:
    """True when a NumPy call makes float64, False when it names another dtype, None when unknown."""
    if call is None:
        return None
    func = call.func
    given = call.args[0] if isinstance(func, ast.Attribute) and func.attr in _NUMPY_CASTS and call.args else None
    keyword = keyword_of(call, "dtype")
    given = keyword.value if keyword is not None else given
    if given is not None:
        return _is_float64_spelling(analysis, given, scope)
    function = _numpy_function(analysis, call, scope) or ""
    if function in _INTEGER_FACTORIES:
        return False
    if function == "numpy.arange":
        return any(isinstance(n, ast.Constant) and isinstance(n.value, float) for a in call.args for n in ast.walk(a))
    if function in _FLOAT64_FACTORIES or function.startswith("numpy.random."):
        return True
    if function in ("numpy.array", "numpy.asarray") and call.args:
        return any(isinstance(n, ast.Constant) and isinstance(n.value, float) for n in ast.walk(call.args[0]))
    return None


def _is_float64_spelling(analysis: Analysis, node: ast.AST, scope: Scope) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in ("float64", "f8", "double", "d")
    if isinstance(node, ast.Name) and node.id == "float" and not analysis.resolver.lookup("float", scope):
        return True
    return bool(analysis.qualified(node, scope) & _NUMPY_FLOAT64)


def rename_method(ctx: FixContext, match: Match) -> Plan | None:
    """`x.double()` -> `x.float()`: only the method name changes."""
    call = match.node
    new = match.value("new")
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute) or new is None:
        return None
    end = ctx.src.node_span(call.func)[1]
    start = end - len(call.func.attr)
    if ctx.src.text[start:end] != call.func.attr:
        return None  # a line continuation or comment between the dot and the name
    return Plan((Edit(start, end, new),))


DETECTORS: Mapping[str, tuple[tuple[type, ...], DetectorFn]] = MappingProxyType(
    {
        "module_import": ((ast.Import, ast.ImportFrom), module_import),
        "module_attribute": ((ast.Attribute, ast.Name, ast.Call), module_attribute),
        "sparse_use": ((ast.Call,), sparse_use),
        "float64_dtype": ((ast.Call, ast.Attribute, ast.Name), float64_dtype),
        "double_method": ((ast.Call,), double_method),
        "numpy_float64": ((ast.Call,), numpy_float64),
    }
)


FIXES: Mapping[str, FixFn] = MappingProxyType(
    {
        "rename_method": rename_method,
    }
)
