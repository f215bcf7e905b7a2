"""Fixes written as LibCST transforms, applied to the finding's node when a file is fixed.

Detection stays on the stdlib `ast`, and a plain check never imports LibCST. A fix that wants
LibCST's formatting guarantees (comments inside a call, parentheses, layout, indentation) plans
its text edit as usual, which `check` reports, and names a transform that `--fix` applies instead:

    # a fix function, registered like the others (FixContext, Match) -> Plan | None
    def my_fix(ctx: FixContext, match: Match) -> Plan | None:
        plan = ctx.replace(match.node, "torch.neuron.thing()")       # what `check` shows
        return ctx.with_rewrite(plan, match.node, "mypkg.nm_rules:thing", name="thing")

    # mypkg/nm_rules.py: imported only when a file is fixed
    def thing(node: cst.BaseExpression, name: str) -> cst.BaseExpression:
        if not isinstance(node, cst.Call):
            raise Decline                   # keep the text edit
        return node.with_changes(func=cst.parse_expression(f"torch.neuron.{name}"))

The transform is called with the LibCST node of the span and the plan's `options` (strings chosen
at plan time, such as the name `torch` goes by here):

- an expression (`ast.expr` given to `with_rewrite`): the node parsed from its span, a `Call`,
  `Attribute`, ...; return the new expression. It is parenthesised where its precedence needs
  it, and its strings take the quotes that fit an enclosing f-string.
- a statement standing on its own lines: a `SimpleStatementLine` or compound statement, at its
  own indentation (new blocks take the file's indentation step); return a statement, a
  `FlattenSentinel` of statements, or `RemovalSentinel.REMOVE` (its comments, tool pragmas
  aside, stay on their own lines).

Imports the new code needs go in the plan's `imports` (keys of `analysis.analyze.IMPORTS`, or
`helper:<name>:<torch>` for a helper), as for text edits; `--fix` adds each once per file with
LibCST (`engine/add_imports_cst.py`: after the last import of its group; helpers as parsed module
fragments after the imports). When the span cannot be parsed on its own or the transform raises
`Decline` (or returns the node unchanged), the text edit is applied instead, so a transform can
only improve on it.

The node is parsed from the span's own text, not looked up in a whole-module parse with
`PositionProvider`: the result is the same node, and it is far cheaper. On 50 files of the
benchmark's corpus (a) (interleaved, best of 5): a module parse took 51 ms a file, with
`PositionProvider` or `ByteSpanPositionProvider` metadata about 3.1 to 3.3 times that, and the
span parses of every rewritten call 2.6 ms a file. The one whole-module parse a fix run makes is
`verify`'s; new imports and helpers parse only the module's head (`engine/add_imports_cst.py`).

Transforms that build calls from the old call's arguments use `checks.toolkit_cst.relaid`: one
argument per line stays one per line, each argument keeps the comment after it, and
continuation lines aligned with the opening parenthesis move with it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import libcst as cst

from neuron_migrate.analysis.source import fit_quotes, kept_comments
from neuron_migrate.analysis.values import EXPRESSION, STATEMENT, Decline, Rewrite

__all__ = ["EXPRESSION", "STATEMENT", "Decline", "Rewrite", "apply_rewrite"]

TransformFn = Callable[..., Any]
_WRAPPER = "if True:"  # a statement is parsed inside this, at its own indentation


def resolve(function: str | TransformFn) -> TransformFn:
    """A transform given as `"package.module:function"` or as the function itself."""
    if not isinstance(function, str):
        return function
    module, _, name = function.partition(":")
    return getattr(importlib.import_module(module), name)


def apply_rewrite(rewrite: Rewrite, text: str, indent_unit: str, newline: str) -> str | None:
    """The new text for `text` (the span `rewrite` refines), or None to keep the text edit."""
    function = resolve(rewrite.function)
    options = dict(rewrite.options)
    try:
        if rewrite.kind == EXPRESSION:
            return _rewrite_expression(function, rewrite, options, text)
        return _rewrite_statement(function, options, text, indent_unit, newline)
    except (Decline, cst.ParserSyntaxError, cst.CSTValidationError):
        return None


def _rewrite_expression(function: TransformFn, rewrite: Rewrite, options: dict[str, str], text: str) -> str | None:
    node = cst.parse_expression(text)
    new = function(node, **options)
    if new is node or not isinstance(new, cst.BaseExpression):
        return None
    if rewrite.parenthesize and not new.lpar:
        new = new.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    code = cst.Module([]).code_for_node(new)
    return fit_quotes(code, rewrite.quotes) if rewrite.quotes else code


def _rewrite_statement(
    function: TransformFn, options: dict[str, str], text: str, unit: str, newline: str
) -> str | None:
    """Rewrite the statement on `text`'s lines, keeping its indentation and everything around it."""
    indent = text[: len(text) - len(text.lstrip(" \t"))]
    if not indent:  # a module-level statement: parse it as a module of its own
        module = cst.parse_module(text).with_changes(default_indent=unit, default_newline=newline)
        if len(module.body) != 1:
            return None
        new = function(module.body[0], **options)
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
    new = function(old, **options)
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
