"""Fixes of the CUDA family (NM8xx). Each writes `neuron` code, or with `--target accelerator`
device-agnostic code (`torch.accelerator`, `torch.get_device_module`,
`dist.get_default_backend_for_device`) that runs unchanged on CUDA, Neuron and the CPU.

Pure functions (FixContext, Match) -> Plan | None; None leaves the finding with its guidance.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from neuron_migrate.analysis.analyze import Match, Plan
from neuron_migrate.model import Safety

if TYPE_CHECKING:
    from neuron_migrate.checks.fixes import FixContext

# The current accelerator, or the CPU where there is none (check_available: a CUDA build on a
# machine without a GPU counts as none). Both APIs exist in torch 2.13 and 2.14.
ACCEL_DEVICE = '{torch}.accelerator.current_accelerator(check_available=True) or {torch}.device("cpu")'
ACCEL_TYPE = f"({ACCEL_DEVICE}).type"
_STRING = re.compile(r"([rRuU]?)('''|\"\"\"|'|\")(.*)\2", re.DOTALL)
_CUDA_AMP_ARGS = ("enabled", "dtype", "cache_enabled")
_AUTOCAST_ARGS = ("device_type", "dtype", "enabled", "cache_enabled")


def _accelerator(ctx: FixContext, match: Match) -> bool:
    return ctx.analysis.target == "accelerator"


def _string(ctx: FixContext, node: ast.AST, value: str) -> str | None:
    """`value` as a string literal in the quote style of `node`, or None for f-strings and concatenation."""
    found = _STRING.fullmatch(ctx.segment(node))
    return f"{found.group(1)}{found.group(2)}{value}{found.group(2)}" if found else None


def _replace(ctx: FixContext, match: Match, node: ast.AST, template: str, safety: Safety | None = None) -> Plan | None:
    rendered = ctx.render(template, match)
    if rendered is None:
        return None
    return ctx.replace(node, rendered[0], rendered[1], safety=safety)


def _simple_args(call: ast.Call) -> bool:
    return not any(isinstance(a, ast.Starred) for a in call.args) and all(k.arg for k in call.keywords)


# -- NM801 ------------------------------------------------------------------------------------------
def cuda_device_string(ctx: FixContext, match: Match) -> Plan | None:
    """`"cuda"` -> `"neuron"`; with `--target accelerator`, the current accelerator or the CPU."""
    extra = dict(match.extra)
    slot, index = extra.get("slot"), extra.get("index")
    node = match.node
    dropped = Safety.UNSAFE if index or slot == "device_index" else None  # the index is dropped
    if not _accelerator(ctx, match):
        if slot == "device_index":
            return _replace(ctx, match, ctx.analysis.parent(node), '{torch}.device("neuron")', dropped)
        text = '"neuron"' if index == "f" else _string(ctx, node, "neuron")
        return ctx.replace(node, text, safety=dropped) if text else None
    if slot == "compare":
        return None  # `torch.accelerator.current_accelerator()` is None on the CPU; a human decides
    if slot in ("device_call", "device_index"):
        return _replace(ctx, match, ctx.analysis.parent(node), ACCEL_DEVICE, dropped)
    return _replace(ctx, match, node, ACCEL_DEVICE, dropped)


# -- NM802 ------------------------------------------------------------------------------------------
def cuda_method(ctx: FixContext, match: Match) -> Plan | None:
    """`x.cuda()` -> `x.to("neuron")`; `x.cuda(n)` drops `n` (unsafe); `non_blocking` is kept."""
    call = match.node
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
    if not _simple_args(call) or len(call.args) > 2:
        return None
    named = dict(zip(("device", "non_blocking"), call.args))
    named.update({k.arg: k.value for k in call.keywords if k.arg})  # type: ignore[misc]
    if set(named) - {"device", "non_blocking", "memory_format"}:
        return None
    device = named.pop("device", None)
    has_index = device is not None and not (isinstance(device, ast.Constant) and device.value is None)
    target = ACCEL_DEVICE if _accelerator(ctx, match) else '"neuron"'
    rest = "".join(f", {name}={ctx.segment(value)}" for name, value in named.items())
    rendered = ctx.render(f".to({target}{rest})", match)
    if rendered is None:
        return None
    start = ctx.src.node_span(call.func.value)[1]
    end = ctx.src.node_span(call)[1]
    return Plan(((start, end, rendered[0]),), rendered[1], Safety.UNSAFE if has_index else None)


# -- NM812 ------------------------------------------------------------------------------------------
def cuda_tensor_check(ctx: FixContext, match: Match) -> Plan | None:
    """`x.is_cuda` -> `x.device.type == "neuron"`; no fix with `--target accelerator`."""
    node = match.node
    assert isinstance(node, ast.Attribute)
    if _accelerator(ctx, match):
        return None
    return ctx.replace(node, f'{ctx.segment(node.value)}.device.type == "neuron"')


# -- NM803 ------------------------------------------------------------------------------------------
def cuda_autocast(ctx: FixContext, match: Match) -> Plan | None:
    """`torch.cuda.amp.autocast(...)` / `torch.autocast("cuda", ...)` -> `torch.autocast("neuron", dtype=...)`.

    CUDA autocast defaults to float16; the fix writes that dtype out so it survives the move.
    """
    call = match.node
    if not isinstance(call, ast.Call) or not _simple_args(call):
        return None
    positions = _CUDA_AMP_ARGS if match.qualified == "torch.cuda.amp.autocast" else _AUTOCAST_ARGS
    if len(call.args) > len(positions):
        return None
    named = dict(zip(positions, call.args))
    named.update({k.arg: k.value for k in call.keywords if k.arg})  # type: ignore[misc]
    named.pop("device_type", None)
    dtype = ctx.segment(named.pop("dtype")) if "dtype" in named else "{torch}.float16"
    accelerator = _accelerator(ctx, match)
    parts = [ACCEL_TYPE if accelerator else '"neuron"', f"dtype={dtype}"]
    parts += [f"{name}={ctx.segment(value)}" for name, value in named.items()]
    return _replace(ctx, match, call, f"{{torch}}.autocast({', '.join(parts)})", Safety.UNSAFE if accelerator else None)


def cuda_grad_scaler(ctx: FixContext, match: Match) -> Plan | None:
    """`torch.cuda.amp.GradScaler(...)` -> `torch.amp.GradScaler("neuron", ...)`; `"cuda"` -> `"neuron"`."""
    call = match.node
    if not isinstance(call, ast.Call) or not _simple_args(call):
        return None
    accelerator = _accelerator(ctx, match)
    device = ACCEL_TYPE if accelerator else '"neuron"'
    safety = Safety.UNSAFE if accelerator else None
    if match.qualified == "torch.cuda.amp.GradScaler":
        inner = ctx.args_text(call).strip()
        if "#" in inner or "\n" in inner:
            return None
        args = f"{device}, {inner}" if inner else device
        return _replace(ctx, match, call, f"{{torch}}.amp.GradScaler({args})", safety)
    keyword = next((k for k in call.keywords if k.arg == "device"), None)
    if keyword is None and not call.args:
        return None
    node = keyword.value if keyword is not None else call.args[0]
    if accelerator:
        return _replace(ctx, match, node, ACCEL_TYPE, safety)
    text = _string(ctx, node, "neuron")
    return ctx.replace(node, text) if text else None


# -- NM804 ------------------------------------------------------------------------------------------
def nccl_backend(ctx: FixContext, match: Match) -> Plan | None:
    """`"nccl"` -> `"neuron"`; `"cpu:gloo,cuda:nccl"` -> `"cpu:gloo,neuron:neuron"`.

    With `--target accelerator`, `dist.get_default_backend_for_device(<current accelerator>)`:
    nccl on CUDA, neuron on Neuron, gloo on the CPU.
    """
    node = match.node
    value = match.qualified.replace(" ", "")
    if _accelerator(ctx, match):
        if value != "nccl":
            return None
        return _replace(ctx, match, node, f"{{dist}}.get_default_backend_for_device({ACCEL_DEVICE})")
    if value == "nccl":
        new = "neuron"
    elif set(value.split(",")) <= {"cpu:gloo", "cuda:nccl"} and "cuda:nccl" in value.split(","):
        new = value.replace("cuda:nccl", "neuron:neuron")
    else:
        return None
    text = _string(ctx, node, new)
    return ctx.replace(node, text) if text else None


# -- NM809 ------------------------------------------------------------------------------------------
def cuda_idiom(ctx: FixContext, match: Match) -> Plan | None:
    """`"cuda" if torch.cuda.is_available() else "cpu"` -> the same test for `neuron`, or the accelerator's type."""
    slot = dict(match.extra).get("slot")
    indexed = match.qualified != "cuda"
    safety = Safety.UNSAFE if indexed else None
    if _accelerator(ctx, match):
        return _replace(ctx, match, match.node, ACCEL_DEVICE if slot == "device_call" else ACCEL_TYPE, safety)
    idiom = '"neuron" if {torch}.neuron.is_available() else "cpu"'
    template = f"{{torch}}.device({idiom})" if slot == "device_call" else idiom
    return _replace(ctx, match, match.node, template, safety)


