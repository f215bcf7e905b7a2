"""One pass over a module's `ast`: find every rule match, and plan each match's fix."""

from __future__ import annotations

import ast
import functools
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from neuron_migrate.analysis.names import CHILD_FIELDS, Resolver, Scope, dotted
from neuron_migrate.analysis.reach import Reach, skipper
from neuron_migrate.analysis.source import SourceText
from neuron_migrate.catalogue import MapEntry, RuleSpec
from neuron_migrate.model import Safety

T = TypeVar("T")
N = TypeVar("N", bound=ast.AST)
# The attribute set on every ast node during the walk (lazily in skipped statements): a weak
# reference to its parent, so that a tree holds no reference cycle. A tree is then freed by
# reference counting as soon as its file is done, and the garbage collector has nothing to find:
# with strong links every tree was cyclic garbage, and the collections that freed them were 29%
# of a check of all of transformers (4.0 s of 13.9 s).
PARENT = "_nm_parent"
_up = weakref.ref  # the value of PARENT: one reference object per parent, shared by its children
# Whether `walk` skips the statements no enabled rule can match in (`analysis/reach.py`); the
# tests turn it off to compare the findings with and without it.
SKIP_UNREACHABLE = True
_LEAVES = frozenset(
    {ast.Constant, ast.Name, ast.Pass, ast.Break, ast.Continue, ast.Global, ast.Nonlocal}
)  # no child nodes
XLA_ROOT = "torch_xla"
_STATEMENTS = frozenset(cls for cls in CHILD_FIELDS if issubclass(cls, ast.stmt))
_SCOPE_NODES = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.Lambda,
    ast.ClassDef,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)
# Import statements the fixes may ask for, by the name they bind.
IMPORTS = {
    "torch": ("torch", "import torch"),
    "dist": ("torch.distributed", "import torch.distributed as dist"),
    "os": ("os", "import os"),
    "datetime": ("datetime", "import datetime"),
    "fsdp": ("torch.distributed.fsdp", "import torch.distributed.fsdp as fsdp"),
    "dist_optim": ("torch.distributed.optim", "import torch.distributed.optim as dist_optim"),
    "checkpoint_wrapper": (
        "torch.distributed.algorithms._checkpoint.checkpoint_wrapper.checkpoint_wrapper",
        "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper",
    ),
}


@dataclass(frozen=True)
class Match:
    """A rule matched at a node."""

    rule: RuleSpec
    node: ast.AST
    scope: Scope
    entry: MapEntry | None = None
    qualified: str = ""  # the API matched, fully qualified
    written: str = ""  # the API as the user wrote it
    extra: tuple[tuple[str, str], ...] = ()  # more values for the message template


EXPRESSION = "expression"  # a Rewrite's node: the expression its span holds
STATEMENT = "statement"  # a Rewrite's node: the statement on its span's lines


@dataclass(frozen=True)
class Rewrite:
    """A LibCST transform that, when the file is fixed, rewrites `span` in place of edit 0.

    `function` is a transform or its `"module:function"` path, so planning never imports LibCST;
    see `engine/rewrite.py` for the interface.
    """

    function: str | Callable[..., Any]
    span: tuple[int, int]  # the text parsed into the node given to `function`
    kind: str = EXPRESSION
    options: tuple[tuple[str, str], ...] = ()  # keyword arguments for `function`
    quotes: tuple[str, ...] = ()  # quotes of the f-strings around the span: the result avoids them
    parenthesize: bool = False  # the result needs parentheses where it stands


class Decline(Exception):
    """Raised by a `Rewrite`'s transform that leaves its node to the text edit."""


@dataclass(frozen=True)
class Plan:
    """A planned fix: text edits by offset, the imports they need, and its safety.

    With a `rewrite`, the first edit is what `check` reports, and `--fix` writes the rewrite's
    result instead when LibCST can produce it.
    """

    edits: tuple[tuple[int, int, str], ...]
    imports: tuple[str, ...] = ()  # keys of IMPORTS
    safety: Safety | None = None  # overrides the rule's or entry's safety
    description: str = ""
    deletes: tuple[ast.stmt, ...] = ()  # whole statements removed (for empty-block repair)
    rewrite: Rewrite | None = None


