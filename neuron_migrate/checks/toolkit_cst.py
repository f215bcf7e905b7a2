"""LibCST layout helpers shared by the concept modules' `_cst` transforms (structural fixes).

Transforms that build a call from the old call's arguments use `relaid`: one argument per line
stays one per line, a call that fits stays on one line. Imported only when a file is fixed.
"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.analysis.values import Decline

SIMPLE_OPERANDS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


def call_statement(stmt: cst.CSTNode) -> tuple[cst.SimpleStatementLine, cst.Call]:
    """The statement `call(...)` standing alone on its line, or Decline."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        raise Decline
    expr = stmt.body[0]
    if not isinstance(expr, cst.Expr) or not isinstance(expr.value, cst.Call):
        raise Decline
    return stmt, expr.value


# -- arguments rebuilt, laid out as the call was ------------------------------------------------
_NO_SPACE = cst.SimpleWhitespace("")


_SPACE = cst.SimpleWhitespace(" ")


def relaid(original: cst.Call, func: cst.BaseExpression, args: list[cst.Arg]) -> cst.Call:
    """`func(*args)` laid out as `original` was: one argument per line (its trailing comma kept)
    when it was, else inline; each argument keeps the comment after it, and continuation lines
    aligned with the opening parenthesis move with it."""
    old = list(original.args)
    if not args:
        return original.with_changes(func=func, args=(), whitespace_before_args=_NO_SPACE)
    opening = original.whitespace_before_args
    per_line = isinstance(opening, cst.ParenthesizedWhitespace)
    last_old = old[-1] if old else None
    out: list[cst.Arg] = []
    for index, arg in enumerate(args):
        if index < len(args) - 1:
            out.append(
                arg.with_changes(
                    comma=_between(arg.comma, opening if per_line else None), whitespace_after_arg=_NO_SPACE
                )
            )
        elif last_old is None:
            out.append(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=_NO_SPACE))
        else:
            out.append(_closing(arg, last_old))
    return realigned(original, original.with_changes(func=func, args=out))


def realigned(original: cst.Call, new: cst.Call) -> cst.Call:
    """`new` (`original` with another callee), its continuation lines moved as far as its opening
    parenthesis moved, when they were aligned with it (the first argument on the call's line)."""
    if isinstance(original.whitespace_before_args, cst.ParenthesizedWhitespace):
        return new  # one argument per line: indented from the statement, which LibCST keeps
    old_width, new_width = _width(original.func), _width(new.func)
    if not old_width or not new_width or old_width == new_width:
        return new
    scan = _Scan()
    for arg in new.args:
        arg.visit(scan)
    if not scan.continued or scan.multiline_string:
        return new  # a multi-line string cannot move with its call: its lines stay, and so do the others
    shift = _Shift(new_width - old_width)
    return new.with_changes(args=[arg.visit(shift) for arg in new.args])


def _between(comma: cst.Comma | cst.MaybeSentinel, opening: cst.BaseParenthesizableWhitespace | None) -> cst.Comma:
    """The comma after a non-final argument: its own, or a new one; on its own line when `opening`
    (a one-per-line call's first line break) is given."""
    own = comma if isinstance(comma, cst.Comma) else cst.Comma(whitespace_after=_SPACE)
    if opening is None:
        return own
    assert isinstance(opening, cst.ParenthesizedWhitespace)
    after = own.whitespace_after
    first = after.first_line if isinstance(after, cst.ParenthesizedWhitespace) else cst.TrailingWhitespace()
    lines = after.empty_lines if isinstance(after, cst.ParenthesizedWhitespace) else ()
    return own.with_changes(
        whitespace_before=_NO_SPACE,
        whitespace_after=cst.ParenthesizedWhitespace(
            first_line=first, empty_lines=lines, indent=opening.indent, last_line=opening.last_line
        ),
    )


def _closing(arg: cst.Arg, last_old: cst.Arg) -> cst.Arg:
    """The final argument, ending as the call's last one did (trailing comma, line break, the
    closing parenthesis's indentation); a comment after it is kept."""
    comma = last_old.comma
    if arg.value is last_old.value:
        return arg.with_changes(comma=comma, whitespace_after_arg=last_old.whitespace_after_arg)
    own = arg.comma
    if isinstance(comma, cst.Comma) and isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace):
        after = comma.whitespace_after
        mine = own.whitespace_after if isinstance(own, cst.Comma) else None
        first = mine.first_line if isinstance(mine, cst.ParenthesizedWhitespace) else cst.TrailingWhitespace()
        comma = comma.with_changes(
            whitespace_after=after.with_changes(first_line=first)
        )  # the dropped argument's comment goes with it
    return arg.with_changes(comma=comma, whitespace_after_arg=last_old.whitespace_after_arg)


def _width(node: cst.BaseExpression) -> int:
    """The width of a callee written `a.b.c` (0 for anything else)."""
    if node.lpar:
        return 0
    if isinstance(node, cst.Name):
        return len(node.value)
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.dot.whitespace_before, cst.SimpleWhitespace)
        and isinstance(node.dot.whitespace_after, cst.SimpleWhitespace)
    ):
        inner = _width(node.value)
        dot = len(node.dot.whitespace_before.value) + len(node.dot.whitespace_after.value) + 1
        return inner + dot + len(node.attr.value) if inner else 0
    return 0


class _Scan(cst.CSTVisitor):
    """Whether arguments have continuation lines, and a string spanning lines."""

    def __init__(self) -> None:
        super().__init__()
        self.continued = False
        self.multiline_string = False

    def visit_ParenthesizedWhitespace(self, node: cst.ParenthesizedWhitespace) -> None:
        self.continued = True

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self.multiline_string |= "\n" in node.value or "\r" in node.value

    def visit_FormattedStringText(self, node: cst.FormattedStringText) -> None:
        self.multiline_string |= "\n" in node.value or "\r" in node.value


class _Shift(cst.CSTTransformer):
    """Moves every continuation line by `shift` columns (never left of its block)."""

    def __init__(self, shift: int) -> None:
        super().__init__()
        self.shift = shift

    def leave_ParenthesizedWhitespace(
        self, original: cst.ParenthesizedWhitespace, updated: cst.ParenthesizedWhitespace
    ) -> cst.ParenthesizedWhitespace:
        width = max(len(updated.last_line.value) + self.shift, 1)
        return updated.with_changes(last_line=cst.SimpleWhitespace(" " * width))


def by_name(call: cst.Call, names: tuple[str, ...]) -> dict[str, cst.Arg]:
    """The call's arguments by parameter name (`names` in positional order); Decline on `*`/`**`."""
    found: dict[str, cst.Arg] = {}
    for position, arg in enumerate(call.args):
        if arg.star:
            raise Decline
        if arg.keyword is not None:
            found[arg.keyword.value] = arg
        elif position < len(names):
            found[names[position]] = arg
        else:
            raise Decline
    return found


def positional(arg: cst.Arg) -> cst.Arg:
    return arg.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT)
