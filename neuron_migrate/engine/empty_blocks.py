"""Blocks that fixes empty, repaired as a reviewer would write them, never as `if debug: pass`.

- an emptied `if` whose test only reads (or asks whether torch_xla is available) goes whole,
  its comments with it; one whose test is a call keeps the call as a statement;
- an `if` whose body went but whose `else` block stays becomes `if not c:` over that block;
  one whose two blocks both went is an emptied `if` with no `else`;
- an emptied `else:` block of an `if`, `for` or `while` goes with its `else:` line;
- an emptied `setUp`/`tearDown` (or `setUpClass`/`tearDownClass`) of a class deriving only from
  unittest's or absl's `TestCase` goes: the base class's hook does nothing either;
- any other emptied block keeps a `pass`; a function's says why its code went (the reason of
  the finding that emptied it).

Blocks are repaired deepest first, so a block that a repair empties (an `if` that goes whole)
is repaired in turn with everything that emptied it known.
"""

from __future__ import annotations

import ast
import heapq
from bisect import bisect_left
from dataclasses import dataclass, field

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.values import Edit
from neuron_migrate.engine.check import Planned
from neuron_migrate.engine.conditions import is_xla_guard, negated, side_effect_free

_BLOCK_FIELDS = ("body", "orelse", "finalbody")
_NO_OP_HOOKS = frozenset({"setUp", "tearDown", "setUpClass", "tearDownClass"})
_TEST_CASES = frozenset(
    {
        "unittest.TestCase",
        "unittest.case.TestCase",
        "absl.testing.absltest.TestCase",
        "absl.testing.parameterized.TestCase",
    }
)


@dataclass
class _Emptied:
    """The edits being repaired, and which of them delete each block's statements."""

    analysis: Analysis
    edits: list[Edit]
    deleted: dict[int, list[int]] = field(default_factory=dict)  # id(block) -> indices in `edits`
    blocks: dict[int, list[ast.stmt]] = field(default_factory=dict)
    reasons: dict[int, str] = field(default_factory=dict)  # id(block) -> why its first statement went
    where: dict[int, dict[int, list[ast.stmt]]] = field(default_factory=dict)  # id(parent) -> id(stmt) -> block
    starts: list[int] = field(default_factory=list)

    def note(self, block: list[ast.stmt], index: int, reason: str = "") -> None:
        self.deleted.setdefault(id(block), []).append(index)
        self.blocks[id(block)] = block
        if reason:
            self.reasons.setdefault(id(block), reason)

    def emptied(self, block: list[ast.stmt]) -> bool:
        return len(self.deleted.get(id(block), ())) >= len(block)

    def edits_within(self, start: int, end: int) -> int:
        return bisect_left(self.starts, end) - bisect_left(self.starts, start)

    def replace(self, blocks: tuple[list[ast.stmt], ...], edit: Edit) -> None:
        """`edit` stands for every deletion in `blocks` (their edits become empty)."""
        for block in blocks:
            for index in self.deleted.get(id(block), ()):
                self.edits[index] = Edit(self.edits[index][0], self.edits[index][0], "")
        self.edits.append(edit)


def repair_empty_blocks(
    analysis: Analysis, accepted: list[Planned], planned_edits: list[tuple[Edit, ...]]
) -> list[Edit]:
    """Edits of the accepted plans, with every block whose statements all go repaired (see the
    module's docstring)."""
    state = _Emptied(analysis, [])
    for item, plan_edits in zip(accepted, planned_edits):
        plan = item.plan
        assert plan is not None
        for stmt in plan.deletes:
            block = _block_holding(state, stmt)
            if block is not None:
                state.note(block, len(state.edits), _reason(item.finding.message))
        state.edits.extend(plan_edits)
    state.starts = sorted(e[0] for e in state.edits)
    pending = [(-_depth(analysis, block[0]), key) for key, block in state.blocks.items()]
    heapq.heapify(pending)
    done: set[int] = set()
    while pending:
        _, key = heapq.heappop(pending)
        block = state.blocks[key]
        if key in done or not state.emptied(block):
            continue
        done.add(key)
        outer = _repair(state, block)
        if outer is not None and id(outer) not in done:
            heapq.heappush(pending, (-_depth(analysis, outer[0]), id(outer)))
    return state.edits