class Analysis:
    """A parsed module with its resolver, parents and helpers for detectors and fixes."""

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
        self.memo: dict[str, object] = {}  # per-module facts a detector computes once, by name
        self._indent_unit: str | None = None
        self._all_nodes: list[ast.AST] | None = None
        self._nodes_of: dict[tuple[type, ...], list[ast.AST]] = {}
        self.fixes: Mapping[str, Callable[..., Plan | None]] = {}  # `fix = "..."` names, set by the engine
        self.skipped: list[ast.stmt] = []  # statements the walk left out: their parts get parents lazily
        self.linked = 0  # how many of them have their parent links now

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

    def calls_anywhere(self, names: tuple[str, ...]) -> bool:
        """Whether the module calls any of `names` (resolved at module scope), at any depth."""
        scope = self.resolver.module_scope
        for node in self.nodes(ast.Call):
            if any(n.startswith(names) for n in self.resolver.qualified_names(node.func, scope)):
                return True
        return False

    def fact(self, key: str, compute: Callable[[Analysis], T]) -> T:
        """A whole-module fact that several rules need: `compute(self)`, once, kept in `memo`."""
        if key not in self.memo:
            self.memo[key] = compute(self)
        # `memo` holds every fact as object; `compute` made this one a T (the ignore below).
        return self.memo[key]  # type: ignore[return-value]

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
        saved, facts, kinds, walked = (call.args, call.keywords), set(self.memo), set(self._nodes_of), self._all_nodes
        call.args = [a for a in call.args if not isinstance(a, ast.Starred)]
        call.keywords = [k for k in call.keywords if k.arg is not None]
        try:
            yield
        finally:
            call.args, call.keywords = saved
            for key in set(self.memo) - facts:
                del self.memo[key]
            for types in set(self._nodes_of) - kinds:
                del self._nodes_of[types]
            self._all_nodes = walked

    @staticmethod
    def parent(node: ast.AST) -> ast.AST | None:
        return parent_of(node)

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


_MISSING = object()
_UNLINKED: weakref.WeakSet[Analysis] = weakref.WeakSet()  # analyses whose skipped statements lack parent links


def parent_of(node: ast.AST) -> ast.AST | None:
    """The node whose child `node` is (None for a module, or a node of no walked tree).

    The walk links the statements it visits; the first question about a node it skipped links
    every skipped statement of the analyses alive, so each answer is the one a full walk gives.
    Read parents only through this (or `Analysis.parent`), never through the attribute itself.
    A parent is there while its tree is (the analysis holds the tree's root).
    """
    found = getattr(node, PARENT, _MISSING)
    if found is _MISSING:
        if _UNLINKED:
            link_skipped()
        found = getattr(node, PARENT, None)
    return None if found is None else cast("weakref.ReferenceType[ast.AST]", found)()


def link_skipped() -> None:
    """Set the parent links inside every statement a walk skipped (each statement once)."""
    for analysis in list(_UNLINKED):
        _UNLINKED.discard(analysis)
        linked, analysis.linked = analysis.linked, len(analysis.skipped)
        for stmt in analysis.skipped[linked:]:
            stack: list[ast.AST] = [stmt]
            while stack:
                node = stack.pop()
                up = _up(node)
                for child in _children(node):
                    setattr(child, PARENT, up)
                    stack.append(child)


def breadth_first(tree: ast.AST) -> list[ast.AST]:
    """Every node under `tree`, in `ast.walk`'s order, without the shared `ctx` markers."""
    found = [tree]
    index = 0
    while index < len(found):
        found.extend(_children(found[index]))
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
RESOLVED_ONLY = "nm_resolved_only"  # attribute of a detector marked with `resolved_only`


def resolved_only(detector: Detector) -> Detector:
    """Mark a detector that never matches a call, name or attribute chain which resolves to no
    qualified name (a local variable, `self.x`, a method of a local object).

    The walk skips it for those nodes (most calls in a module), so it need not be asked.
    It is still run for every other node type it declares.
    """
    setattr(detector, RESOLVED_ONLY, True)
    return detector


