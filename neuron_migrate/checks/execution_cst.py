"""LibCST transforms of the execution concept; imported only when a file is fixed."""

from __future__ import annotations

import libcst as cst

from neuron_migrate.analysis.values import Decline
from neuron_migrate.checks.toolkit_cst import SIMPLE_OPERANDS, call_with


def step_closure(node: cst.CSTNode) -> cst.CSTNode:
    """`xm.add_step_closure(fn, args=(a, b))` -> `fn(a, b)`, the arguments' comments kept."""
    if not isinstance(node, cst.Call):
        raise Decline
    closure: cst.BaseExpression | None = None
    arguments: cst.BaseExpression | None = None
    for position, arg in enumerate(node.args):
        name = (
            arg.keyword.value
            if arg.keyword is not None
            else ("closure", "args", "run_async")[position]
            if position < 3
            else ""
        )
        if arg.star or name not in ("closure", "args", "run_async"):
            raise Decline
        if name == "closure":
            closure = arg.value
        elif name == "args":
            arguments = arg.value
    if closure is None:
        raise Decline
    if not isinstance(closure, SIMPLE_OPERANDS):
        closure = closure.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return call_with(closure, arguments)