def _repair(state: _Emptied, block: list[ast.stmt]) -> list[ast.stmt] | None:
    """Repair one emptied block; the block its repair deletes a statement of, if any."""
    analysis = state.analysis
    parent = analysis.parent(block[0])
    if parent is analysis.tree or parent is None:
        return None
    if isinstance(parent, ast.If) and parent.body is block:
        both = bool(parent.orelse) and state.emptied(parent.orelse)
        if not parent.orelse or both:
            done, outer = _whole_if(state, parent)
            if done:
                return outer
            if both and not _else_gone(state, parent):
                _keep_pass(state, parent.orelse)
        elif _inverted_if(state, parent):
            return None
    elif isinstance(parent, (ast.If, ast.For, ast.AsyncFor, ast.While)) and parent.orelse is block:
        if isinstance(parent, ast.If) and state.emptied(parent.body):
            return None  # repaired with its body
        if _else_gone(state, parent):
            return None
    elif isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)) and parent.body is block:
        if _no_op_hook(analysis, parent) and _whole_statement_gone(state, parent, (block,)):
            return _block_holding(state, parent)
        _keep_pass(state, block, state.reasons.get(id(block), ""))
        return None
    _keep_pass(state, block)
    return None


def _keep_pass(state: _Emptied, block: list[ast.stmt], reason: str = "") -> None:
    index = state.deleted[id(block)][-1]
    start, end, kept = state.edits[index]
    src = state.analysis.src
    comment = f"  # {reason}" if reason else ""
    state.edits[index] = Edit(start, end, f"{kept}{src.indent_of(block[-1].lineno)}pass{comment}{src.newline}")


def _whole_if(state: _Emptied, stmt: ast.If) -> tuple[bool, list[ast.stmt] | None]:
    """An `if` whose blocks all went: gone whole when its test only reads (with the block that
    held it, which lost a statement), or its test kept as a statement when that is a call on
    one line; (False, None) when neither applies."""
    src = state.analysis.src
    if not src.line_text(stmt.lineno).lstrip().startswith("if"):
        return False, None  # an `elif`, or the `if` shares its line
    blocks = (stmt.body, stmt.orelse) if stmt.orelse else (stmt.body,)
    if is_xla_guard(stmt.test) or side_effect_free(stmt.test):
        gone = _whole_statement_gone(state, stmt, blocks)
        return gone, _block_holding(state, stmt) if gone else None
    if not isinstance(stmt.test, ast.Call) or stmt.test.lineno != stmt.test.end_lineno:
        return False, None
    span = _statement_span(state.analysis, stmt)
    if state.edits_within(*span) != sum(len(state.deleted[id(b)]) for b in blocks):
        return False, None  # another fix edits the condition
    call = f"{src.indent_of(stmt.lineno)}{state.analysis.segment(stmt.test)}{src.newline}"
    state.replace(blocks, Edit(*span, call))
    return True, None


def _whole_statement_gone(state: _Emptied, stmt: ast.stmt, blocks: tuple[list[ast.stmt], ...]) -> bool:
    """Delete `stmt` whole (its comments and decorators with it) when the only edits inside it
    are the deletions of `blocks`' statements."""
    span = _statement_span(state.analysis, stmt)
    if state.edits_within(*span) != sum(len(state.deleted[id(b)]) for b in blocks):
        return False  # another fix edits the condition
    state.replace(blocks, Edit(*span, ""))
    outer = _block_holding(state, stmt)
    if outer is not None:
        state.note(outer, len(state.edits) - 1)
    return True


