"""LibCST transforms of the launch concept; imported only when a file is fixed.

The one implementation of `xmp.spawn`'s fix; `checks/launch.py` checks its preconditions on the
`ast` and chooses its options.
"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.analysis.values import Decline
from neuron_migrate.checks.launch import Spawn
from neuron_migrate.checks.toolkit_cst import SIMPLE_OPERANDS, by_name, call_statement, relaid

_SPAWN = ("fn", "args", "nprocs", "start_method")


_LAUNCH = ("fn", "args", "start_method", "debug_single_process")


def spawn(node: cst.CSTNode, options: Spawn) -> cst.CSTNode | cst.FlattenSentinel[cst.BaseStatement]:
    """`xmp.spawn(fn, args=(a,))` -> `fn(<rank>, a)`; as a statement with a guard, `if <guard>:` /
    `<init>` before it (and `if <guard>:` / `<destroy>` after it, with a destroy). The arguments'
    comments and the call's layout are kept."""
    if options.guard:
        line, call = call_statement(node)
    elif isinstance(node, cst.Call):
        line, call = None, node
    else:
        raise Decline
    given = by_name(call, _LAUNCH if options.launch else _SPAWN)
    fn = given.get("fn")
    if fn is None:
        raise Decline
    func = fn.value
    if not isinstance(func, SIMPLE_OPERANDS):
        func = func.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    args = [cst.Arg(value=cst.parse_expression(options.rank))]
    extra = given.get("args")
    if extra is not None:
        value = extra.value
        if isinstance(value, (cst.Tuple, cst.List)) and (isinstance(value, cst.List) or value.lpar):
            args += _element_arguments(value)
        else:
            args.append(cst.Arg(value=value, star="*", comma=extra.comma))
    new = relaid(call, func, args)
    if line is None:
        return new
    started = _guarded(options.guard, options.init).with_changes(leading_lines=line.leading_lines)
    statements: list[cst.BaseStatement] = [started, line.with_changes(body=[cst.Expr(new)], leading_lines=())]
    if options.destroy:
        statements.append(_guarded(options.guard, options.destroy))
    return cst.FlattenSentinel(statements)


def _guarded(guard: str, call: str) -> cst.If:
    """`if <guard>:` / `<call>`."""
    body = cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[cst.Expr(cst.parse_expression(call))])])
    return cst.If(test=cst.parse_expression(guard), body=body)


def _element_arguments(value: cst.Tuple | cst.List) -> list[cst.Arg]:
    """A tuple's or list's elements as arguments (`*rest` spread as it was), the comment after
    the last one kept on it."""
    args = [
        cst.Arg(value=e.value, comma=e.comma, star="*" if isinstance(e, cst.StarredElement) else "")
        for e in value.elements
    ]
    closing = value.rpar[0].whitespace_before if isinstance(value, cst.Tuple) else value.rbracket.whitespace_before
    if args and isinstance(closing, cst.ParenthesizedWhitespace) and closing.first_line.comment is not None:
        last = args[-1]
        comma = last.comma if isinstance(last.comma, cst.Comma) else cst.Comma()
        args[-1] = last.with_changes(comma=comma.with_changes(whitespace_after=closing))
    return args
