"""Fixes for what real torch_xla training scripts still use after the core rewrites.

Execution-model leftovers (`eager_mode`, `xr.device_type()` tests, `torch_xla.compile`
arguments), utilities imported from torch_xla (`SampleGenerator`, `RateTracker`, test_utils
logging, metrics reports, profiler traces) and distributed helpers (`broadcast_master_param`,
`mesh_reduce`). Pure functions (FixContext, Match) -> Plan | None, merged into `fixes.FIXES`;
this module imports `fixes` only for type checking, so `fixes` can import it without a cycle.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from neuron_migrate.analysis.analyze import Match, Plan
from neuron_migrate.checks.helper_code import HELPER_NAMES, helper_imports
from neuron_migrate.model import Safety

if TYPE_CHECKING:
    from neuron_migrate.checks.fixes import FixContext


def _call(match: Match) -> ast.Call | None:
    return match.node if isinstance(match.node, ast.Call) else None


def _plain_args(call: ast.Call) -> bool:
    return not any(isinstance(a, ast.Starred) for a in call.args) and all(k.arg is not None for k in call.keywords)


def _argument(call: ast.Call, name: str, pos: int) -> ast.expr | None:
    if 0 <= pos < len(call.args):
        return call.args[pos]
    return next((k.value for k in call.keywords if k.arg == name), None)


def _string(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _helper(ctx: FixContext, match: Match, name: str, call_text: str, node: ast.AST) -> Plan | None:
    """Replace `node` with `call_text`, which calls the helper `HELPERS[name]` written into the file."""
    needed = helper_imports(ctx, match, name)
    return ctx.replace(node, call_text, needed) if needed is not None else None


# -- execution model --------------------------------------------------------------------
_DEVICE_TYPES = {"NEURON": "neuron", "CUDA": "cuda", "GPU": "cuda", "TPU": "tpu"}


def device_type(ctx: FixContext, match: Match) -> Plan | None:
    """`xr.device_type() == "NEURON"` -> a test of `torch.accelerator.current_accelerator()`."""
    call = _call(match)
    compare = ctx.analysis.parent(call) if call is not None else None
    if call is None or call.args or call.keywords or not isinstance(compare, ast.Compare) or len(compare.ops) != 1:
        return None
    other = compare.comparators[0] if compare.left is call else compare.left
    kind = _string(other)
    if kind is None or not isinstance(compare.ops[0], (ast.Eq, ast.NotEq)):
        return None
    equal = isinstance(compare.ops[0], ast.Eq)
    if kind == "CPU":
        template = "{torch}.accelerator.current_accelerator() is " + ("None" if equal else "not None")
    elif kind in _DEVICE_TYPES:
        operator = "==" if equal else "!="
        template = (
            f'getattr({{torch}}.accelerator.current_accelerator(), "type", None) {operator} "{_DEVICE_TYPES[kind]}"'
        )
    else:
        return None
    rendered = ctx.render(template, match)
    return ctx.replace(compare, rendered[0], rendered[1]) if rendered else None


# torch_xla.compile's XLA-only arguments that change nothing a `torch.compile` user sees.
_COMPILE_DROPPED = ("name",)


def xla_compile(ctx: FixContext, match: Match) -> Plan | None:
    """`torch_xla.compile(fn, full_graph=b, name=n)` -> `torch.compile(fn, backend="neuron", dynamic=False, fullgraph=b)`."""
    call = _call(match)
    if call is None or len(call.args) != 1 or not _plain_args(call):
        return None
    extra = []
    for keyword in call.keywords:
        if keyword.arg == "full_graph":
            if not _runs_backward(ctx, match, call.args[0]):
                extra.append(f", fullgraph={ctx.segment(keyword.value)}")
        elif keyword.arg not in _COMPILE_DROPPED:
            return None  # `num_different_graphs_allowed` and the like: a human decides
    rendered = ctx.render('{torch}.compile({0}, backend="neuron", dynamic=False', match)
    if rendered is None:
        return None
    return ctx.replace(call, rendered[0] + "".join(extra) + ")", rendered[1])


def _runs_backward(ctx: FixContext, match: Match, fn: ast.expr) -> bool:
    """Whether `fn` is a function of this file that calls `.backward()`.

    torch_xla traced such a step into one graph; Dynamo with `fullgraph=True` raises at the
    backward call instead, so the fix leaves `fullgraph` out and lets Dynamo split the graph.
    """
    bindings = ctx.analysis.resolver.lookup(fn.id, match.scope) if isinstance(fn, ast.Name) else []
    node = bindings[0].node if len(bindings) == 1 else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"
        for n in ast.walk(node)
    )


# -- utilities --------------------------------------------------------------------------
def sample_generator(ctx: FixContext, match: Match) -> Plan | None:
    """`xu.SampleGenerator(data=d, sample_count=n)` -> `[d] * n`: re-iterable, with a length, like the original."""
    call = _call(match)
    if call is None or not _plain_args(call) or len(call.args) + len(call.keywords) != 2:
        return None
    data = _argument(call, "data", 0)
    count = _argument(call, "sample_count", 1)
    if data is None or count is None:
        return None
    count_text = ctx.segment(count)
    if not isinstance(count, (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)):
        count_text = f"({count_text})"
    return ctx.replace(call, f"[{ctx.segment(data)}] * {count_text}")


def rate_tracker(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.RateTracker(...)` -> `_RateTracker(...)`, a helper with the same `add`/`rate`/`global_rate`."""
    call = _call(match)
    if call is None or not _plain_args(call) or len(call.args) + len(call.keywords) > 1:
        return None
    if call.keywords and call.keywords[0].arg != "smooth_factor":
        return None
    return _helper(ctx, match, "rate_tracker", f"_RateTracker({ctx.args_text(call)})", call)


