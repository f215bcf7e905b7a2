"""Values that a message template may name beyond `{old}` and `{new}`, read from the matched call
and its module (each a function of the analysis and the match)."""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from types import MappingProxyType

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.values import Match
from neuron_migrate.checks import rng_state

# torch_xla reduce types (constants and strings) -> torch.distributed.ReduceOp members.
_REDUCE_OPS = {"sum": "SUM", "mul": "PRODUCT", "and": "BAND", "or": "BOR", "min": "MIN", "max": "MAX"}


def reduce_op(analysis: Analysis, match: Match) -> str:
    """`xm.all_reduce(xm.REDUCE_MAX, t)` -> `dist.ReduceOp.MAX`; the op to look up when unknown."""
    call = match.node
    first = call.args[0] if isinstance(call, ast.Call) and call.args else None
    if isinstance(call, ast.Call) and first is None:
        first = next((k.value for k in call.keywords if k.arg == "reduce_type"), None)
    key = None
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        key = first.value.lower()
    elif isinstance(first, ast.Attribute) and first.attr.startswith("REDUCE_"):
        key = first.attr.removeprefix("REDUCE_").lower()
    op = _REDUCE_OPS.get(key or "")
    return f"dist.ReduceOp.{op}" if op else "the matching dist.ReduceOp"


_SPMD_MODULES = ("torch_xla.distributed.spmd", "torch_xla.experimental.xla_sharding")


def world_hint(analysis: Analysis, match: Match) -> str:
    """What replaces a global device count: the world size, or (single-process SPMD) the device count."""
    scope = match.scope
    while scope.parent is not None:
        scope = scope.parent
    if _uses_spmd(scope.node):
        return "`torch.accelerator.device_count()` times the hosts; SPMD code runs one process"
    return "`dist.get_world_size()`; TorchNeuron runs one device per rank"


def _uses_spmd(module: ast.AST) -> bool:
    for node in ast.walk(module):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(_SPMD_MODULES):
            return True
        if isinstance(node, ast.Import) and any(a.name.startswith(_SPMD_MODULES) for a in node.names):
            return True
        if isinstance(node, ast.Attribute) and node.attr == "use_spmd":
            return True
    return False


def restores_rng_state(analysis: Analysis, match: Match) -> bool:
    """Whether `xm.set_rng_state(s)` restores what `get_rng_state()` read (checks/rng_state.py)."""
    call = match.node
    if not isinstance(call, ast.Call) or len(call.args) != 1 or call.keywords:
        return False
    return rng_state.restores_rng_state(analysis, call.args[0], match.scope)


def rng_state_why(analysis: Analysis, match: Match) -> str:
    """Why the replacement for `xm.set_rng_state` is the right one here."""
    return (
        "it restores what `get_rng_state` read"
        if restores_rng_state(analysis, match)
        else "it seeds only the NeuronCores, as before"
    )


def launches_program(analysis: Analysis, match: Match) -> bool:
    """Whether the spawn or launch call `match` is the program's own launch: it runs at module
    level, or in a module-level function that module-level code calls or names (`main()` under
    `if __name__ == "__main__":`, `fire.Fire(main)`), directly or through other such functions,
    or in a function named `main` that nothing in the file calls (a console-script entry point).
    Anything else is a library function, whose caller waits for what the workers return; so is
    a spawn that hands its workers a queue, pipe or shared value the caller reads afterwards."""
    if _hands_channels(analysis, match):
        return False
    function: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    current: ast.AST | None = analysis.parent(match.node)
    while current is not None and not isinstance(current, ast.Module):
        if isinstance(current, ast.ClassDef):
            return False
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            if function is not None or isinstance(current, ast.Lambda):
                return False  # nested: not a module-level function
            function = current
        current = analysis.parent(current)
    if function is None:
        return True
    if not isinstance(current, ast.Module) or analysis.parent(function) is not current:
        return False
    module: ast.Module = current
    return _entry_function(module, function.name)


# What workers report through: torchrun's ranks share none of them with the program's caller.
_CHANNELS = ("Queue", "SimpleQueue", "JoinableQueue", "Pipe", "Value", "Array", "Manager", "list", "dict")


def _hands_channels(analysis: Analysis, match: Match) -> bool:
    """Whether the spawn passes its workers a name bound to a queue, pipe or shared value
    (`mp.Queue()`, `manager.dict()`, `Manager().list()`): the caller reads what they report."""
    call = match.node
    if not isinstance(call, ast.Call):
        return False
    given = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "args"), None)
    names = [e.id for e in getattr(given, "elts", ()) if isinstance(e, ast.Name)]
    for assign in analysis.nodes(ast.Assign):
        targets = {t.id for t in assign.targets if isinstance(t, ast.Name)}
        targets |= {e.id for t in assign.targets if isinstance(t, ast.Tuple) for e in t.elts if isinstance(e, ast.Name)}
        value = assign.value
        func = value.func if isinstance(value, ast.Call) else None
        made = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        shared = made in _CHANNELS and (made[0].isupper() or isinstance(func, ast.Attribute))
        if shared and targets & set(names):
            return True
    return False


def _entry_function(module: ast.Module, name: str) -> bool:
    functions = {s.name: s for s in module.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    at_module = {
        n.id
        for s in module.body
        if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        for n in ast.walk(s)
        if isinstance(n, ast.Name)
    }
    callers: dict[str, set[str]] = {}
    for caller, node in functions.items():
        for used in ast.walk(node):
            if isinstance(used, ast.Name) and used.id in functions and used.id != caller:
                callers.setdefault(used.id, set()).add(caller)
    seen: set[str] = set()
    pending = [name]
    while pending:
        current = pending.pop()
        if current in at_module:
            return True
        if current in seen:
            continue
        seen.add(current)
        pending.extend(callers.get(current, ()))
    return name == "main" and name not in callers


def single_process(match: Match) -> bool:
    """Whether the spawn or launch ran its function in this process only (`nprocs=1`,
    `debug_single_process=True`)."""
    call = match.node
    if not isinstance(call, ast.Call):
        return False
    launch = match.qualified.rsplit(".", 1)[-1] == "launch"
    name, position = ("debug_single_process", 3) if launch else ("nprocs", 2)
    value = call.args[position] if position < len(call.args) else None
    value = next((k.value for k in call.keywords if k.arg == name), value)
    if not isinstance(value, ast.Constant):
        return False
    return value.value is True if launch else (type(value.value) is int and value.value == 1)


def launch_how(analysis: Analysis, match: Match) -> str:
    """How to launch what `xmp.spawn` / `torch_xla.launch` started, for its message."""
    if launches_program(analysis, match) or single_process(match):
        return f"with `torchrun --nproc-per-node=N {{file}}` instead of `{match.written}`; N is the number of ranks"
    return (
        f"the workers of `{match.written}` with `torch.multiprocessing.spawn`;"
        ' give each `init_method="tcp://HOST:PORT"`, its rank and the world size'
    )


MESSAGE_VALUES: Mapping[str, Callable[[Analysis, Match], str]] = MappingProxyType(
    {"reduce_op": reduce_op, "world_hint": world_hint, "rng_state_why": rng_state_why, "launch_how": launch_how}
)
