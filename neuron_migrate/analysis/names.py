"""Qualified-name resolution: which API does an expression refer to?

A light, flow-insensitive resolver over the stdlib `ast`. It follows Python's scoping rules
(function scopes, class scopes that nested functions cannot see, `global`/`nonlocal`,
comprehensions) and records, for every name, each way it is bound: an import (with the dotted
module path it brings in), a plain alias of another resolvable name, or a local definition.
Every import binding is a candidate, so `try: import torch_xla.core.xla_model as xm` /
`except ImportError: xm = None` still resolves `xm.mark_step` to torch_xla, while a name
that is only ever defined locally resolves to nothing.
"""

from __future__ import annotations

import ast
import builtins
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

_FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
BUILTINS = frozenset(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__", "__loader__", "__path__"}


@dataclass(frozen=True)
class Binding:
    """One way a name is bound in a scope."""

    kind: str  # "import", "alias", "local", or "star" (a known API name from a star import)
    target: str = ""  # dotted path for imports; for aliases, the dotted source expression
    node: ast.AST | None = None  # the statement that binds the name
    # where an alias's source expression is evaluated (None: the scope that looks it up), weakly:
    # the binding is in that scope's own table, and a cycle would keep the tree from being freed
    # by reference counting (as the analysis's parent table avoids one); the resolver holds every scope
    scope: weakref.ReferenceType[Scope] | None = field(default=None, compare=False, repr=False)


@dataclass(eq=False)
class Scope:
    """A namespace: module, class, function, lambda or comprehension."""

    node: ast.AST
    parent: Scope | None
    is_class: bool = False
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    globals_: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)
    loads: dict[str, int] = field(default_factory=dict)
    stars: list[tuple[str, ast.ImportFrom]] = field(default_factory=list)  # `from m import *`

    def bind(self, name: str, binding: Binding) -> None:
        self.bindings.setdefault(name, []).append(binding)


