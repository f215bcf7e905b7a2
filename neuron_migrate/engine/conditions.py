"""What an `if` test does when evaluated: whether it only reads (so an `if` on it that the
fixes emptied can go whole), whether it only asks if torch_xla is available, and its natural
negation (for an `if` whose body went, turned over its `else` block)."""

from __future__ import annotations

import ast

from neuron_migrate.analysis.analyze import Analysis

# A comparison's natural inverse. `is`/`is not` and `in`/`not in` are exact by definition (the
# second of each is the negation of the first). `==`/`!=` are written as each other's inverse too:
# by the data model `object.__ne__` delegates to `__eq__` and inverts its result, so they differ
# only for a class that defines both inconsistently, which no reviewer expects; an array's
# elementwise `==` cannot be an `if` test in either spelling. Ordering comparisons are not
# swapped: `not (a < b)` is not `a >= b` for a partial order (sets, NaN), so they keep `not (...)`.
_SWAPPED = {ast.Is: "is not", ast.IsNot: "is", ast.In: "not in", ast.NotIn: "in", ast.Eq: "!=", ast.NotEq: "=="}
# What binds looser than a comparison, so needs its parentheses back as an operand of one.
_LOOSE = (ast.BoolOp, ast.IfExp, ast.Lambda, ast.NamedExpr, ast.Compare)


def negated(analysis: Analysis, test: ast.expr) -> str:
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


def side_effect_free(test: ast.expr) -> bool:
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
# `getenv` (os) and `getenv_as` (torch_xla.utils.utils) read an environment variable.
_READING_CALLS = _BUILTIN_READS | {
    "get",
    "getenv",
    "getenv_as",
    "is_initialized",
    "is_available",
    "get_rank",
    "get_world_size",
}


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