def resolved_only_on(*kinds: type[ast.AST]) -> Callable[[Detector], Detector]:
    """`resolved_only` for these node types alone: the detector never matches a name, attribute
    chain or call of these types that resolves to nothing, and is asked about the rest."""

    def mark(detector: Detector) -> Detector:
        setattr(detector, RESOLVED_ONLY, kinds)
        return detector

    return mark


NEEDLES = "nm_needles"  # attribute of a detector marked with `needles`


@dataclass(frozen=True)
class Needles:
    """What the source of a node must hold for a detector to match at it (see `needles`)."""

    words: frozenset[str] = frozenset()  # identifiers, written whole (an attribute, keyword or name)
    fragments: tuple[str, ...] = ()  # or an identifier holding one of these, in any case
    names: frozenset[str] = frozenset()  # or a name or chain that resolves to one of these
    under: frozenset[str] = frozenset()  # or to one of these or a name below it
    maps: str = ""  # "words": the last part of each rule entry's `old` too; "names": each `old` as a name


def needles(
    *words: str, fragments: tuple[str, ...] = (), names: Any = (), under: Any = (), maps: str = ""
) -> Callable[[Detector], Detector]:
    """Declare that a detector matches at a node only when the node's own source (its decorators
    included) holds one of `words` as an identifier, an identifier containing one of `fragments`
    (case-insensitively), or a name or attribute chain that resolves to one of `names`, or to one of
    `under` or below it; `maps` adds the rule's entries (see `Needles`).

    The walk skips the statements that hold none of them for any enabled rule. Declare only what
    the detector's code proves: a test of a string's value is no needle (`"cu" "da"`, escapes),
    nor is anything read from other nodes. A detector without needles turns skipping off in the
    files it may fire on.
    """
    declared = Needles(frozenset(words), tuple(fragments), frozenset(names), frozenset(under), maps)

    def mark(detector: Detector) -> Detector:
        setattr(detector, NEEDLES, declared)
        return detector

    return mark


IMPORT_RULE = "nm_import_rule"  # attribute of a detector marked with `import_rule`


def import_rule(detector: Detector) -> Detector:
    """Mark a detector that matches imports which its fix removes once nothing uses them.

    Rules with such a detector are the analysis's `import_rules`: `check` counts their findings
    fixable when the other safe fixes leave the import unused, as `--fix` would.
    """
    setattr(detector, IMPORT_RULE, True)
    return detector


@dataclass
class RuleIndex:
    """Enabled rules, indexed for the walk."""

    exact: dict[str, list[tuple[RuleSpec, MapEntry]]] = field(default_factory=dict)
    prefix: dict[str, list[tuple[RuleSpec, MapEntry]]] = field(default_factory=dict)
    detectors: dict[type, list[tuple[RuleSpec, Detector]]] = field(default_factory=dict)
    unresolved: dict[type, list[tuple[RuleSpec, Detector]]] = field(default_factory=dict)  # those not `resolved_only`
    import_rules: tuple[RuleSpec, ...] = ()
    catch_all: RuleSpec | None = None
    _entries: dict[str, list[tuple[RuleSpec, MapEntry]]] = field(default_factory=dict, repr=False, compare=False)

    @property
    def import_codes(self) -> frozenset[str]:
        """The codes of the `import_rules`."""
        return frozenset(spec.code for spec in self.import_rules)

    def known(self, name: str) -> bool:
        """Whether `name` is, or leads to, an API some enabled rule maps (for star imports)."""
        if self.entries_for(name):
            return True
        prefix = name + "."
        return any(key.startswith(prefix) for key in self.exact) or any(key.startswith(prefix) for key in self.prefix)

    @functools.cached_property
    def reach(self) -> Reach | None:
        """What the enabled rules can match through, or None when a detector declares no `needles`."""
        words: set[str] = set()
        fragments: list[str] = []
        names, under = set(self.exact), set(self.prefix)
        if self.catch_all is not None:
            under.add(XLA_ROOT)
        for pairs in self.detectors.values():
            for rule, detector in pairs:
                declared = getattr(detector, NEEDLES, None)
                if not isinstance(declared, Needles):
                    return None
                words |= declared.words
                fragments += declared.fragments
                names |= declared.names
                under |= declared.under
                olds = [entry for entry in rule.maps if entry.old]
                if declared.maps == "words":
                    words.update(entry.old.rsplit(".", 1)[-1] for entry in olds)
                elif declared.maps == "names":
                    names.update(entry.old for entry in olds if not entry.prefix)
                    under.update(entry.old for entry in olds if entry.prefix)
        return Reach(frozenset(words), tuple(sorted(set(fragments))), frozenset(names), frozenset(under))

    def entries_for(self, name: str) -> list[tuple[RuleSpec, MapEntry]]:
        """The rules' entries for a qualified name: its own and its prefixes' (memoised per name)."""
        known = self._entries.get(name)
        if known is None:
            known = self._entries[name] = self._find_entries(name)
        return known

    def _find_entries(self, name: str) -> list[tuple[RuleSpec, MapEntry]]:
        found = list(self.exact.get(name, ()))
        parts = name.split(".")
        for i in range(len(parts), 0, -1):
            found.extend(self.prefix.get(".".join(parts[:i]), ()))
        return found


