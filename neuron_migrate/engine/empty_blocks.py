"""Blocks that fixes empty: a `pass` where a block must stay, the whole `if` where its test only
reads (or asks whether torch_xla is available), so no `if debug: pass` is left behind."""

from __future__ import annotations

import ast
from bisect import bisect_left

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.values import Edit
from neuron_migrate.engine.check import Planned

_BLOCK_FIELDS = ("body", "orelse", "finalbody")


def repair_empty_blocks(
    analysis: Analysis, accepted: list[Planned], planned_edits: list[tuple[Edit, ...]]
) -> list[Edit]:
    """Edits of the accepted plans; a block whose statements are all deleted keeps a `pass`.

    An emptied `if` with no `else` whose test has no side effects (`if <torch_xla is available>:`,
    `if debug:`) goes instead, its comments with it; its own block is then checked the same way.
    """
    edits: list[Edit] = []
    deleted: dict[int, list[int]] = {}  # id(block) -> indices in `edits` of its deletions
    blocks: dict[int, list[ast.stmt]] = {}
    where: dict[int, dict[int, list[ast.stmt]]] = {}  # id(parent) -> id(stmt) -> its block
    for item, plan_edits in zip(accepted, planned_edits):
        plan = item.plan
        assert plan is not None
        for stmt in plan.deletes:
            block = _block_holding(analysis, stmt, where)
            if block is not None:
                deleted.setdefault(id(block), []).append(len(edits))
                blocks[id(block)] = block
        edits.extend(plan_edits)
    starts = sorted(e[0] for e in edits)
    pending = list(deleted)
    while pending:
        key = pending.pop()
        block, entries = blocks[key], deleted[key]
        if len(entries) < len(block):
            continue
        parent = analysis.parent(block[0])
        if parent is analysis.tree or parent is None:
            continue
        span = _guard_span(analysis, parent, block, starts, len(entries)) if isinstance(parent, ast.If) else None
        if isinstance(parent, ast.If) and span is not None:
            for index in entries:
                edits[index] = Edit(edits[index][0], edits[index][0], "")
            edits.append(Edit(*span, ""))  # its comments were about the code that went
            outer = _block_holding(analysis, parent, where)
            if outer is not None:
                deleted.setdefault(id(outer), []).append(len(edits) - 1)
                blocks[id(outer)] = outer
                if id(outer) not in pending:
                    pending.append(id(outer))
            continue
        inverted = _inverted_if(analysis, parent, block, starts, len(entries)) if isinstance(parent, ast.If) else None
        if inverted is not None:
            for index in entries:
                edits[index] = Edit(edits[index][0], edits[index][0], "")
            edits.append(inverted)
            continue
        index = entries[-1]
        start, end, kept = edits[index]
        indent = analysis.src.indent_of(block[-1].lineno)
        edits[index] = Edit(start, end, f"{kept}{indent}pass{analysis.src.newline}")
    return edits


def _guard_span(
    analysis: Analysis, parent: ast.If, block: list[ast.stmt], starts: list[int], inside: int
) -> tuple[int, int] | None:
    """The lines of the `if` whose body is `block`, when it can go whole (see `_repair_empty_blocks`)."""
    if parent.orelse or parent.body is not block:
        return None
    if not (is_xla_guard(parent.test) or _side_effect_free(parent.test)):
        return None
    src = analysis.src
    if not src.line_text(parent.lineno).lstrip().startswith("if"):
        return None  # an `elif`, or the `if` shares its line
    start = src.line_start(parent.lineno)
    end = src.line_start((parent.end_lineno or parent.lineno) + 1)
    if bisect_left(starts, end) - bisect_left(starts, start) != inside:
        return None  # another fix edits the condition
    return start, end


def _inverted_if(
    analysis: Analysis, parent: ast.If, block: list[ast.stmt], starts: list[int], inside: int
) -> Edit | None:
    """`if c:` whose body went, with an `else:`: the edit that makes it `if not c:` over the `else`
    block, so no `if c: pass` is left. The test runs once either way, so any test will do; an
    `elif` (on either side) or an `else:` sharing its line with code is left with its `pass`."""
    src = analysis.src
    if parent.body is not block or not parent.orelse or not src.line_text(parent.lineno).lstrip().startswith("if"):
        return None
    first = parent.orelse[0]
    if src.line_text(first.lineno).lstrip().startswith("elif"):
        return None
    line = src.else_line(parent)
    if line is None:
        return None
    start, end = src.line_start(parent.lineno), src.line_start(line + 1)
    if bisect_left(starts, end) - bisect_left(starts, start) != inside:
        return None  # another fix edits the condition
    # The `else:` line's comment is about the block that stays, so it moves to the new `if` line.
    _, hash_mark, comment = src.line_text(line).partition("#")
    tail = f"  #{comment.rstrip()}" if hash_mark else ""
    return Edit(start, end, f"{src.indent_of(parent.lineno)}if {_negated(analysis, parent.test)}:{tail}{src.newline}")


