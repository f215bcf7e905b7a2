"""Structural fixes: a plan's LibCST transform, applied to its node's span.

Detection and planning stay on the stdlib `ast`; this module (and LibCST with it) is imported
only when a file is fixed, or when an output format shows a structural fix's edits. A fix plans
one with `ctx.transform(node, "package.module:function", options)`:

    # checks/<concept>.py: the fix, on the `ast`
    def master_print(ctx: FixContext, match: Match) -> Plan | None:
        ...                                   # every precondition the transform needs
        return ctx.transform(stmt, "neuron_migrate.checks.ranks_cst:master_print", Guard(test))

    # checks/<concept>_cst.py: the transform, on LibCST
    def master_print(stmt: cst.CSTNode, options: Guard) -> cst.CSTNode:
        ...

The transform is called with the LibCST node parsed from the span and the plan's options:

- an expression (an `ast.expr` given to `ctx.transform`): the node parsed from its span, a
  `Call`, `Attribute`, ...; return the new expression. A low-precedence result is
  parenthesised where its place needs it.
- a statement standing on its own lines: a `SimpleStatementLine` or compound statement, at its
  own indentation (new blocks take the file's indentation step); return a statement, a
  `FlattenSentinel` of statements, or `RemovalSentinel.REMOVE` (its comments, tool pragmas
  aside, stay on their own lines).

Imports the new code needs go in the plan's `imports` (`ImportRequest`, `HelperRequest`), as for
text edits. A transform that raises `Decline` (or returns its node unchanged, or whose span
LibCST cannot parse) is not applied, and its finding stays unfixed: the fix function checks
its preconditions on the `ast` so that this does not happen (`tests/test_transforms.py`).

The node is parsed from the span's own text, not looked up in a whole-module parse with
`PositionProvider`: the result is the same node, for a fraction of the cost
(`docs/performance.md`). Transforms that build calls from the old call's arguments use
`checks.toolkit_cst.relaid`: one argument per line stays one per line, each argument keeps the
comment after it, and continuation lines aligned with the opening parenthesis move with it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import libcst as cst

from neuron_migrate.analysis.source import kept_comments
from neuron_migrate.analysis.values import EXPRESSION, Decline, Edit, Transform

TransformFn = Callable[..., Any]
_WRAPPER = "if True:"  # a statement is parsed inside this, at its own indentation
_LOW_PRECEDENCE = (
    cst.IfExp,
    cst.BooleanOperation,
    cst.Comparison,
    cst.BinaryOperation,
    cst.UnaryOperation,
    cst.Lambda,
    cst.NamedExpr,
)


def resolve(function: str | TransformFn) -> TransformFn:
    """A transform given as `"package.module:function"` or as the function itself."""
    if not isinstance(function, str):
        return function
    module, _, name = function.partition(":")
    return getattr(importlib.import_module(module), name)


def transform_edit(transform: Transform, text: str, indent_unit: str, newline: str) -> Edit | None:
    """The edit that replaces the transform's span (`text` is the file's text), or None when the
    transform declines."""
    start, end = transform.span
    function = resolve(transform.function)
    try:
        if transform.kind == EXPRESSION:
            new = _rewrite_expression(function, transform, text[start:end])
        else:
            new = _rewrite_statement(function, transform.options, text[start:end], indent_unit, newline)
    except (Decline, cst.ParserSyntaxError, cst.CSTValidationError):
        return None
    return None if new is None else Edit(start, end, new)


def _rewrite_expression(function: TransformFn, transform: Transform, text: str) -> str | None:
    node = cst.parse_expression(text)
    new = function(node, transform.options)
    if new is node or not isinstance(new, cst.BaseExpression):
        return None
    if transform.parenthesize and isinstance(new, _LOW_PRECEDENCE) and not new.lpar:
        new = new.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Module([]).code_for_node(new)


def _rewrite_statement(function: TransformFn, options: object, text: str, unit: str, newline: str) -> str | None:
    """Rewrite the statement on `text`'s lines, keeping its indentation and everything around it."""
    indent = text[: len(text) - len(text.lstrip(" \t"))]
    if not indent:  # a module-level statement: parse it as a module of its own
        module = cst.parse_module(text).with_changes(default_indent=unit, default_newline=newline)
        if len(module.body) != 1:
            return None
        new = function(module.body[0], options)
        if new is module.body[0]:
            return None
        if isinstance(new, cst.RemovalSentinel):
            return _comment_lines(text, "", newline)
        return module.with_changes(body=_statements(new)).code
    module = cst.parse_module(_WRAPPER + newline + text).with_changes(default_indent=unit, default_newline=newline)
    wrapper = module.body[0]
    assert isinstance(wrapper, cst.If) and isinstance(wrapper.body, cst.IndentedBlock)
    if len(wrapper.body.body) != 1:
        return None
    old = wrapper.body.body[0]
    new = function(old, options)
    if new is old:
        return None
    if isinstance(new, cst.RemovalSentinel):
        return _comment_lines(text, indent, newline)
    block = wrapper.body.with_changes(body=_statements(new), indent=indent)
    code = module.with_changes(body=[wrapper.with_changes(body=block)]).code
    return code[len(_WRAPPER) + len(newline) :]


def _statements(new: Any) -> list[Any]:
    if isinstance(new, cst.FlattenSentinel):
        return list(new.nodes)
    if isinstance(new, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        return [new]
    raise Decline


def _comment_lines(text: str, indent: str, newline: str) -> str:
    return "".join(f"{indent}{comment}{newline}" for comment in kept_comments(text))
