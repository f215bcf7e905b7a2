"""Small helpers every concept module shares (one copy each): a call's arguments, string
literals, the current accelerator, and `replace_string`, a fix several concepts name.

The fix API itself (`FixContext`) is `checks/toolkit.py`.
"""

from __future__ import annotations

import ast
import dataclasses
import re

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.values import Edit, Match, Plan
from neuron_migrate.catalogue import MapEntry, RuleSpec
from neuron_migrate.checks.toolkit import FixContext
from neuron_migrate.model import Safety
from neuron_migrate.signatures import default_argument


# -- arguments and calls -------------------------------------------------------------------
def keyword_of(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def argument(call: ast.Call, name: str, pos: int) -> ast.expr | None:
    if 0 <= pos < len(call.args):
        return call.args[pos]
    keyword = keyword_of(call, name)
    return keyword.value if keyword else None


def only_args(call: ast.Call, allowed: dict[str, int], match: Match | None = None) -> bool:
    """True when the call passes only the named parameters (name -> position), or (given `match`) defaults."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return False
    if len(call.args) > len([p for p in allowed.values() if p >= 0]):
        return False
    positional = {name for name, pos in allowed.items() if 0 <= pos < len(call.args)}
    known = [k for k in call.keywords if match is None or not is_default(match, k)]
    return all(k.arg in allowed and k.arg not in positional for k in known)


def is_default(match: Match, keyword: ast.keyword) -> bool:
    """Whether `keyword` passes its parameter's default (`flush=False`, in rules/signatures.toml): as if absent."""
    entry = match.entry
    return entry is not None and keyword.arg is not None and default_argument(entry.old, keyword.arg, keyword.value)


def plain_args(call: ast.Call) -> bool:
    return not any(isinstance(a, ast.Starred) for a in call.args) and all(k.arg is not None for k in call.keywords)


def is_type_test(analysis: Analysis, node: ast.AST) -> bool:
    """Whether `node` names a class a type test checks: `isinstance(x, C)`, `issubclass(t, (a, C))`, `except C:`."""
    parent = analysis.parent(node)
    if isinstance(parent, ast.Tuple):
        node, parent = parent, analysis.parent(parent)
    if isinstance(parent, ast.ExceptHandler):
        return parent.type is node
    if not isinstance(parent, ast.Call) or len(parent.args) != 2 or parent.args[1] is not node:
        return False
    return isinstance(parent.func, ast.Name) and parent.func.id in ("isinstance", "issubclass")


def matched_call(match: Match) -> ast.Call | None:
    return match.node if isinstance(match.node, ast.Call) else None


def literal(node: ast.AST | None) -> object:
    try:
        return ast.literal_eval(node) if node is not None else None
    except ValueError:
        return ...


def operand(ctx: FixContext, node: ast.AST) -> str:
    text = ctx.segment(node)
    if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
        return text
    return f"({text})"


def entry_for(rule: RuleSpec, value: str) -> MapEntry | None:
    """The rule's map entry for an exact value, or the longest matching `prefix` entry."""
    best: MapEntry | None = None
    for entry in rule.maps:
        if entry.old == value:
            return entry
        if entry.prefix and value.startswith(entry.old) and (best is None or len(entry.old) > len(best.old)):
            best = entry
    return best


def line_length(text: str) -> int:
    """The file's apparent line length: its longest line, but at least 79 (PEP 8)."""
    return max([79, *(len(line) for line in text.splitlines())])


# -- strings -------------------------------------------------------------------------------
def string_value(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


STRING_LITERAL = re.compile(r"([rRuU]?)('''|\"\"\"|'|\")(.*)\2", re.DOTALL)


def string_literal(ctx: FixContext, node: ast.AST, value: str) -> str | None:
    """`value` as a string literal in the quote style of `node`, or None for f-strings and concatenation."""
    found = STRING_LITERAL.fullmatch(ctx.segment(node))
    return f"{found.group(1)}{found.group(2)}{value}{found.group(2)}" if found else None


def replace_node(
    ctx: FixContext, match: Match, node: ast.AST, template: str, safety: Safety | None = None
) -> Plan | None:
    rendered = ctx.render(template, match)
    if rendered is None:
        return None
    return ctx.replace(node, rendered[0], rendered[1], safety=safety)


# -- the current accelerator (`--target accelerator`) ---------------------------------------
# The accelerator, or the CPU where there is none (a CUDA build without a GPU counts as none); torch 2.13 and 2.14.
# Written once into the module as `_DEVICE` (the `{accelerator}` placeholder of `FixContext.render`).
ACCEL_DEVICE = "{accelerator}"
ACCEL_TYPE = "{accelerator}.type"
_AUTOCAST_CALLS = frozenset({"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"})


def wants_accelerator(ctx: FixContext, match: Match) -> bool:
    return ctx.analysis.target == "accelerator"


def synchronize(ctx: FixContext, match: Match, arguments: str = "") -> Plan | None:
    """The matched call -> `torch.accelerator.synchronize(arguments)`. With `--target accelerator`
    it waits only where there is an accelerator (it raises on a machine without one): a statement
    becomes `if torch.accelerator.is_available():` over the call, an expression a conditional one."""
    call = f"{{torch}}.accelerator.synchronize({arguments})"
    stmt = ctx.expression_statement(match)
    if not wants_accelerator(ctx, match) or _accelerator_checked(ctx, match):
        return replace_node(ctx, match, match.node, call)
    if stmt is not None and ctx.statement_lines(stmt) is not None:
        rendered = ctx.render(f"if {{torch}}.accelerator.is_available():\n\t{call}", match)
        if rendered is None:
            return None
        lines = rendered[0].split("\n")
        return ctx.replace_statement(stmt, lines, rendered[1], new=lines[1].strip())  # the message names the call
    return replace_node(ctx, match, match.node, f"{call} if {{torch}}.accelerator.is_available() else None")


_AVAILABLE = frozenset({"torch.cuda.is_available", "torch.accelerator.is_available", "torch.neuron.is_available"})


def _accelerator_checked(ctx: FixContext, match: Match) -> bool:
    """Whether the match runs only in the body of an `if` (of its own function) that asked
    whether the device is there: `if torch.cuda.is_available():`, alone or `and`-ed."""
    child: ast.AST = match.node
    current = ctx.analysis.parent(child)
    while current is not None and not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        if isinstance(current, ast.If) and child in current.body:
            test = current.test
            tests = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
            if any(isinstance(t, ast.Call) and ctx.analysis.call_names(t, match.scope) & _AVAILABLE for t in tests):
                return True
        child, current = current, ctx.analysis.parent(current)
    return False


# -- a fix several concepts name (`fix = "replace_string"`) ---------------------------------
def replace_string(ctx: FixContext, match: Match) -> Plan | None:
    """Swap a string literal's value, keeping its prefix and quote style."""
    new = match.value("new")
    node = match.node
    if new is None or not isinstance(node, ast.Constant):
        return None
    found = STRING_LITERAL.fullmatch(ctx.segment(node))
    if found is None:
        return None  # implicit concatenation or an f-string; a human edits it
    prefix, quote, _ = found.groups()
    plan = ctx.replace(node, f"{prefix}{quote}{new}{quote}")
    call = _autocast_without_dtype(ctx, match)
    if call is None or plan is None:
        return plan
    # torch_xla's autocast defaulted to bfloat16 on the device, `torch.autocast("neuron")` does not
    dtype = ctx.render("{torch}.bfloat16", match)
    if dtype is None:
        return None
    last = [*call.args, *call.keywords][-1]
    end = ctx.src.node_span(last.value if isinstance(last, ast.keyword) else last)[1]
    return dataclasses.replace(
        plan, edits=(*plan.edits, Edit(end, end, f", dtype={dtype[0]}")), imports=(*plan.imports, *dtype[1])
    )


def _autocast_without_dtype(ctx: FixContext, match: Match) -> ast.Call | None:
    """The `torch.autocast(...)` call whose device type `match` is, when it passes no dtype."""
    parent = ctx.analysis.parent(match.node)
    call = ctx.analysis.parent(parent) if isinstance(parent, ast.keyword) else parent
    if not isinstance(call, ast.Call) or not ctx.analysis.call_names(call, match.scope) & _AUTOCAST_CALLS:
        return None
    if len(call.args) > 1 or any(k.arg in ("dtype", None) for k in call.keywords):
        return None  # a dtype is given (positionally, by keyword, or maybe in **kwargs)
    return call
