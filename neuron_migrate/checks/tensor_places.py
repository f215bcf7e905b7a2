"""Where a tensor a call makes or casts lives (NM411): float64 stays float64 on the CPU.

Neuron computes float64 as float32, but a CPU tensor keeps its precision, so the float64 rules
leave alone a tensor made or moved to the CPU: `device="cpu"`, `.to("cpu")`, `x.cpu()`, a result
moved there at once, and a factory given no device (the CPU, unless the file sets another default).
"""

from __future__ import annotations

import ast

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.names import Scope

_CPU_CALLS = frozenset({"torch.device"})


def _is_cpu(analysis: Analysis, node: ast.AST | None, scope: Scope) -> bool:
    """`"cpu"` or `torch.device("cpu")`."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value.split(":")[0] == "cpu"
    if isinstance(node, ast.Call) and node.args and analysis.call_names(node, scope) & _CPU_CALLS:
        return _is_cpu(analysis, node.args[0], scope)
    return False


# Factories that make a tensor on the default device (the CPU) when given no `device=`.
_FACTORIES = frozenset(
    f"torch.{name}"
    for name in (
        "zeros", "ones", "empty", "full", "tensor", "as_tensor", "arange", "range", "linspace", "logspace",
        "eye", "rand", "randn", "randint", "randperm", "normal", "from_numpy",
    )
)  # fmt: skip


def on_cpu(analysis: Analysis, call: ast.Call, scope: Scope) -> bool:
    """Whether the tensor `call` makes or casts stays on the CPU: `device="cpu"`, `.to("cpu", ...)`,
    a receiver that was just moved there (`x.cpu().double()`, `x.to("cpu").to(torch.float64)`),
    a result moved there at once (`torch.ones(3, dtype=torch.double).to("cpu")`), or a factory
    given no device (`torch.zeros(2, dtype=torch.float64)`), which makes a CPU tensor unless the
    file sets another default device or the result moves at once."""
    if _is_cpu(analysis, next((k.value for k in call.keywords if k.arg == "device"), None), scope):
        return True
    moved = _moved_at_once(analysis, call)
    if moved is not None:
        return moved.func.attr == "cpu" or any(  # type: ignore[attr-defined]  # `moved.func` is an attribute
            _is_cpu(analysis, a, scope) for a in [*moved.args, *(k.value for k in moved.keywords if k.arg == "device")]
        )
    if analysis.call_names(call, scope) & _FACTORIES and not any(k.arg == "device" for k in call.keywords):
        return not _sets_default_device(analysis)
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr == "to" and any(_is_cpu(analysis, a, scope) for a in call.args):
        return True
    receiver = func.value
    if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute):
        if receiver.func.attr == "cpu" and not receiver.args:
            return True
        return receiver.func.attr == "to" and any(
            _is_cpu(analysis, a, scope)
            for a in [*receiver.args, *(k.value for k in receiver.keywords if k.arg == "device")]
        )
    return False


def _moved_at_once(analysis: Analysis, call: ast.Call) -> ast.Call | None:
    """`call(...).to(...)` / `.cpu()` / `.cuda()`: the call that moves the result, if one does."""
    attribute = analysis.parent(call)
    outer = analysis.parent(attribute) if isinstance(attribute, ast.Attribute) else None
    if not isinstance(outer, ast.Call) or outer.func is not attribute:
        return None
    assert isinstance(attribute, ast.Attribute)
    if attribute.attr in ("cpu", "cuda") or (attribute.attr == "to" and (outer.args or outer.keywords)):
        return outer
    return None


def _sets_default_device(analysis: Analysis) -> bool:
    """Whether the module calls `torch.set_default_device` (then a factory's default is not the CPU)."""
    if "set_default_device" not in analysis.src.text:
        return False  # the text cannot call it: no walk over the module's calls
    return any(
        (getattr(n.func, "attr", None) or getattr(n.func, "id", None)) == "set_default_device"
        for n in analysis.nodes(ast.Call)
    )
