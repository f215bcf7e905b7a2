"""LibCST transforms of the utilities concept; imported only when a file is fixed."""

from __future__ import annotations

import libcst as cst

from neuron_migrate.analysis.values import Decline
from neuron_migrate.checks.toolkit_cst import append_argument, keyword_argument, realigned


def rename_call(node: cst.CSTNode, func: str, keyword: str = "") -> cst.CSTNode:
    """Call `func` with the same arguments; with `keyword` (`name=value`), add it unless present."""
    if not isinstance(node, cst.Call):
        raise Decline
    new = realigned(node, node.with_changes(func=cst.parse_expression(func)))
    if keyword:
        argument = keyword_argument(keyword)
        if any(a.keyword is not None and a.keyword.value == argument.keyword.value for a in node.args):  # type: ignore[union-attr]  # keyword_argument asserts one
            return new
        new = append_argument(new, argument)
    return new
