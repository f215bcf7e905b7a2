"""LibCST transforms of the devices concept (autocast); imported only when a file is fixed."""

from __future__ import annotations

import libcst as cst

from neuron_migrate.analysis.values import Decline
from neuron_migrate.checks.toolkit_cst import as_keyword, by_name, keyword_arg, relaid

# -- NM105 ---------------------------------------------------------------------------------------
_AUTOCAST = ("device", "enabled", "dtype", "cache_enabled")


def autocast(node: cst.CSTNode, func: str, device: str, dtype: str) -> cst.CSTNode:
    """`autocast(device, True)` -> `torch.autocast("neuron", enabled=True, dtype=...)`, each
    argument's comment and the call's layout kept."""
    if not isinstance(node, cst.Call):
        raise Decline
    given = by_name(node, _AUTOCAST)
    first = given.get("device")
    if first is None or first.keyword is not None:
        raise Decline
    args = [first.with_changes(value=cst.parse_expression(device))]
    for name in _AUTOCAST[1:]:
        if name in given:
            args.append(as_keyword(given[name], name))
        elif name == "dtype" and dtype:
            args.append(keyword_arg("dtype", cst.parse_expression(dtype)))
    return relaid(node, cst.parse_expression(func), args)
