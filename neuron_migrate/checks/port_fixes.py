"""Fixes for what real torch_xla training scripts still use after the core rewrites.

Execution-model leftovers (`eager_mode`, `xr.device_type()` tests, `torch_xla.compile`
arguments), utilities imported from torch_xla (`SampleGenerator`, `RateTracker`, test_utils
logging, metrics reports, profiler traces) and distributed helpers (`broadcast_master_param`,
`mesh_reduce`). Pure functions (FixContext, Match) -> Plan | None, merged into `fixes.FIXES`;
this module imports `fixes` only for type checking, so `fixes` can import it without a cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from neuron_migrate.analysis.analyze import Match, Plan

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
    function = HELPER_NAMES[name]
    resolver = ctx.analysis.resolver
    existing = resolver.lookup(function, resolver.module_scope)
    if existing and not (len(existing) == 1 and isinstance(existing[0].node, (ast.ClassDef, ast.FunctionDef))):
        return None  # the helper's name means something else in this file
    torch_name = ctx.render("{torch}", match)
    if torch_name is None:
        return None
    needed = () if existing else (f"helper:{name}:{torch_name[0]}", *torch_name[1])
    return ctx.replace(node, call_text, needed)


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
        template = f'getattr({{torch}}.accelerator.current_accelerator(), "type", None) {operator} "{_DEVICE_TYPES[kind]}"'
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
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward" for n in ast.walk(node))


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
    """`test_utils.now()` -> `datetime.datetime.now().strftime("%H:%M:%S")`."""
    call = _call(match)
    if call is None or call.args or call.keywords:
        return None
    quote = "'" if _inside_double_quoted_fstring(ctx, call) else '"'
    rendered = ctx.render(f"{{datetime}}.datetime.now().strftime({quote}%H:%M:%S{quote})", match)
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
    return _logging_helper(ctx, match, "training_update", "summary_writer", 6)


def test_update(ctx: FixContext, match: Match) -> Plan | None:
    """`test_utils.print_test_update(...)` -> `_print_test_update(...)`, printing the same line."""
    return _logging_helper(ctx, match, "test_update", "", -1)


def _logging_helper(ctx: FixContext, match: Match, name: str, writer: str, writer_pos: int) -> Plan | None:
    call = _call(match)
    if call is None or not _plain_args(call) or ctx.expression_statement(match) is None:
        return None
    written = _argument(call, writer, writer_pos) if writer else None
    if written is not None and not (isinstance(written, ast.Constant) and written.value is None):
        return None  # a summary writer also gets the values; port write_to_summary by hand
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
    return _helper(ctx, match, "broadcast_master_param", f"_broadcast_master_param({ctx.segment(model)})", call)


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


# Helpers written into the migrated file once, after its imports. `{torch}` is torch's name there.
HELPERS: Mapping[str, str] = MappingProxyType(
    {
        "rate_tracker": '''class _RateTracker:
    """Samples per second, smoothed and since the start (what `xm.RateTracker` reported)."""

    def __init__(self, smooth_factor=None):
        import time

        self._clock = time.time
        self._smooth_factor = 0.4 if smooth_factor is None else smooth_factor
        self._start_time = self._partial_time = self._clock()
        self._partial_count = self._count = 0.0
        self._partial_rate = None

    def add(self, count):
        self._count += count

    def rate(self):
        now = self._clock()
        delta = now - self._partial_time
        if delta <= 0:
            return 0.0
        rate = self._count / delta
        if self._partial_rate is not None:
            rate = (1 - self._smooth_factor) * rate + self._smooth_factor * self._partial_rate
        self._partial_count += self._count
        self._count = 0.0
        self._partial_time, self._partial_rate = now, rate
        return rate

    def global_rate(self):
        delta = self._clock() - self._start_time
        return (self._partial_count + self._count) / delta if delta > 0 else 0.0
''',
        "training_update": '''def _print_training_update(device, step, loss, rate, global_rate, epoch=None, summary_writer=None):
    """Print one training line, as torch_xla's `test_utils.print_training_update` did."""
    import datetime

    items = [
        "Training",
        f"Device={device}",
        f"Epoch={epoch}" if epoch is not None else None,
        f"Step={step}",
        f"Loss={loss:.5f}",
        f"Rate={rate:.2f}",
        f"GlobalRate={global_rate:.2f}",
        f"Time={datetime.datetime.now():%H:%M:%S}",
    ]
    print("|", " ".join(item for item in items if item), flush=True)
''',
        "test_update": '''def _print_test_update(device, accuracy, epoch=None, step=None):
    """Print one test line, as torch_xla's `test_utils.print_test_update` did."""
    import datetime

    items = [
        "Test",
        f"Device={device}",
        f"Step={step}" if step is not None else None,
        f"Epoch={epoch}" if epoch is not None else None,
        f"Accuracy={accuracy:.2f}" if accuracy is not None else None,
        f"Time={datetime.datetime.now():%H:%M:%S}",
    ]
    print("|", " ".join(item for item in items if item), flush=True)
''',
        "broadcast_master_param": '''def _broadcast_master_param(model):
    """Copy rank 0's parameters to every rank (what `xm.broadcast_master_param` did); no-op alone."""
    if not {torch}.distributed.is_available() or not {torch}.distributed.is_initialized():
        return
    with {torch}.no_grad():
        for parameter in model.parameters():
            {torch}.distributed.broadcast(parameter.data, src=0)
''',
        "mesh_reduce": '''def _mesh_reduce(data, reduce_fn):
    """Gather `data` from every rank and reduce the list (what `xm.mesh_reduce` did)."""
    if isinstance(data, {torch}.Tensor):
        data = data.cpu()
    if not {torch}.distributed.is_available() or not {torch}.distributed.is_initialized():
        return reduce_fn([data])
    values = [None] * {torch}.distributed.get_world_size()
    {torch}.distributed.all_gather_object(values, data)
    return reduce_fn(values)
''',
    }
)
HELPER_NAMES: Mapping[str, str] = MappingProxyType(
    {
        "rate_tracker": "_RateTracker",
        "training_update": "_print_training_update",
        "test_update": "_print_test_update",
        "broadcast_master_param": "_broadcast_master_param",
        "mesh_reduce": "_mesh_reduce",
    }
)

FIXES: Mapping[str, Callable[[FixContext, Match], Plan | None]] = MappingProxyType(
    {
        "device_type": device_type,
        "xla_compile": xla_compile,
        "sample_generator": sample_generator,
        "rate_tracker": rate_tracker,
        "now": now,
        "training_update": training_update,
        "test_update": test_update,
        "printed_report": printed_report,
        "profiler_trace": profiler_trace,
        "start_server": start_server,
        "broadcast_master_param": broadcast_master_param,
        "mesh_reduce": mesh_reduce,
    }
)
