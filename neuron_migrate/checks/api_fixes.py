"""Fixes for the API, dtype and torch.compile rules (see api_detectors / compile_detectors).

Pure functions (FixContext, Match) -> Plan | None, joined with `fixes.FIXES` by the registry. This module imports
`fixes` only for type checking, so `fixes` can import it without a cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from neuron_migrate.analysis.analyze import Match, Plan

if TYPE_CHECKING:
    from neuron_migrate.checks.fixes import FixContext


def rename_method(ctx: FixContext, match: Match) -> Plan | None:
    """`x.double()` -> `x.float()`: only the method name changes."""
    call = match.node
    new = dict(match.extra).get("new")
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute) or new is None:
        return None
    end = ctx.src.node_span(call.func)[1]
    start = end - len(call.func.attr)
    if ctx.src.text[start:end] != call.func.attr:
        return None  # a line continuation or comment between the dot and the name
    return Plan(((start, end, new),))


def remove_keyword(ctx: FixContext, match: Match) -> Plan | None:
    """Delete the matched keyword argument and the comma that joins it to its neighbour."""
    keyword = match.node
    call = ctx.analysis.parent(keyword)
    if not isinstance(keyword, ast.keyword) or not isinstance(call, ast.Call):
        return None
    items: list[ast.expr | ast.keyword] = sorted([*call.args, *call.keywords], key=lambda n: (n.lineno, n.col_offset))
    start, end = ctx.src.node_span(keyword)
    position = next(i for i, item in enumerate(items) if item is keyword)
    if position > 0:
        start = ctx.src.node_span(items[position - 1])[1]
    elif len(items) > 1:
        end = ctx.src.node_span(items[1])[0]
    if "#" in ctx.src.text[start:end]:
        return None  # a comment would go with it
    return Plan(((start, end, ""),))


def add_keyword(ctx: FixContext, match: Match) -> Plan | None:
    """Append a keyword argument (`extra["keyword"]`) to a call, or call a bare decorator with it."""
    keyword = dict(match.extra).get("keyword")
    node = match.node
    if keyword is None:
        return None
    if not isinstance(node, ast.Call):
        return ctx.replace(node, f"{ctx.segment(node)}({keyword})")
    inner = ctx.args_text(node)
    if "#" in inner:
        return None
    close = ctx.src.node_span(node)[1] - 1
    content_end = close - (len(inner) - len(inner.rstrip()))
    stripped = inner.strip()
    closing_on_own_line = "\n" in inner[len(inner.rstrip()) :] or "\r" in inner[len(inner.rstrip()) :]
    if stripped.endswith(",") and closing_on_own_line:  # one argument per line: add another line
        arguments: list[ast.expr | ast.keyword] = [*node.args, *node.keywords]
        last = max(arguments, key=lambda n: (n.lineno, n.col_offset))
        indent = ctx.src.indent_of(last.lineno)
        return Plan(((content_end, content_end, f"{ctx.src.newline}{indent}{keyword},"),))
    separator = "" if not stripped else " " if stripped.endswith(",") else ", "
    return Plan(((content_end, content_end, f"{separator}{keyword}"),))


FIXES: Mapping[str, Callable[[FixContext, Match], Plan | None]] = MappingProxyType(
    {
        "rename_method": rename_method,
        "remove_keyword": remove_keyword,
        "add_keyword": add_keyword,
    }
)
