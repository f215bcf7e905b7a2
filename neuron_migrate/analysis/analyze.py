"""One module's analysis: its text, tree, name resolver and parent links, and the facts that
detectors and fixes ask of it.

The walk that fills it (`analysis/walk.py`) and the rule index it walks with
(`analysis/index.py`) are beside it; the values it hands on are `analysis/values.py`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TypeVar, cast

from neuron_migrate.analysis.names import CHILD_FIELDS, Resolver, Scope
from neuron_migrate.analysis.source import SourceText
from neuron_migrate.analysis.values import Match, Plan
from neuron_migrate.catalogue import RuleSpec

T = TypeVar("T")
N = TypeVar("N", bound=ast.AST)
_MISSING = object()


class Analysis:
    """A parsed module with its resolver, parents and helpers for detectors and fixes.

    Parent links live here, in a table from each node to its parent: the stdlib nodes carry
    nothing of ours, and the table holds no reference cycle (nodes never point back at it), so a
    tree is freed by reference counting as soon as its file is done. The walk links the
    statements it visits; the statements it skips (`analysis/reach.py`) are linked on the first
    question about a node it has not linked, so every answer is the one a full walk gives.
    """

    def __init__(
        self,
        text: str,
        tree: ast.Module,
        target_version: str = "2.14",
        target: str = "neuron",
        known: Callable[[str], bool] | None = None,
    ) -> None:
        self.src = SourceText(text)
        self.target_version = target_version  # the TorchNeuron family whose compat data applies
        self.target = target  # "neuron" or "accelerator" (`--target`): what fixes write
        self.text = text
        self.tree = tree
        self.resolver = Resolver(tree, known)
        self.handled: set[int] = set()  # ids of chains already reported as part of a call
        self.import_rules: tuple[RuleSpec, ...] = ()  # enabled rules whose detector is an `import_rule`
        self._qualified: dict[tuple[int, int], set[str]] = {}
        self._facts: dict[Callable[[Analysis], object], object] = {}
        self._indent_unit: str | None = None
        self._all_nodes: list[ast.AST] | None = None
        self._nodes_of: dict[tuple[type, ...], list[ast.AST]] = {}
        self.fixes: Mapping[str, Callable[..., Plan | None]] = {}  # `fix = "..."` names, set by the engine
        self.parents: dict[ast.AST, ast.AST | None] = {tree: None}  # set by the walk; read through `parent`
        self.skipped: list[ast.stmt] = []  # statements the walk left out: their parts are linked lazily
        self._linked = 0  # how many of them are linked now

    # -- names --------------------------------------------------------------------------
    def qualified(self, node: ast.AST, scope: Scope) -> set[str]:
        """Every qualified name a Name/Attribute chain may stand for (memoised: several rules ask)."""
        key = (id(node), id(scope))
        found = self._qualified.get(key)
        if found is None:
            found = self._qualified[key] = self.resolver.qualified_names(node, scope)
        return found

    def call_names(self, call: ast.Call, scope: Scope) -> set[str]:
        """Every qualified name the callee may stand for (memoised by `qualified`)."""
        return self.qualified(call.func, scope)

    def fact(self, compute: Callable[[Analysis], T]) -> T:
        """A whole-module fact that several rules need: `compute(self)`, once per analysis.

        The fact is known by its function, so its type is the function's return type.
        """
        if compute not in self._facts:
            self._facts[compute] = compute(self)
        return cast("T", self._facts[compute])  # stored by `compute`, whose result is a T

    # -- tree -------------------------------------------------------------------------
    def nodes(self, *types: type[N]) -> list[N]:
        """Every node of the module that is an instance of one of `types`, in `ast.walk`'s order.

        The module is walked once per analysis; each set of types is filtered once. Checks ask
        this instead of walking the whole tree again.
        """
        found = self._nodes_of.get(types)
        if found is None:
            if self._all_nodes is None:
                self._all_nodes = breadth_first(self.tree)
            found = self._nodes_of[types] = [n for n in self._all_nodes if isinstance(n, types)]
        return cast("list[N]", found)  # each an instance of one of `types`: filtered so above

    @contextmanager
    def without_spreads(self, call: ast.Call) -> Iterator[None]:
        """`call` as if it passed no `*args` or `**kwargs`, to ask a fix whether they are what
        stopped it; the tree is restored after, and the facts computed meanwhile are dropped."""
        saved, facts, kinds, walked = (call.args, call.keywords), set(self._facts), set(self._nodes_of), self._all_nodes
        call.args = [a for a in call.args if not isinstance(a, ast.Starred)]
        call.keywords = [k for k in call.keywords if k.arg is not None]
        try:
            yield
        finally:
            call.args, call.keywords = saved
            for compute in set(self._facts) - facts:
                del self._facts[compute]
            for types in set(self._nodes_of) - kinds:
                del self._nodes_of[types]
            self._all_nodes = walked

    def parent(self, node: ast.AST) -> ast.AST | None:
        """The node whose child `node` is (None for the module, or a node of no analysed tree)."""
        found = self.parents.get(node, _MISSING)
        if found is _MISSING:
            if self._linked == len(self.skipped):
                return None
            self._link_skipped()
            found = self.parents.get(node)
        return cast("ast.AST | None", found)  # the table's values, or the default None

    def _link_skipped(self) -> None:
        """Set the parent links inside every statement the walk skipped (each statement once)."""
        parents = self.parents
        for stmt in self.skipped[self._linked :]:
            stack: list[ast.AST] = [stmt]
            while stack:
                node = stack.pop()
                for child in children(node):
                    parents[child] = node
                    stack.append(child)
        self._linked = len(self.skipped)

    def owner(self, node: ast.AST) -> ast.Module | ast.FunctionDef | ast.AsyncFunctionDef:
        """The function whose body holds `node`, or the module (a class body runs in it)."""
        current = self.parent(node)
        while current is not None and not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            current = self.parent(current)
        return current if current is not None else self.tree

    def is_expression_statement(self, node: ast.AST) -> bool:
        parent = self.parent(node)
        return isinstance(parent, ast.Expr) and parent.value is node

    def segment(self, node: ast.AST) -> str:
        return self.src.segment(node)

    def indent_unit(self) -> str:
        """The file's indentation step, read from its code (never from a docstring's text)."""
        if self._indent_unit is None:
            self._indent_unit = _indent_step(self.src, self.tree) or "    "
        return self._indent_unit


def children(node: ast.AST) -> list[ast.AST]:
    """`ast.iter_child_nodes(node)` as a list, less the shared `ctx` markers."""
    found: list[ast.AST] = []
    for name in CHILD_FIELDS.get(type(node), node._fields):
        value = getattr(node, name, None)
        if type(value) is list:
            for item in value:
                if isinstance(item, ast.AST):
                    found.append(item)
        elif isinstance(value, ast.AST):
            found.append(value)
    return found


def breadth_first(tree: ast.AST) -> list[ast.AST]:
    """Every node under `tree`, in `ast.walk`'s order, without the shared `ctx` markers."""
    found = [tree]
    index = 0
    while index < len(found):
        found.extend(children(found[index]))
        index += 1
    return found