def dotted(node: ast.AST) -> str | None:
    """`a.b.c` for a chain of Attribute nodes ending in a Name; else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


class _Collector(ast.NodeVisitor):
    """Builds the scope tree and records every binding and every load."""

    def visit(self, node: ast.AST) -> None:
        _VISITS.get(type(node), _Collector.generic_visit)(self, node)

    def generic_visit(self, node: ast.AST) -> None:
        visits = _VISITS
        for name in CHILD_FIELDS.get(type(node), node._fields):  # no ctx: visit_Name reads it itself
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        visits.get(type(item), _Collector.generic_visit)(self, item)
            elif isinstance(value, ast.AST):
                visits.get(type(value), _Collector.generic_visit)(self, value)

    def __init__(self, module: ast.Module) -> None:
        self.module_scope = Scope(module, None)
        self.scope = self.module_scope
        self.scope_of: dict[ast.AST, Scope] = {module: self.module_scope}
        self.strings: dict[int, ast.Constant] = {}  # binding node id -> the string it binds

    # -- scopes -------------------------------------------------------------------------
    def _enter(self, node: ast.AST, is_class: bool = False) -> Scope:
        scope = Scope(node, self.scope, is_class=is_class)
        self.scope_of[node] = scope
        return scope

    def _run_in(self, scope: Scope, nodes: Sequence[ast.AST]) -> None:
        outer, self.scope = self.scope, scope
        for node in nodes:
            self.visit(node)
        self.scope = outer

    def _binding_scope(self, name: str) -> Scope:
        if name in self.scope.globals_:
            return self.module_scope
        return self.scope

    def _bind(self, name: str, binding: Binding) -> None:
        self._binding_scope(name).bind(name, binding)

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        pairs = [
            *zip(positional[len(positional) - len(args.defaults) :], args.defaults),
            *zip(args.kwonlyargs, args.kw_defaults),
        ]
        self.strings.update((id(a), d) for a, d in pairs if isinstance(d, ast.Constant) and isinstance(d.value, str))
        for default in [*args.defaults, *[d for d in args.kw_defaults if d is not None]]:
            self.visit(default)
        if not isinstance(node, ast.Lambda):
            for decorator in node.decorator_list:
                self.visit(decorator)
            if node.returns is not None:
                self.visit(node.returns)
            self._bind(node.name, Binding("local", node=node))
        scope = self._enter(node)
        all_args = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        all_args += [a for a in (args.vararg, args.kwarg) if a is not None]
        for arg in all_args:
            scope.bind(arg.arg, Binding("local", node=arg))
            if arg.annotation is not None:
                self.visit(arg.annotation)
        body = node.body if isinstance(node.body, list) else [node.body]
        self._run_in(scope, body)

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function
    visit_Lambda = _visit_function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expr in [*node.decorator_list, *node.bases, *[k.value for k in node.keywords]]:
            self.visit(expr)
        self._bind(node.name, Binding("local", node=node))
        self._run_in(self._enter(node, is_class=True), node.body)

    def _visit_comprehension(self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp) -> None:
        generators = node.generators
        self.visit(generators[0].iter)  # evaluated in the enclosing scope
        scope = self._enter(node)
        rest: list[ast.AST] = []
        for index, gen in enumerate(generators):
            rest.append(gen.target)
            if index:
                rest.append(gen.iter)
            rest.extend(gen.ifs)
        if isinstance(node, ast.DictComp):
            rest.extend([node.key, node.value])
        else:
            rest.append(node.elt)
        self._run_in(scope, rest)

    visit_ListComp = _visit_comprehension
    visit_SetComp = _visit_comprehension
    visit_DictComp = _visit_comprehension
    visit_GeneratorExp = _visit_comprehension

    # -- bindings -----------------------------------------------------------------------
    def visit_Global(self, node: ast.Global) -> None:
        self.scope.globals_.update(node.names)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.scope.nonlocals.update(node.names)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:
                self._bind(alias.asname, Binding("import", alias.name, node))
            else:
                head = alias.name.split(".")[0]
                self._bind(head, Binding("import", head, node))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name == "*":
                if node.module and not node.level:
                    self.scope.stars.append((node.module, node))
                continue
            name = alias.asname or alias.name
            if node.level or not node.module:
                self._bind(name, Binding("local", node=node))
            else:
                self._bind(name, Binding("import", f"{node.module}.{alias.name}", node))

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        value = node.value
        if (
            len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(value, ast.Constant)
            and isinstance(value.value, str)
        ):
            self.strings[id(node.targets[0])] = value
        source = dotted(node.value)
        for target in node.targets:
            if source and isinstance(target, ast.Name):
                self._bind(target.id, Binding("alias", source, node, weakref.ref(self.scope)))
            else:
                self.visit(target)

    # The commonest expressions, without the generic field loop (same children, same order).
    def visit_Attribute(self, node: ast.Attribute) -> None:
        value = node.value
        _VISITS.get(type(value), _Collector.generic_visit)(self, value)

    def visit_Call(self, node: ast.Call) -> None:
        visits = _VISITS
        func = node.func
        visits.get(type(func), _Collector.generic_visit)(self, func)
        for arg in node.args:
            visits.get(type(arg), _Collector.generic_visit)(self, arg)
        for keyword in node.keywords:
            value = keyword.value
            visits.get(type(value), _Collector.generic_visit)(self, value)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Del):  # `del xm` reads the binding it removes: an import it names stays
            self.scope.loads[node.id] = self.scope.loads.get(node.id, 0) + 1
            self._bind(node.id, Binding("local", node=node))
        elif isinstance(node.ctx, ast.Store):
            self._bind(node.id, Binding("local", node=node))
        else:
            self.scope.loads[node.id] = self.scope.loads.get(node.id, 0) + 1

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self._bind(node.name, Binding("local", node=node))
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name:
            self._bind(node.name, Binding("local", node=node))
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name:
            self._bind(node.name, Binding("local", node=node))

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        if node.rest:
            self._bind(node.rest, Binding("local", node=node))
        self.generic_visit(node)


def _node_classes(base: type[ast.AST] = ast.AST) -> Iterator[type[ast.AST]]:
    for cls in base.__subclasses__():
        yield cls
        yield from _node_classes(cls)


# Fields that never hold a node (identifiers, numbers, flags), and the shared ctx markers.
_SCALAR_FIELDS = frozenset(
    {
        "ctx",
        "id",
        "attr",
        "arg",
        "name",
        "asname",
        "module",
        "level",
        "kind",
        "type_comment",
        "conversion",
        "is_async",
        "simple",
        "tag",
        "rest",
    }
)
# For each node class, the fields that may hold child nodes, in `ast.iter_child_nodes` order.
CHILD_FIELDS: Mapping[type, tuple[str, ...]] = MappingProxyType(
    {cls: tuple(f for f in cls._fields if f not in _SCALAR_FIELDS) for cls in _node_classes()}
)


# The collector's method for each node class, looked up once rather than by name per node.
_VISITS: Mapping[type, Callable[[_Collector, Any], None]] = MappingProxyType(
    {
        **{
            cls: vars(_Collector)["visit_" + cls.__name__]
            for cls in _node_classes()
            if "visit_" + cls.__name__ in vars(_Collector)
        },
        ast.Constant: lambda collector, node: None,  # a leaf
    }
)


# Bounds of the alias walk, per module: how many bindings lists it resolves, how deep an alias
# of an alias of ... it follows, and how many qualified names one name may stand for. Real code
# stays far below them; they keep a hostile file (a name rebound thousands of times, or a chain
# of thousands of aliases) linear in the number of bindings.
MAX_ALIAS_STEPS = 200_000
MAX_ALIAS_DEPTH = 64
MAX_NAMES_PER_BINDING = 64


class Resolver:
    """Answers "which dotted names can this expression mean?" for one module."""

    def __init__(self, module: ast.Module, known: Callable[[str], bool] | None = None) -> None:
        """`known` says which qualified names a star import may provide (the rules' API names)."""
        collector = _Collector(module)
        self._known = known
        self._star_bindings: dict[str, list[Binding]] = {}
        collector.visit(module)
        self.module_scope = collector.module_scope
        self.scope_of = collector.scope_of
        # `X = "s"` targets and parameters defaulting to a string: binding node id -> the string
        self.string_definitions: Mapping[int, ast.Constant] = collector.strings
        # What each name's bindings stand for, resolved once per bindings list (by identity: the
        # lists live in the scopes). A list met again while it is being resolved (`x = x.y`)
        # contributes nothing, which cuts every cycle (without it a few rebinds of one name make
        # the resolution grow exponentially).
        self._by_bindings: dict[int, frozenset[str]] = {}
        self._active: set[int] = set()
        self._steps = 0

    def scope_for(self, node: ast.AST) -> Scope:
        """The scope that owns `node` (the node itself must be a scope node or the module)."""
        return self.scope_of[node]

    def lookup(self, name: str, scope: Scope) -> list[Binding]:
        """The bindings `name` can refer to when loaded in `scope`."""
        if name in scope.globals_:
            return self.module_scope.bindings.get(name, [])
        current: Scope | None = scope
        first = True
        while current is not None:
            visible = first or not current.is_class
            if visible and name in current.bindings and name not in current.nonlocals:
                return current.bindings[name]
            first = False
            current = current.parent
        return self._star_lookup(name)

    def _star_lookup(self, name: str) -> list[Binding]:
        """A name no scope binds, resolved through `from torch_xla... import *` against known API."""
        if self._known is None or name in BUILTINS or not self.module_scope.stars:
            return []
        found = self._star_bindings.get(name)
        if found is None:
            found = self._star_bindings[name] = [
                Binding("star", f"{module}.{name}", node)
                for module, node in self.module_scope.stars
                if self._known(f"{module}.{name}")
            ]
        return found

    def qualified_names(self, node: ast.AST, scope: Scope, _depth: int = 0) -> set[str]:
        """Every dotted name a Name/Attribute chain may refer to (empty when local-only)."""
        head = node
        while type(head) is ast.Attribute:
            head = head.value
        if type(head) is not ast.Name:
            return set()
        bases = self._names_of(self.lookup(head.id, scope), scope)
        if not bases:
            return set()  # a local name: no need to spell the chain out
        rest = (dotted(node) or "").partition(".")[2]
        return {f"{base}.{rest}" if rest else base for base in bases}

    def resolve_dotted(self, chain: str, scope: Scope, _depth: int = 0) -> set[str]:
        head, _, rest = chain.partition(".")
        bases = self._names_of(self.lookup(head, scope), scope)
        return {f"{base}.{rest}" if rest else base for base in bases}

    def _names_of(self, bindings: list[Binding], scope: Scope) -> frozenset[str]:
        """Every dotted name one of `bindings` may stand for (memoised, bounded)."""
        if not bindings:
            return frozenset()
        key = id(bindings)
        known = self._by_bindings.get(key)
        if known is not None:
            return known
        if key in self._active or len(self._active) >= MAX_ALIAS_DEPTH or self._steps >= MAX_ALIAS_STEPS:
            return frozenset()  # a cycle, an alias chain too deep, or the module's budget spent
        self._steps += 1
        self._active.add(key)
        try:
            names: set[str] = set()
            for binding in bindings:
                names.update(self._binding_targets(binding, scope))
        finally:
            self._active.discard(key)
        known = self._by_bindings[key] = frozenset(sorted(names)[:MAX_NAMES_PER_BINDING])
        return known

    def _binding_targets(self, binding: Binding, scope: Scope) -> set[str]:
        if binding.kind in ("import", "star"):
            return {binding.target}
        if binding.kind == "alias":
            evaluated = binding.scope() if binding.scope is not None else None
            return self.resolve_dotted(binding.target, evaluated or scope)
        return set()

    def is_loaded(self, name: str) -> bool:
        """Whether `name` is read anywhere in the module (any scope)."""
        return any(name in scope.loads for scope in self.scope_of.values())

    def is_loaded_unbound(self, name: str) -> bool:
        """Whether `name` is read in some scope where no binding of this module defines it.

        Such a read means a global from elsewhere (a builtin, `exec`, an injected name), so a new
        module-level binding of `name` would change what it reads. A read of a local binding
        (an `import torch` inside one function) is not one.
        """
        return any(name in scope.loads and not self.lookup(name, scope) for scope in self.scope_of.values())
