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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

_FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


@dataclass(frozen=True)
class Binding:
    """One way a name is bound in a scope."""

    kind: str  # "import", "alias" or "local"
    target: str = ""  # dotted path for imports; for aliases, the dotted source expression
    node: ast.AST | None = None  # the statement that binds the name


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

    def __init__(self, module: ast.Module) -> None:
        self.module_scope = Scope(module, None)
        self.scope = self.module_scope
        self.scope_of: dict[ast.AST, Scope] = {module: self.module_scope}

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

    def _visit_comprehension(self, node: ast.AST) -> None:
        generators = node.generators  # type: ignore[attr-defined]
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
            rest.append(node.elt)  # type: ignore[attr-defined]
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
                continue
            name = alias.asname or alias.name
            if node.level or not node.module:
                self._bind(name, Binding("local", node=node))
            else:
                self._bind(name, Binding("import", f"{node.module}.{alias.name}", node))

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        source = dotted(node.value)
        for target in node.targets:
            if source and isinstance(target, ast.Name):
                self._bind(target.id, Binding("alias", source, node))
            else:
                self.visit(target)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
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


class Resolver:
    """Answers "which dotted names can this expression mean?" for one module."""

    def __init__(self, module: ast.Module) -> None:
        collector = _Collector(module)
        collector.visit(module)
        self.module_scope = collector.module_scope
        self.scope_of = collector.scope_of
        # resolve_dotted's answers: a name rebound as an alias many times (`x = x.y` in a
        # loop of layers) otherwise made the alias walk exponential in the chain depth.
        self._resolved: dict[tuple[str, Scope, int], frozenset[str]] = {}

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
            if (first or not current.is_class) and name in current.bindings:
                if name not in current.nonlocals:
                    return current.bindings[name]
            first = False
            current = current.parent
        return []

    def qualified_names(self, node: ast.AST, scope: Scope, _depth: int = 0) -> set[str]:
        """Every dotted name a Name/Attribute chain may refer to (empty when local-only)."""
        chain = dotted(node)
        if chain is None:
            return set()
        return self.resolve_dotted(chain, scope, _depth)

    def resolve_dotted(self, chain: str, scope: Scope, _depth: int = 0) -> set[str]:
        key = (chain, scope, _depth)
        known = self._resolved.get(key)
        if known is None:
            head, _, rest = chain.partition(".")
            result: set[str] = set()
            for binding in self.lookup(head, scope):
                for base in self._binding_targets(binding, scope, _depth):
                    result.add(f"{base}.{rest}" if rest else base)
            known = self._resolved[key] = frozenset(result)
        return set(known)

    def _binding_targets(self, binding: Binding, scope: Scope, depth: int) -> Iterator[str]:
        if binding.kind == "import":
            yield binding.target
        elif binding.kind == "alias" and depth < 8:
            yield from self.resolve_dotted(binding.target, scope, depth + 1)

    def is_loaded(self, name: str) -> bool:
        """Whether `name` is read anywhere in the module (any scope)."""
        return any(name in scope.loads for scope in self.scope_of.values())