def now(ctx: FixContext, match: Match) -> Plan | None:
    """`test_utils.now()` -> `datetime.datetime.now().strftime("%H:%M:%S")`; `now(fmt)` keeps `fmt`."""
    call = _call(match)
    if call is None or not _plain_args(call) or len(call.args) + len(call.keywords) > 1:
        return None
    given = _argument(call, "format", 0)
    if call.keywords and given is None:
        return None
    quote = "'" if _inside_double_quoted_fstring(ctx, call) else '"'
    fmt = ctx.segment(given) if given is not None else f"{quote}%H:%M:%S{quote}"
    rendered = ctx.render("{datetime}.datetime.now().strftime({fmt})", match, {"fmt": fmt})
    return ctx.replace(call, rendered[0], rendered[1]) if rendered else None


def _inside_double_quoted_fstring(ctx: FixContext, node: ast.AST) -> bool:
    """Whether `node` sits in an f-string delimited by `"` (before 3.12 its quote cannot recur inside)."""
    current = ctx.analysis.parent(node)
    while current is not None and not isinstance(current, ast.stmt):
        if isinstance(current, ast.JoinedStr):
            return ctx.segment(current).lstrip("rRfFbBuU").startswith('"')
        current = ctx.analysis.parent(current)
    return False


def training_update(ctx: FixContext, match: Match) -> Plan | None:
    """`test_utils.print_training_update(...)` -> `_print_training_update(...)`, printing the same line."""
    return _same_arguments(ctx, match, "training_update")


def test_update(ctx: FixContext, match: Match) -> Plan | None:
    """`test_utils.print_test_update(...)` -> `_print_test_update(...)`, printing the same line."""
    return _same_arguments(ctx, match, "test_update")


def write_to_summary(ctx: FixContext, match: Match) -> Plan | None:
    """`test_utils.write_to_summary(w, step, values)` -> `_write_to_summary(...)`; not with XLA metrics."""
    call = _call(match)
    if call is None or not _plain_args(call):
        return None
    metrics = _argument(call, "write_xla_metrics", 3)
    if metrics is not None and not (isinstance(metrics, ast.Constant) and metrics.value is False):
        return None  # the XLA metrics it also wrote do not exist on TorchNeuron
    return _same_arguments(ctx, match, "write_to_summary")


def close_summary_writer(ctx: FixContext, match: Match) -> Plan | None:
    """`test_utils.close_summary_writer(w)` -> `_close_summary_writer(w)`."""
    return _same_arguments(ctx, match, "close_summary_writer")