def walk(analysis: Analysis, index: RuleIndex) -> list[Match]:
    """Visit every node once, set parent links, and collect the matches of enabled rules.

    A statement that spells nothing an enabled rule can match through is not visited
    (`analysis/reach.py`); the parent links inside it are set on the first question about one.
    """
    matches: list[Match] = []
    extend = matches.extend
    analysis.import_rules = index.import_rules
    stack: list[tuple[ast.AST, Scope]] = [(analysis.tree, analysis.resolver.module_scope)]
    pop, push = stack.pop, stack.append
    scope_of = analysis.resolver.scope_of
    detectors, unresolved = index.detectors, index.unresolved
    handled = analysis.handled
    reach = index.reach if SKIP_UNREACHABLE else None
    skip = skipper(reach, analysis.resolver, analysis.src) if reach is not None else None
    skipped = analysis.skipped
    setattr(analysis.tree, PARENT, None)  # linked: a question about the module links nothing lazily
    while stack:
        node, scope = pop()
        kind = type(node)  # `type(node) is X` (faster than isinstance here) does not narrow for mypy:
        if skip is not None and kind in _STATEMENTS and skip(node):  # type: ignore[arg-type]  # a statement
            skipped.append(node)  # type: ignore[arg-type]  # (as above)
            _UNLINKED.add(analysis)  # a detector asking about a node in it links it then
            continue
        if kind is ast.Call:  # hence the ignores below, each on a node whose class was just tested
            resolves = bool(analysis.call_names(node, scope))  # type: ignore[arg-type]
            if resolves and id(node) not in handled:  # a detector that rewrites an enclosing node claimed it
                extend(_match_call(analysis, node, scope, index))  # type: ignore[arg-type]
            for rule, detector in (detectors if resolves else unresolved).get(kind, ()):
                extend(detector(rule, analysis, node, scope))
        elif (
            (kind is ast.Name or kind is ast.Attribute)
            and type(node.ctx) is ast.Load  # type: ignore[attr-defined]
            and (kind is ast.Name or dotted(node) is not None)
        ):
            resolves = bool(analysis.qualified(node, scope))  # a name, or a whole `a.b.c` chain
            if resolves and id(node) not in handled:
                extend(_match_reference(analysis, node, scope, index))
            for rule, detector in (detectors if resolves else unresolved).get(kind, ()):
                extend(detector(rule, analysis, node, scope))
            if kind is ast.Attribute:
                _link_chain(node)  # a whole chain is one reference: its parts are not visited
            continue
        else:
            for rule, detector in detectors.get(kind, ()):
                extend(detector(rule, analysis, node, scope))
            if kind in _LEAVES:
                continue
        children = _children(node)
        inner = scope_of.get(node, scope) if kind in _SCOPE_NODES else scope
        up = _up(node)
        if inner is scope:
            for child in reversed(children):
                setattr(child, PARENT, up)
                push((child, scope))
            continue
        outer_parts = _outer_parts(node)
        for child in reversed(children):
            setattr(child, PARENT, up)
            push((child, scope if any(child is o for o in outer_parts) else inner))
    return matches


