"""LibCST transforms behind the built-in fixes that must keep comments and layout.

Each is named by a fix in `fixes.py` (`Rewrite("neuron_migrate.checks.cst_fixes:<name>")`) and
runs only when a file is fixed; `check` reports the text edit planned beside it. The interface
is described in `analysis/transform.py`.
"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.analysis.transform import Decline

_SIMPLE_OPERANDS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


def _call_statement(stmt: cst.CSTNode) -> tuple[cst.SimpleStatementLine, cst.Call]:
    """The statement `call(...)` standing alone on its line, or Decline."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        raise Decline
    expr = stmt.body[0]
    if not isinstance(expr, cst.Expr) or not isinstance(expr.value, cst.Call):
        raise Decline
    return stmt, expr.value


def _guarded(stmt: cst.SimpleStatementLine, guard: str, inner: cst.BaseExpression) -> cst.If:
    """`if <guard>:` around the statement `inner`, which keeps the statement's trailing comment."""
    body = stmt.with_changes(body=[cst.Expr(inner)], leading_lines=())
    return cst.If(test=cst.parse_expression(guard), body=cst.IndentedBlock(body=[body]), leading_lines=stmt.leading_lines)


def master_print(stmt: cst.CSTNode, guard: str) -> cst.CSTNode:
    """`xm.master_print(x, fd=f)` -> `if <guard>:` / `print(x, file=f)`, every comment kept."""
    line, call = _call_statement(stmt)
    args = []
    for arg in call.args:
        if arg.star:
            raise Decline
        if arg.keyword is not None:
            if arg.keyword.value != "fd":
                raise Decline
            arg = arg.with_changes(keyword=cst.Name("file"))
        args.append(arg)
    return _guarded(line, guard, call.with_changes(func=cst.Name("print"), args=args))


def guarded_call(stmt: cst.CSTNode, guard: str, call: str) -> cst.CSTNode:
    """`xm.rendezvous(tag)` -> `if <guard>:` / `<call>`, the trailing comment kept on the call."""
    line, _ = _call_statement(stmt)
    return _guarded(line, guard, cst.parse_expression(call))


def rename_call(node: cst.CSTNode, func: str, keyword: str = "") -> cst.CSTNode:
    """Call `func` with the same arguments; with `keyword` (`name=value`), add it unless present."""
    if not isinstance(node, cst.Call):
        raise Decline
    new = node.with_changes(func=cst.parse_expression(func))
    if keyword:
        argument = _keyword_argument(keyword)
        if any(a.keyword is not None and a.keyword.value == argument.keyword.value for a in node.args):  # type: ignore[union-attr]
            return new
        new = append_argument(new, argument)
    return new


def add_keyword(node: cst.CSTNode, keyword: str) -> cst.CSTNode:
    """Append the keyword argument `keyword` (`name=value`) to a call, keeping its layout."""
    if not isinstance(node, cst.Call):
        raise Decline
    return append_argument(node, _keyword_argument(keyword))


def step_closure(node: cst.CSTNode) -> cst.CSTNode:
    """`xm.add_step_closure(fn, args=(a, b))` -> `fn(a, b)`, the arguments' comments kept."""
    if not isinstance(node, cst.Call):
        raise Decline
    closure: cst.BaseExpression | None = None
    arguments: cst.BaseExpression | None = None
    for position, arg in enumerate(node.args):
        name = arg.keyword.value if arg.keyword is not None else ("closure", "args", "run_async")[position] if position < 3 else ""
        if arg.star or name not in ("closure", "args", "run_async"):
            raise Decline
        if name == "closure":
            closure = arg.value
        elif name == "args":
            arguments = arg.value
    if closure is None:
        raise Decline
    if not isinstance(closure, _SIMPLE_OPERANDS):
        closure = closure.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return _call_with(closure, arguments)


def _call_with(func: cst.BaseExpression, value: cst.BaseExpression | None) -> cst.Call:
    """`func(*value)`, spelled out when `value` is a tuple or list: its layout and comments kept."""
    if value is None:
        return cst.Call(func=func)
    if not isinstance(value, (cst.Tuple, cst.List)) or (isinstance(value, cst.Tuple) and not value.lpar):
        return cst.Call(func=func, args=[cst.Arg(value=value, star="*")])
    if any(isinstance(e, cst.StarredElement) for e in value.elements):
        raise Decline
    if isinstance(value, cst.Tuple):
        opening, closing = value.lpar[0].whitespace_after, value.rpar[0].whitespace_before
    else:
        opening, closing = value.lbracket.whitespace_after, value.rbracket.whitespace_before
    args = [cst.Arg(value=e.value, comma=e.comma) for e in value.elements]
    if not args:
        return cst.Call(func=func)
    last = args[-1]
    if len(args) == 1 and isinstance(value, cst.Tuple) and not isinstance(closing, cst.ParenthesizedWhitespace):
        last = last.with_changes(comma=cst.MaybeSentinel.DEFAULT)  # `(a,)` -> `fn(a)`
    args[-1] = last.with_changes(whitespace_after_arg=closing)
    return cst.Call(func=func, args=args, whitespace_before_args=opening)


def _keyword_argument(keyword: str) -> cst.Arg:
    call = cst.parse_expression(f"f({keyword})")
    assert isinstance(call, cst.Call) and len(call.args) == 1 and call.args[0].keyword is not None
    return call.args[0].with_changes(comma=cst.MaybeSentinel.DEFAULT)


def append_argument(call: cst.Call, argument: cst.Arg) -> cst.Call:
    """`call` with `argument` last, laid out like the others (one per line stays one per line).

    A trailing comma is kept; the comments after the old last argument stay with it.
    """
    args = list(call.args)
    if not args:
        return call.with_changes(args=[argument])
    last = args[-1]
    comma = last.comma
    if isinstance(comma, cst.Comma):  # a trailing comma: the new argument gets one too
        after = comma.whitespace_after
        if isinstance(after, cst.ParenthesizedWhitespace):
            step = _argument_indent(call, args)
            if step is None:
                raise Decline
            kept = after.with_changes(last_line=cst.SimpleWhitespace(step), empty_lines=())
            closing = cst.ParenthesizedWhitespace(
                first_line=cst.TrailingWhitespace(), empty_lines=after.empty_lines, indent=after.indent, last_line=after.last_line
            )
            args[-1] = last.with_changes(comma=comma.with_changes(whitespace_after=kept))
            args.append(argument.with_changes(comma=cst.Comma(whitespace_after=closing)))
        else:
            args[-1] = last.with_changes(comma=comma.with_changes(whitespace_after=cst.SimpleWhitespace(" ")))
            args.append(argument.with_changes(comma=comma))
        return call.with_changes(args=args)
    args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")), whitespace_after_arg=cst.SimpleWhitespace(""))
    args.append(argument.with_changes(whitespace_after_arg=last.whitespace_after_arg))
    return call.with_changes(args=args)


def _argument_indent(call: cst.Call, args: list[cst.Arg]) -> str | None:
    """The indentation of a call's arguments when each stands on its own line."""
    for before in [call.whitespace_before_args, *(a.comma.whitespace_after for a in args[:-1] if isinstance(a.comma, cst.Comma))]:
        if isinstance(before, cst.ParenthesizedWhitespace):
            return before.last_line.value
    return None
