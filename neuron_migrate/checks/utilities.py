"""Utilities, debugging and internals (NM207, NM208, NM209, NM213): what training scripts import from torch_xla.

RNG state, `SampleGenerator`, `RateTracker`, test_utils logging, metrics reports, profiler traces and
gradient checkpointing get plain PyTorch equivalents, most through helpers written into the file.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Mapping
from types import MappingProxyType

from neuron_migrate.analysis.values import Match, Plan
from neuron_migrate.checks import messages, rng_state
from neuron_migrate.checks.helpers import HELPER_NAMES, helper_call
from neuron_migrate.checks.toolkit import DetectorFn, FixContext, FixFn
from neuron_migrate.checks.toolkit_calls import (
    argument,
    is_default,
    keyword_of,
    matched_call,
    only_args,
    plain_args,
)
from neuron_migrate.checks.toolkit_layout import appended, moved, renamed
from neuron_migrate.model import Safety


def checkpoint(ctx: FixContext, match: Match) -> Plan | None:
    """torch_xla's `checkpoint` -> torch's, keeping torch_xla's `use_reentrant=True` default."""
    call = match.node
    if not isinstance(call, ast.Call):
        return _checkpoint_import(ctx, match)  # `method = checkpoint`: the import itself becomes torch's
    rendered = ctx.render("{torch}.utils.checkpoint.checkpoint", match)
    if rendered is None:
        return None
    edits = renamed(ctx, call, rendered[0])
    if keyword_of(call, "use_reentrant") is None and all(k.arg is not None for k in call.keywords):
        # torch's checkpoint also defaults to True (it warns); `**options` may choose, so none is added there
        edits.append(appended(ctx, call, "use_reentrant=True", moved(ctx, call, rendered[0])))
    return Plan(tuple(edits), rendered[1])


def _checkpoint_import(ctx: FixContext, match: Match) -> Plan | None:
    """`from torch_xla.utils.checkpoint import checkpoint` -> `from torch.utils.checkpoint import checkpoint`.

    For a name used as a value (`self.checkpoint_method = checkpoint`): the alias then follows.
    torch's `checkpoint` still defaults to `use_reentrant=True` (with a warning), as torch_xla's did.
    """
    node = match.node
    bindings = ctx.analysis.resolver.lookup(node.id, match.scope) if isinstance(node, ast.Name) else []
    stmt = bindings[0].node if len(bindings) == 1 and bindings[0].kind == "import" else None
    if not isinstance(stmt, ast.ImportFrom) or stmt.module != "torch_xla.utils.checkpoint" or len(stmt.names) != 1:
        return None
    alias = stmt.names[0]
    text = f"from torch.utils.checkpoint import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")
    return ctx.replace_statement(stmt, [text])


def convert_to_cpu(ctx: FixContext, match: Match) -> Plan | None:
    """`xm._maybe_convert_to_cpu(data)` -> `_to_cpu(data)`, the helper `xm.save`'s fix writes too."""
    call = matched_call(match)
    if call is None or len(call.args) != 1 or isinstance(call.args[0], ast.Starred):
        return None
    if not all(is_default(match, k) for k in call.keywords):
        return None  # `convert=False` returned the data unchanged; a human drops the call
    return helper_call(ctx, match, "to_cpu", f"_to_cpu({ctx.segment(call.args[0])})", call)


def sample_generator(ctx: FixContext, match: Match) -> Plan | None:
    """`xu.SampleGenerator(data=d, sample_count=n)` -> `[d] * n`: re-iterable, with a length, like the original."""
    call = matched_call(match)
    if call is None or not plain_args(call) or len(call.args) + len(call.keywords) != 2:
        return None
    data = argument(call, "data", 0)
    count = argument(call, "sample_count", 1)
    if data is None or count is None:
        return None
    count_text = ctx.segment(count)
    if not isinstance(count, (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)):
        count_text = f"({count_text})"
    return ctx.replace(call, f"[{ctx.segment(data)}] * {count_text}")