_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")  # the fields that hold statements


def walk_imports(analysis: Analysis, index: RuleIndex) -> list[Match]:
    """The matches `walk` finds at import statements with the import rules, without the walk.

    The statements are the resolver's, found through the names they bind (each binding keeps
    its statement and is in the scope `walk` passes). Statements are linked to their parents
    (the questions an import's fix asks); the nodes inside them on the first question about
    one, as for statements `walk` skips.
    """
    analysis.import_rules = index.import_rules
    tree = analysis.tree
    setattr(tree, PARENT, None)
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        up = _up(node)
        for name in _BLOCKS:
            block = getattr(node, name, None)
            if type(block) is list:
                for child in block:
                    setattr(child, PARENT, up)
                    stack.append(child)
    analysis.skipped.extend(tree.body)
    _UNLINKED.add(analysis)
    statements: dict[int, tuple[ast.Import | ast.ImportFrom, Scope]] = {}
    for scope in analysis.resolver.scope_of.values():
        found: list[ast.AST | None] = [b.node for bindings in scope.bindings.values() for b in bindings]
        found += [star for _, star in scope.stars]
        for statement in found:
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                statements.setdefault(id(statement), (statement, scope))
    matches: list[Match] = []
    for statement, scope in statements.values():
        for rule, detector in index.detectors.get(type(statement), ()):
            if rule in index.import_rules:
                matches.extend(detector(rule, analysis, statement, scope))
    return matches


def _children(node: ast.AST) -> list[ast.AST]:
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


def _outer_parts(node: ast.AST) -> list[ast.AST]:
    """Children of a scope node that are evaluated in the enclosing scope."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        args = node.args
        parts: list[ast.AST] = [*node.decorator_list, *args.defaults]
        parts += [d for d in args.kw_defaults if d is not None]
        return parts + ([node.returns] if node.returns is not None else [])
    if isinstance(node, ast.Lambda):
        return [*node.args.defaults, *[d for d in node.args.kw_defaults if d is not None]]
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *node.keywords]
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return [node.generators[0]]
    return []


def _link_chain(node: ast.AST) -> None:
    while isinstance(node, ast.Attribute):
        setattr(node.value, PARENT, _up(node))
        node = node.value


def _written(analysis: Analysis, node: ast.AST) -> str:
    return dotted(node) or analysis.segment(node)


def _match_call(analysis: Analysis, call: ast.Call, scope: Scope, index: RuleIndex) -> list[Match]:
    names = analysis.call_names(call, scope)
    if not names:
        return []
    found: list[Match] = []
    seen: set[tuple[str, str]] = set()
    for name in sorted(names):
        for rule, entry in index.entries_for(name):
            if (rule.code, entry.old) in seen:
                continue
            seen.add((rule.code, entry.old))
            analysis.handled.add(id(call.func))
            found.append(Match(rule, call, scope, entry, name, _written(analysis, call.func)))
    return found


def _match_reference(analysis: Analysis, node: ast.AST, scope: Scope, index: RuleIndex) -> list[Match]:
    names = analysis.qualified(node, scope)
    if not names:
        return []
    found: list[Match] = []
    seen: set[tuple[str, str]] = set()
    for name in sorted(names):
        for rule, entry in index.entries_for(name):
            if entry.calls_only or (rule.code, entry.old) in seen:
                continue
            seen.add((rule.code, entry.old))
            found.append(Match(rule, node, scope, entry, name, _written(analysis, node)))
    if found or index.catch_all is None:
        return found
    xla = sorted(n for n in names if n == XLA_ROOT or n.startswith(XLA_ROOT + "."))
    return [Match(index.catch_all, node, scope, None, xla[0], _written(analysis, node))] if xla else []
