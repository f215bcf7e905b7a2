"""Where `xm.get_rng_state()`'s value goes (NM208): back into `xm.set_rng_state`, or into arithmetic.

torch_xla's RNG state was an integer seed; `torch.neuron.get_rng_state()` returns a state
tensor, which `torch.neuron.set_rng_state` restores and `manual_seed` rejects. So a state read
and restored later (held in a name, a dict entry such as `state["rng"]`, or an attribute) is a
state-tensor round trip, while a state used as a number (`get_rng_state() * 214013 + 2531011`,
`int(...)`, a comparison) has no TorchNeuron counterpart a fix can write: it stays a finding.
"""

from __future__ import annotations

import ast

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.names import Scope

_NUMBER_CALLS = frozenset({"int", "float", "hex", "range", "abs", "round"})
Holder = tuple[str, str]  # ("name", id) / ("item", constant key) / ("attr", attribute name)


def reads_rng_state(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get_rng_state"


def holder_of(node: ast.AST) -> Holder | None:
    """How a stored value is read back: a name, a constant subscript key, or an attribute."""
    if isinstance(node, ast.Name):
        return ("name", node.id)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return ("item", repr(node.slice.value))
    if isinstance(node, ast.Attribute):
        return ("attr", node.attr)
    return None


def stored_in(analysis: Analysis, call: ast.AST) -> Holder | None:
    """Where the value of `call` is stored: an assignment's single target, or a dict entry's key."""
    parent = analysis.parent(call)
    if isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is call:
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        return holder_of(targets[0]) if len(targets) == 1 else None
    if isinstance(parent, ast.Dict):
        index = next((i for i, value in enumerate(parent.values) if value is call), None)
        key = parent.keys[index] if index is not None else None
        return ("item", repr(key.value)) if isinstance(key, ast.Constant) else None
    if isinstance(parent, ast.keyword) and parent.arg is not None:
        return ("item", repr(parent.arg))  # `dict(rng=xm.get_rng_state())`
    return None


def holders(analysis: Analysis) -> frozenset[Holder]:
    """Every place the module stores a `get_rng_state()` value (computed once per module)."""
    return analysis.fact(_find_holders)


def _find_holders(analysis: Analysis) -> frozenset[Holder]:
    found = (stored_in(analysis, call) for call in analysis.nodes(ast.Call) if reads_rng_state(call))
    return frozenset(h for h in found if h is not None)


def restores_rng_state(analysis: Analysis, value: ast.AST, scope: Scope) -> bool:
    """Whether `xm.set_rng_state(value)` restores what `get_rng_state()` read: `value` is that
    call, a name its scope only ever assigns from one, or an entry or attribute one was stored in."""
    if reads_rng_state(value):
        return True
    if isinstance(value, ast.Name):
        assigned = [
            node.value
            for node in ast.walk(scope.node)
            if isinstance(node, (ast.Assign, ast.AnnAssign))
            and [getattr(t, "id", None) for t in (node.targets if isinstance(node, ast.Assign) else [node.target])]
            == [value.id]
        ]
        return bool(assigned) and all(reads_rng_state(v) for v in assigned)
    holder = holder_of(value)
    return holder is not None and holder in holders(analysis)


def used_as_number(analysis: Analysis, call: ast.AST, scope: Scope) -> bool:
    """Whether the seed `call` reads is used as a number: directly, or where it is stored."""
    if _numeric(analysis, call):
        return True
    holder = stored_in(analysis, call)
    if holder is None:
        return False
    root = scope.node if holder[0] == "name" else analysis.tree
    return any(holder_of(node) == holder and _numeric(analysis, node) for node in _loads(root))


def _loads(root: ast.AST) -> list[ast.AST]:
    return [
        node
        for node in ast.walk(root)
        if isinstance(node, (ast.Name, ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Load)
    ]


def _numeric(analysis: Analysis, node: ast.AST) -> bool:
    parent = analysis.parent(node)
    if isinstance(parent, (ast.BinOp, ast.Compare, ast.AugAssign)):
        return True
    if isinstance(parent, ast.UnaryOp) and not isinstance(parent.op, ast.Not):
        return True
    return isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id in _NUMBER_CALLS
