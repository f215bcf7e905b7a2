"""Text edits that change a call's callee and arguments while keeping its layout.

Each edit touches only what changes, so the call keeps its line breaks and the comments after
its arguments, and one argument per line stays one per line:

- `renamed(ctx, call, text)`: the callee replaced; continuation lines aligned with the opening
  parenthesis move with it when its width changes (never those of a multi-line string);
- `appended(ctx, call, text)`: a new last argument, on a line of its own after a trailing comma
  that ends a line, else after the last argument;
- `inserted(ctx, call, before, text)`: a new argument in front of `before`;
- `dropped(ctx, call, node)`: an argument removed, with its comment when it stands on its lines;
- `one_line(ctx, node, edits)`: what the node reads after the edits, in one line, for messages.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize

from neuron_migrate.analysis.values import Edit
from neuron_migrate.checks.toolkit import FixContext

Argument = ast.expr | ast.keyword
_DOTTED = re.compile(r"[^\W\d]\w*(?:[ \t]*\.[ \t]*[^\W\d]\w*)*")


def arguments(call: ast.Call) -> list[Argument]:
    """The call's arguments, positional and keyword, in the order they are written."""
    return sorted([*call.args, *call.keywords], key=lambda n: (n.lineno, n.col_offset))


def opening(ctx: FixContext, call: ast.Call) -> int:
    """The offset right after the call's opening parenthesis."""
    func_end = ctx.src.node_span(call.func)[1]
    return ctx.src.text.index("(", func_end) + 1


def one_per_line(ctx: FixContext, call: ast.Call) -> bool:
    """Whether the first argument starts a line of its own (`f(\\n    a, ...`)."""
    items = arguments(call)
    end = ctx.src.node_span(items[0])[0] if items else ctx.src.node_span(call)[1] - 1
    return _breaks(ctx.src.text[opening(ctx, call) : end])


def renamed(ctx: FixContext, call: ast.Call, text: str) -> list[Edit]:
    """The callee replaced by `text`, and the continuation lines aligned with the call's opening
    parenthesis moved as far as it moves (see `moved`)."""
    start, end = ctx.src.node_span(call.func)
    return [Edit(start, end, text), *shifted(ctx, call, moved(ctx, call, text))]


def moved(ctx: FixContext, call: ast.Call, callee: str) -> int:
    """How far the call's continuation lines move when its callee becomes `callee`: as far as its
    opening parenthesis, when they are aligned with it (the first argument on the call's line, a
    callee written `a.b.c` before and after, no multi-line string among the arguments); else 0."""
    old, new = _width(ctx.segment(call.func)), _width(callee)
    if not old or not new or one_per_line(ctx, call) or _multiline_string(ctx, call):
        return 0
    return new - old


def shifted(ctx: FixContext, call: ast.Call, shift: int) -> list[Edit]:
    """Edits that move each continuation line of the call's arguments by `shift` columns (at
    least one space is left). Comment and blank lines stay, as do lines after a backslash."""
    if shift == 0:
        return []
    src = ctx.src
    first = src.position(opening(ctx, call)).line
    last = call.end_lineno or call.lineno
    edits = []
    for line in range(first + 1, last + 1):
        text = src.line_text(line)
        if not text.strip() or text.lstrip().startswith("#") or src.line_text(line - 1).rstrip().endswith("\\"):
            continue
        indent = len(text) - len(text.lstrip(" \t"))
        at = src.line_start(line)
        edits.append(Edit(at, at + indent, " " * max(indent + shift, 1)))
    return edits


def appended(ctx: FixContext, call: ast.Call, text: str | tuple[str, ...], shift: int = 0) -> Edit:
    """The edit that adds `text` (or each of several arguments, in order) as the call's last
    argument(s), laid out as the others are.

    After a trailing comma that ends its line, each new argument takes a line of its own (and a
    trailing comma), indented as the arguments are; after a trailing comma on the same line they
    follow it (`f(a, b, new,)`); else they follow the last argument, before any comment. `shift`
    is how far `renamed` moves the continuation lines (`moved`).
    """
    texts = (text,) if isinstance(text, str) else text
    joined = ", ".join(texts)
    src = ctx.src
    close = src.node_span(call)[1] - 1
    items = arguments(call)
    if not items:
        return Edit(close, close, joined)
    end = src.node_span(items[-1])[1]
    comma = _comma_after(src.text, end, close)
    if comma is None:
        return Edit(end, end, f", {joined}")
    after = src.text[comma + 1 : close]
    step = _argument_indent(ctx, call, items) if _breaks(after) else None
    if step is None:
        return Edit(comma + 1, comma + 1, f" {joined},")
    if shift:
        step = " " * max(len(step) + shift, 1)
    line_end = comma + 1 + min(i for i in (after.find("\n"), after.find("\r")) if i >= 0)
    line_end += 2 if src.text.startswith("\r\n", line_end) else 1
    return Edit(line_end, line_end, "".join(f"{step}{part},{src.newline}" for part in texts))