def get_summary_writer(ctx: FixContext, match: Match) -> Plan | None:
    """`test_utils.get_summary_writer(logdir)` -> `_get_summary_writer(logdir)`, with torch's TensorBoard writer."""
    plan = _same_arguments(ctx, match, "get_summary_writer")
    return dataclasses.replace(plan, safety=Safety.UNSAFE) if plan is not None else None


def _same_arguments(ctx: FixContext, match: Match, name: str) -> Plan | None:
    call = _call(match)
    if call is None or not _plain_args(call):
        return None
    return _helper(ctx, match, name, f"{HELPER_NAMES[name]}({ctx.args_text(call)})", call)


_LOGGING = ("print", "info", "debug", "warning", "log")


def printed_report(ctx: FixContext, match: Match) -> Plan | None:
    """`print(met.metrics_report())` or `logger.info(...)` of it -> nothing; the report is XLA's."""
    call = _call(match)
    outer = ctx.analysis.parent(call) if call is not None else None
    if call is None or not isinstance(outer, ast.Call) or outer.args != [call] or outer.keywords:
        return None
    func = outer.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    stmt = ctx.analysis.parent(outer)
    if name not in _LOGGING or not (isinstance(stmt, ast.Expr) and stmt.value is outer):
        return None
    return ctx.delete_statement(stmt)


def profiler_trace(ctx: FixContext, match: Match) -> Plan | None:
    """`xp.Trace(name)` / `xp.StepTrace(name)` -> `torch.profiler.record_function(name)`."""
    call = _call(match)
    if call is None or len(call.args) != 1 or call.keywords or isinstance(call.args[0], ast.Starred):
        return None
    rendered = ctx.render("{torch}.profiler.record_function({0})", match)
    return ctx.replace(call, rendered[0], rendered[1]) if rendered else None


def start_server(ctx: FixContext, match: Match) -> Plan | None:
    """`xp.start_server(port)` on its own line -> nothing; capture with `torch.profiler` instead."""
    stmt = ctx.expression_statement(match)
    return ctx.delete_statement(stmt) if stmt is not None else None


# -- distributed helpers ----------------------------------------------------------------
def broadcast_master_param(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.broadcast_master_param(model)` -> `_broadcast_master_param(model)`: rank 0's parameters to all."""
    call = _call(match)
    if call is None or ctx.expression_statement(match) is None or not _plain_args(call):
        return None
    model = _argument(call, "model", 0)
    if model is None or len(call.args) + len(call.keywords) != 1:
        return None
    return _helper(
        ctx,
        match,
        "broadcast_master_param",
        f"_broadcast_master_param({ctx.segment(model)})",
        call,
    )


def mesh_reduce(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.mesh_reduce(tag, data, fn)` -> `_mesh_reduce(data, fn)`: all_gather_object, then `fn`."""
    call = _call(match)
    if call is None or not _plain_args(call) or len(call.args) + len(call.keywords) != 3:
        return None
    data = _argument(call, "data", 1)
    reduce_fn = _argument(call, "reduce_fn", 2)
    if data is None or reduce_fn is None or _argument(call, "tag", 0) is None:
        return None
    text = f"_mesh_reduce({ctx.segment(data)}, {ctx.segment(reduce_fn)})"
    return _helper(ctx, match, "mesh_reduce", text, call)


FIXES: Mapping[str, Callable[[FixContext, Match], Plan | None]] = MappingProxyType(
    {
        "device_type": device_type,
        "xla_compile": xla_compile,
        "sample_generator": sample_generator,
        "rate_tracker": rate_tracker,
        "now": now,
        "training_update": training_update,
        "test_update": test_update,
        "write_to_summary": write_to_summary,
        "close_summary_writer": close_summary_writer,
        "get_summary_writer": get_summary_writer,
        "printed_report": printed_report,
        "profiler_trace": profiler_trace,
        "start_server": start_server,
        "broadcast_master_param": broadcast_master_param,
        "mesh_reduce": mesh_reduce,
    }
)
