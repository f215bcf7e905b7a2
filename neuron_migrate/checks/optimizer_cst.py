"""LibCST transform of the optimizer concept; imported only when a file is fixed."""

from __future__ import annotations

import libcst as cst

from neuron_migrate.analysis.values import Decline
from neuron_migrate.checks.toolkit_cst import SIMPLE_OPERANDS, by_name, keyword_arg, positional, relaid

_OPTIMIZER_STEP = ("optimizer", "optimizer_args", "groups", "pin_layout")


def optimizer_step(node: cst.CSTNode, func: str) -> cst.CSTNode:
    """`xm.optimizer_step(opt, optimizer_args={"closure": c})` -> `_optimizer_step(opt, closure=c)`
    or, with `func` "{optimizer}.step", `opt.step(closure=c)`; comments and layout kept."""
    if not isinstance(node, cst.Call):
        raise Decline
    given = by_name(node, _OPTIMIZER_STEP)
    optimizer = given.get("optimizer")
    groups = given.get("groups")
    if optimizer is None or (
        groups is not None and not (isinstance(groups.value, cst.Name) and groups.value.value == "None")
    ):
        raise Decline
    args = _step_arguments(given.get("optimizer_args"))
    if func == "{optimizer}.step":
        value = optimizer.value
        if not isinstance(value, SIMPLE_OPERANDS):
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return relaid(node, cst.Attribute(value=value, attr=cst.Name("step")), args)
    return relaid(node, cst.parse_expression(func), [positional(optimizer), *args])


def _step_arguments(arg: cst.Arg | None) -> list[cst.Arg]:
    """`optimizer_args={"closure": c}` -> `closure=c`; any other value -> `**value`."""
    if arg is None:
        return []
    value = arg.value
    if isinstance(value, cst.Dict) and all(
        isinstance(e, cst.DictElement)
        and isinstance(e.key, cst.SimpleString)
        and str(e.key.evaluated_value).isidentifier()
        for e in value.elements
    ):
        elements = list(value.elements)
        if not elements:
            return []
        out = [
            keyword_arg(str(e.key.evaluated_value), e.value, e.comma)
            for e in elements
            if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)  # all are (checked above)
        ]
        out[-1] = out[-1].with_changes(comma=arg.comma)
        return out
    return [cst.Arg(value=value, star="**", comma=arg.comma)]