# -- NM806 ------------------------------------------------------------------------------------------
def rename_env_var(ctx: FixContext, match: Match) -> Plan | None:
    """`os.environ["CUDA_LAUNCH_BLOCKING"] = ...` -> the Neuron variable named by the entry's `new`."""
    entry = match.entry
    if entry is None or not entry.new or _accelerator(ctx, match):
        return None
    node = match.node
    for child in ast.walk(node):
        if isinstance(child, ast.Constant) and child.value == match.qualified:
            text = _string(ctx, child, entry.new)
            return ctx.replace(child, text) if text else None
    if isinstance(node, ast.keyword) and node.arg == match.qualified:
        start = ctx.src.node_span(node)[0]
        return Plan(((start, start + len(node.arg), entry.new),))
    return None


# -- NM810 ------------------------------------------------------------------------------------------
def remove_flag_assignment(ctx: FixContext, match: Match) -> Plan | None:
    """`torch.backends.cudnn.benchmark = True` on its own line -> nothing (Neuron ignores it)."""
    stmt = match.node
    if _accelerator(ctx, match) or not isinstance(stmt, ast.Assign):
        return None  # with --target accelerator the flag still matters on CUDA
    if not isinstance(stmt.value, ast.Constant):
        return None  # the value may have side effects
    return ctx.delete_statement(stmt)


FIXES: Mapping[str, Callable[[FixContext, Match], Plan | None]] = MappingProxyType(
    {
        "cuda_device_string": cuda_device_string,
        "cuda_method": cuda_method,
        "cuda_tensor_check": cuda_tensor_check,
        "cuda_autocast": cuda_autocast,
        "cuda_grad_scaler": cuda_grad_scaler,
        "nccl_backend": nccl_backend,
        "cuda_idiom": cuda_idiom,
        "rename_env_var": rename_env_var,
        "remove_flag_assignment": remove_flag_assignment,
    }
)