def _indent_step(src: SourceText, tree: ast.Module) -> str | None:
    """The indentation a compound statement adds to its first statement, for the first one found."""
    stack: list[ast.AST] = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        body = getattr(node, "body", None)
        if isinstance(node, ast.stmt) and isinstance(body, list) and body and body[0].lineno > node.lineno:
            outer, inner = src.indent_of(node.lineno), src.indent_of(body[0].lineno)
            if inner.startswith(outer) and len(inner) > len(outer):
                return inner[len(outer) :]
        if isinstance(body, list):
            stack.extend(reversed([b for b in body if isinstance(b, ast.stmt)]))
    return None


def body_of(parent: ast.AST, stmt: ast.stmt) -> list[ast.stmt] | None:
    """The statement list of `parent` that holds `stmt`."""
    for name in ("body", "orelse", "finalbody"):
        block = getattr(parent, name, None)
        if isinstance(block, list) and any(s is stmt for s in block):
            return block
    for handler in getattr(parent, "handlers", ()):
        if any(s is stmt for s in handler.body):
            return handler.body
    for case in getattr(parent, "cases", ()):
        if any(s is stmt for s in case.body):
            return case.body
    return None


Detector = Callable[[RuleSpec, Analysis, ast.AST, Scope], Iterator[Match]]