def rate_tracker(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.RateTracker(...)` -> `_RateTracker(...)`, a helper with the same `add`/`rate`/`global_rate`."""
    call = matched_call(match)
    if call is None or not plain_args(call) or len(call.args) + len(call.keywords) > 1:
        return None
    if call.keywords and call.keywords[0].arg != "smooth_factor":
        return None
    return helper_call(ctx, match, "rate_tracker", f"_RateTracker({ctx.args_text(call)})", call)


def now(ctx: FixContext, match: Match) -> Plan | None:
    """`test_utils.now()` -> `datetime.datetime.now().strftime("%H:%M:%S")`; `now(fmt)` keeps `fmt`."""
    call = matched_call(match)
    if call is None or not plain_args(call) or len(call.args) + len(call.keywords) > 1:
        return None
    given = argument(call, "format", 0)
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
    """`test_utils.write_to_summary(w, step, values[, write_xla_metrics=...])` -> `_write_to_summary(...)`.

    The helper writes `values` only: the XLA metrics torch_xla also wrote do not exist on TorchNeuron,
    and the helper takes `write_xla_metrics` and ignores it, so the call keeps its arguments.
    """
    return _same_arguments(ctx, match, "write_to_summary")


def close_summary_writer(ctx: FixContext, match: Match) -> Plan | None:
    """`test_utils.close_summary_writer(w)` -> `_close_summary_writer(w)`."""
    return _same_arguments(ctx, match, "close_summary_writer")


def get_summary_writer(ctx: FixContext, match: Match) -> Plan | None:
    """`test_utils.get_summary_writer(logdir)` -> `_get_summary_writer(logdir)`, with torch's TensorBoard writer."""
    plan = _same_arguments(ctx, match, "get_summary_writer")
    return dataclasses.replace(plan, safety=Safety.UNSAFE) if plan is not None else None


def _same_arguments(ctx: FixContext, match: Match, name: str) -> Plan | None:
    call = matched_call(match)
    if call is None or not plain_args(call):
        return None
    return helper_call(ctx, match, name, f"{HELPER_NAMES[name]}({ctx.args_text(call)})", call)


_LOGGING = ("print", "info", "debug", "warning", "log")
_MASTER_PRINT = "torch_xla.core.xla_model.master_print"
_PRINT_OPTIONS = frozenset({"flush", "file", "fd", "end", "sep", "local"})  # print's and master_print's


def printed_report(ctx: FixContext, match: Match) -> Plan | None:
    """`print(met.metrics_report())`, `logger.info(...)` or `xm.master_print(..., flush=True)` of it -> nothing."""
    call = matched_call(match)
    outer = ctx.analysis.parent(call) if call is not None else None
    if call is None or not isinstance(outer, ast.Call) or outer.args != [call]:
        return None
    if any(k.arg not in _PRINT_OPTIONS for k in outer.keywords):
        return None
    func = outer.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    master = _MASTER_PRINT in ctx.analysis.qualified(func, match.scope)
    stmt = ctx.analysis.parent(outer)
    if (name not in _LOGGING and not master) or not (isinstance(stmt, ast.Expr) and stmt.value is outer):
        return None
    return ctx.delete_statement(stmt)


def profiler_trace(ctx: FixContext, match: Match) -> Plan | None:
    """`xp.Trace(name, **annotations)` / `xp.StepTrace(name, step_num=s)` -> `torch.profiler.record_function(name)`.

    The annotations (`step_num=`, `is_training=`, ...) only labelled the XLA trace; `record_function`
    takes none, so they go.
    """
    call = matched_call(match)
    if call is None or len(call.args) > 1 or not plain_args(call):
        return None
    name = argument(call, "name", 0)
    if name is None:
        return None
    rendered = ctx.render("{torch}.profiler.record_function({name})", match, {"name": ctx.segment(name)})
    return ctx.replace(call, rendered[0], rendered[1]) if rendered else None


def set_rng_state(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.set_rng_state(seed)` -> `torch.neuron.manual_seed(seed)`; of a state that
    `xm.get_rng_state()` read, `torch.neuron.set_rng_state(state)` (unsafe, as that read is).

    torch_xla's state was an integer seed; `torch.neuron.get_rng_state()` returns a state tensor,
    which `manual_seed` rejects.
    """
    call = match.node
    if not isinstance(call, ast.Call) or not only_args(call, {"seed": 0, "device": 1}, match):
        return None
    if argument(call, "seed", 0) is None:
        return None  # `device` goes: `torch.neuron.manual_seed` seeds the current device (rules/NM208.toml)
    restore = messages.restores_rng_state(ctx.analysis, match)
    template = "{torch}.neuron.set_rng_state({0})" if restore else "{torch}.neuron.manual_seed({0})"
    rendered = ctx.render(template, match)
    if rendered is None:
        return None
    return ctx.replace(call, rendered[0], rendered[1], safety=Safety.UNSAFE if restore else None)


def get_rng_state(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.get_rng_state()` -> `torch.neuron.get_rng_state()`, a state tensor, where the seed it
    read goes back into `set_rng_state` or is kept; None where it is used as a number."""
    call = matched_call(match)
    if call is None or rng_state.used_as_number(ctx.analysis, call, match.scope):
        return None
    if not only_args(call, {"device": 0}, match):
        return None
    rendered = ctx.render("{torch}.neuron.get_rng_state()", match)
    return ctx.replace(call, rendered[0], rendered[1]) if rendered else None


DETECTORS: Mapping[str, tuple[tuple[type, ...], DetectorFn]] = MappingProxyType({})


FIXES: Mapping[str, FixFn] = MappingProxyType(
    {
        "convert_to_cpu": convert_to_cpu,
        "checkpoint": checkpoint,
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
        "set_rng_state": set_rng_state,
        "get_rng_state": get_rng_state,
    }
)
