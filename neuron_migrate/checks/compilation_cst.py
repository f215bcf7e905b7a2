"""LibCST transforms of the compilation concept; imported only when a file is fixed."""

from __future__ import annotations

import libcst as cst

from neuron_migrate.analysis.values import Decline
from neuron_migrate.checks.toolkit_cst import append_argument, keyword_argument


def add_keyword(node: cst.CSTNode, keyword: str) -> cst.CSTNode:
    """Append the keyword arguments `keyword` (`name=value`, several joined by `, `) to a call,
    keeping its layout."""
    if not isinstance(node, cst.Call):
        raise Decline
    for part in keyword.split(", "):
        node = append_argument(node, keyword_argument(part))
    return node