def inserted(ctx: FixContext, call: ast.Call, before: Argument, text: str) -> Edit:
    """The edit that adds `text` as an argument right in front of `before`: on a line of its
    own when the arguments stand one per line."""
    start = ctx.src.node_span(before)[0]
    if one_per_line(ctx, call):
        items = arguments(call)
        indent = ctx.src.text[ctx.src.line_start(ctx.src.position(ctx.src.node_span(items[0])[0]).line) :]
        indent = indent[: len(indent) - len(indent.lstrip(" \t"))]
        return Edit(start, start, f"{text},{ctx.src.newline}{indent}")
    return Edit(start, start, f"{text}, ")


def dropped(ctx: FixContext, call: ast.Call, node: Argument) -> Edit:
    """The edit that removes one argument (not the first) with the comma before it; standing on
    lines of its own, those lines go (its comment with them) and the comma before it stays."""
    src = ctx.src
    items = arguments(call)
    index = next(i for i, item in enumerate(items) if item is node)
    start, end = src.node_span(node)
    if index + 1 < len(items):
        return Edit(start, src.node_span(items[index + 1])[0], "")
    before = src.node_span(items[index - 1])[1]
    own_lines = _breaks(src.text[before:start]) and not src.text[src.line_start(node.lineno) : start].strip()
    if not own_lines:
        return Edit(before, end, "")
    close = src.node_span(call)[1] - 1
    comma = _comma_after(src.text, end, close)
    last = src.position(comma if comma is not None else end).line
    if src.position(close).line == last:
        return Edit(before, end, "")  # `)` on the same line: `f(a,\n  b)` -> `f(a)`
    return Edit(src.line_start(node.lineno), src.line_start(last + 1), "")


def one_line(ctx: FixContext, node: ast.AST, edits: list[Edit]) -> str:
    """The node's text once `edits` (those inside it) are made, in one line: comments dropped,
    line breaks inside brackets joined, a trailing comma before a closing bracket dropped."""
    start, end = ctx.src.node_span(node)
    text = ctx.src.text[start:end]
    for edit in sorted((e for e in edits if start <= e.start and e.end <= end), reverse=True):
        text = text[: edit.start - start] + edit.text + text[edit.end - start :]
    if not _breaks(text):
        return text
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    previous: tokenize.TokenInfo | None = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in _LAYOUT_TOKENS:
                continue
            if previous is not None and previous.end[0] == token.start[0]:
                out.append(lines[token.start[0] - 1][previous.end[1] : token.start[1]])
            elif previous is not None:
                if token.string in ")]}" and previous.string == ",":
                    out.pop()  # a trailing comma before a closing bracket
                out.append("" if previous.string in "([{" or token.string in ")]}" else " ")
            out.append(token.string)
            previous = token
    except (tokenize.TokenError, SyntaxError):
        return " ".join(text.split())
    return "".join(out)


_LAYOUT_TOKENS = frozenset(
    {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
)


def _argument_indent(ctx: FixContext, call: ast.Call, items: list[Argument]) -> str | None:
    """The indentation of the arguments when one stands at the start of a line: the whitespace
    before the first argument that follows a line break, else None."""
    text = ctx.src.text
    previous = opening(ctx, call)
    for item in items:
        start, end = ctx.src.node_span(item)
        between = text[previous:start]
        if _breaks(between):
            return between[max(between.rfind("\n"), between.rfind("\r")) + 1 :]
        previous = end
    return None


def _comma_after(text: str, end: int, close: int) -> int | None:
    """The offset of the comma that follows an argument ending at `end`, before `close`."""
    at = end
    while at < close:
        char = text[at]
        if char == ",":
            return at
        if char == "#":
            newline = min(i for i in (text.find("\n", at), text.find("\r", at), close) if i >= 0)
            at = newline
            continue
        if not char.isspace() and char != "\\":
            return None
        at += 1
    return None


def _breaks(text: str) -> bool:
    return "\n" in text or "\r" in text


def _width(callee: str) -> int:
    """The width of a callee written `a.b.c` (0 for anything else)."""
    return len(callee) if _DOTTED.fullmatch(callee) else 0


def _multiline_string(ctx: FixContext, call: ast.Call) -> bool:
    """Whether a string literal among the arguments spans lines (triple-quoted, or continued with
    a backslash); strings joined across lines by juxtaposition are one string per line."""
    for item in arguments(call):
        for node in ast.walk(item):
            if isinstance(node, (ast.Constant, ast.JoinedStr)) and node.lineno != node.end_lineno:
                text = ctx.segment(node)
                if '"""' in text or "'''" in text or re.search(r"\\\r?\n", text):
                    return True
    return False