def _statement_span(analysis: Analysis, stmt: ast.stmt) -> tuple[int, int]:
    first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
    src = analysis.src
    return src.line_start(first), src.line_start((stmt.end_lineno or stmt.lineno) + 1)


def _inverted_if(state: _Emptied, parent: ast.If) -> bool:
    """`if c:` whose body went, with an `else:`: made `if not c:` over the `else` block, so no
    `if c: pass` is left. The test runs once either way, so any test will do; an `elif` (on either
    side) or an `else:` sharing its line with code is left with its `pass`."""
    src = state.analysis.src
    if not src.line_text(parent.lineno).lstrip().startswith("if"):
        return False
    first = parent.orelse[0]
    if src.line_text(first.lineno).lstrip().startswith("elif"):
        return False
    line = src.else_line(parent)
    if line is None:
        return False
    start, end = src.line_start(parent.lineno), src.line_start(line + 1)
    if state.edits_within(start, end) != len(state.deleted[id(parent.body)]):
        return False  # another fix edits the condition
    # The `else:` line's comment is about the block that stays, so it moves to the new `if` line.
    _, hash_mark, comment = src.line_text(line).partition("#")
    tail = f"  #{comment.rstrip()}" if hash_mark else ""
    test = negated(state.analysis, parent.test)
    state.replace((parent.body,), Edit(start, end, f"{src.indent_of(parent.lineno)}if {test}:{tail}{src.newline}"))
    return True


def _else_gone(state: _Emptied, parent: ast.If | ast.For | ast.AsyncFor | ast.While) -> bool:
    """An emptied `else:` block goes with its `else:` line (and that line's comment); not an
    `elif`, nor an `else: x` sharing its line."""
    src = state.analysis.src
    line = src.else_line(parent)
    if line is None:
        return False
    last = parent.orelse[-1]
    start, end = src.line_start(line), src.line_start((last.end_lineno or last.lineno) + 1)
    if state.edits_within(start, end) != len(state.deleted[id(parent.orelse)]):
        return False
    state.replace((parent.orelse,), Edit(start, end, ""))
    return True


def _no_op_hook(analysis: Analysis, function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether `function` is a `setUp`-like hook of a class whose bases are all unittest's (or
    absl's) `TestCase`, whose own hooks do nothing: the class behaves the same without it."""
    cls = analysis.parent(function)
    if function.name not in _NO_OP_HOOKS or not isinstance(cls, ast.ClassDef) or not cls.bases or cls.keywords:
        return False
    decorators = [d.id if isinstance(d, ast.Name) else "" for d in function.decorator_list]
    if decorators != (["classmethod"] if function.name.endswith("Class") else []):
        return False
    scope = analysis.resolver.scope_for(analysis.owner(cls))
    return all(analysis.qualified(base, scope) & _TEST_CASES for base in cls.bases)


def _reason(message: str) -> str:
    """Why a finding's code went, from its message: `Remove `x()`; TorchNeuron executes eagerly`
    gives `TorchNeuron executes eagerly`."""
    for separator in ("`; ", "`: "):
        _, found, reason = message.partition(separator)
        if found:
            return reason.strip()
    return ""


def _depth(analysis: Analysis, node: ast.AST) -> int:
    depth = 0
    current = analysis.parent(node)
    while current is not None:
        depth += 1
        current = analysis.parent(current)
    return depth


def _block_holding(state: _Emptied, stmt: ast.stmt) -> list[ast.stmt] | None:
    """The statement list that holds `stmt`; each parent's lists are indexed once."""
    parent = state.analysis.parent(stmt)
    if parent is None:
        return None
    index = state.where.get(id(parent))
    if index is None:
        index = state.where[id(parent)] = {}
        lists = [getattr(parent, name, None) for name in _BLOCK_FIELDS]
        lists += [h.body for h in getattr(parent, "handlers", ())] + [c.body for c in getattr(parent, "cases", ())]
        for block in lists:
            if isinstance(block, list):
                for child in block:
                    index[id(child)] = block
    return index.get(id(stmt))