# A comparison's natural inverse. `is`/`is not` and `in`/`not in` are exact by definition (the
# second of each is the negation of the first). `==`/`!=` are written as each other's inverse too:
# by the data model `object.__ne__` delegates to `__eq__` and inverts its result, so they differ
# only for a class that defines both inconsistently, which no reviewer expects; an array's
# elementwise `==` cannot be an `if` test in either spelling. Ordering comparisons are not
# swapped: `not (a < b)` is not `a >= b` for a partial order (sets, NaN), so they keep `not (...)`.
_SWAPPED = {ast.Is: "is not", ast.IsNot: "is", ast.In: "not in", ast.NotIn: "in", ast.Eq: "!=", ast.NotEq: "=="}
# What binds looser than a comparison, so needs its parentheses back as an operand of one.
_LOOSE = (ast.BoolOp, ast.IfExp, ast.Lambda, ast.NamedExpr, ast.Compare)


def _negated(analysis: Analysis, test: ast.expr) -> str:
    """`test`'s natural negation: `not x` gives `x`, `a is b` `a is not b` (and `in`, `==`: see
    `_SWAPPED`), `f()` `not f()`, an ordering comparison or a BoolOp `not (...)`. A negation that
    spans lines outside brackets is parenthesized, so the `if` line it goes on stays valid."""
    text = _negation(analysis, test)
    if "\n" in text:
        try:
            ast.parse(f"if {text}:\n    pass\n")
        except SyntaxError:
            return f"({text})"
    return text


def _negation(analysis: Analysis, test: ast.expr) -> str:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return analysis.segment(test.operand)  # any expression is an `if` test
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _SWAPPED:
        left, right = _operand(analysis, test.left), _operand(analysis, test.comparators[0])
        return f"{left} {_SWAPPED[type(test.ops[0])]} {right}"
    text = analysis.segment(test)
    return f"not {text}" if isinstance(test, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) else f"not ({text})"


def _operand(analysis: Analysis, node: ast.expr) -> str:
    """`node`'s text as an operand of a comparison (its source segment drops the parentheses)."""
    text = analysis.segment(node)
    loose = isinstance(node, _LOOSE) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not))
    return f"({text})" if loose else text


def _side_effect_free(test: ast.expr) -> bool:
    """Whether evaluating `test` does nothing but read (`debug`, `args.verbose > 1`, `step % 10 == 0`,
    `not x`, the rank guards the fixes write: `int(os.environ.get("RANK", 0)) == 0`,
    `dist.is_initialized()`): an `if` on it whose body the fixes emptied can go whole, with no
    `pass` left behind."""
    for node in ast.walk(test):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            reads = name in _READING_CALLS and (isinstance(func, ast.Name) or name not in _BUILTIN_READS)
            if not reads or (name == "get" and not _dotted_name(func).endswith("environ.get")):
                return False
        elif not isinstance(node, (*_PURE_NODES, ast.keyword)):
            return False
    return True


_BUILTIN_READS = frozenset({"int", "str", "bool", "float", "len", "isinstance", "hasattr"})
_READING_CALLS = _BUILTIN_READS | {"get", "is_initialized", "is_available", "get_rank", "get_world_size"}


def _dotted_name(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted_name(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


# What a condition may hold for its emptied `if` to go whole (`if step % 10 == 0:`): reading
# names, attributes and items and computing with them runs no user code worth keeping.
_PURE_NODES = (
    ast.Name,
    ast.Attribute,
    ast.Subscript,
    ast.Constant,
    ast.Compare,
    ast.BoolOp,
    ast.UnaryOp,
    ast.BinOp,
    ast.Tuple,
    ast.Slice,
    ast.expr_context,
    ast.cmpop,
    ast.boolop,
    ast.unaryop,
    ast.operator,
)


_AVAILABILITY = ("is_torch_xla_available", "is_xla_available", "is_torch_tpu_available", "is_tpu_available")


def is_xla_guard(test: ast.expr) -> bool:
    """Whether `test` only asks if torch_xla can be used: after migration its body never runs.

    `is_torch_xla_available()` (any module's), `"torch_xla" in sys.modules` and
    `importlib.util.find_spec("torch_xla") is not None`.
    """
    if isinstance(test, ast.Call) and not test.args and not test.keywords:
        func = test.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        return name in _AVAILABILITY
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, right = test.left, test.comparators[0]
        if isinstance(test.ops[0], ast.In) and _is_xla_string(left):
            return isinstance(right, ast.Attribute) and right.attr == "modules"
        if isinstance(test.ops[0], ast.IsNot) and isinstance(right, ast.Constant) and right.value is None:
            return (
                isinstance(left, ast.Call)
                and _calls(left, "find_spec")
                and len(left.args) == 1
                and _is_xla_string(left.args[0])
            )
    return False


def _is_xla_string(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value == "torch_xla"


def _calls(call: ast.Call, name: str) -> bool:
    func = call.func
    return (isinstance(func, ast.Attribute) and func.attr == name) or (isinstance(func, ast.Name) and func.id == name)


def _block_holding(
    analysis: Analysis, stmt: ast.stmt, where: dict[int, dict[int, list[ast.stmt]]]
) -> list[ast.stmt] | None:
    """The statement list that holds `stmt`; each parent's lists are indexed once."""
    parent = analysis.parent(stmt)
    if parent is None:
        return None
    index = where.get(id(parent))
    if index is None:
        index = where[id(parent)] = {}
        lists = [getattr(parent, name, None) for name in _BLOCK_FIELDS]
        lists += [h.body for h in getattr(parent, "handlers", ())] + [c.body for c in getattr(parent, "cases", ())]
        for block in lists:
            if isinstance(block, list):
                for child in block:
                    index[id(child)] = block
    return index.get(id(stmt))
