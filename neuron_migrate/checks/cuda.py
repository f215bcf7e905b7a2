"""CUDA devices (NM801-NM803, NM809, NM812; `--from cuda`): device strings, `.cuda()`, `is_cuda`,
AMP, and the `"cuda" if ... else "cpu"` idiom.

Each fix writes `neuron` code, or with `--target accelerator` device-agnostic code
(`torch.accelerator`, `torch.get_device_module`) that runs unchanged on CUDA, Neuron and the CPU.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.index import needles
from neuron_migrate.analysis.names import Scope
from neuron_migrate.analysis.values import Detail, Edit, Match, Plan
from neuron_migrate.catalogue import MapEntry, RuleSpec
from neuron_migrate.checks.toolkit import FixContext, FixFn
from neuron_migrate.checks.toolkit_calls import (
    ACCEL_DEVICE,
    ACCEL_TYPE,
    keyword_of,
    replace_node,
    string_literal,
    string_value,
    synchronize,
    wants_accelerator,
)
from neuron_migrate.model import Safety


@dataclass(frozen=True)
class DeviceSlot(Detail):
    """Where a matched `"cuda"` stands (`compare`, `argument`, `device_call`, `device_index`), and
    the device index it names (`"f"` for an f-string's)."""

    slot: str = ""
    index: str = ""


DetectorFn = Callable[[RuleSpec, Analysis, ast.AST, Scope], Iterator[Match]]


CUDA_STRING = re.compile(r"^cuda(?::(\d+))?$")


_DEVICE_KEYWORDS = {"device", "map_location"}


_DEVICE_CALLS = {"torch.device"}


_AUTOCAST = {"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"}


_CUDA_AUTOCAST = {"torch.cuda.amp.autocast", "torch.cuda.amp.autocast_mode.autocast"}


_SCALER = {"torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler"}


_CUDA_SCALER = {"torch.cuda.amp.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler"}


_IS_AVAILABLE = {"torch.cuda.is_available"}


_DEVICE_MESSAGE = "Replace the device string `{old}` with the current accelerator, else the CPU"


_COMPARE_MESSAGE = "Compare with the current accelerator's type instead of `{old}`; it is None on the CPU"


_AMP_MESSAGE = "Replace `{old}` with its `torch.amp` form on the current accelerator, else the CPU"


def _handled(analysis: Analysis, node: ast.AST) -> bool:
    return id(node) in analysis.handled


def _is_torch_module(analysis: Analysis, node: ast.AST, scope: Scope) -> bool:
    """Whether `node` names a torch module (so `torch.cuda` is not a `.cuda` attribute)."""
    return any(n == "torch" or n.startswith("torch.") for n in analysis.qualified(node, scope))


# -- NM801: device strings ---------------------------------------------------------------------
@needles("device", "map_location", "to", "type", names=_DEVICE_CALLS)
def cuda_device_string(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`"cuda"` / `"cuda:N"` in `.to()`, `device=`, `map_location=`, `torch.device()`, and `.type == "cuda"`."""
    if isinstance(node, ast.Call):
        yield from _device_call(rule, analysis, node, scope)
    elif isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        if any(isinstance(o, ast.Attribute) and o.attr == "type" for o in operands):
            for operand in operands:
                if string_value(operand) == "cuda":
                    entry = MapEntry(old="cuda", fix="cuda_device_string", accelerator_message=_COMPARE_MESSAGE)
                    yield Match(rule, operand, scope, entry, "cuda", '"cuda"', detail=DeviceSlot("compare"))


def _device_call(rule: RuleSpec, analysis: Analysis, call: ast.Call, scope: Scope) -> Iterator[Match]:
    names = analysis.call_names(call, scope)
    if names & (_AUTOCAST | _SCALER):
        return  # NM803 rewrites these whole, with the dtype
    slots: list[tuple[ast.AST, str]] = [(k.value, "argument") for k in call.keywords if k.arg in _DEVICE_KEYWORDS]
    func = call.func
    if call.args and names & _DEVICE_CALLS:
        slots.append((call.args[0], "device_call" if len(call.args) == 1 and not call.keywords else "device_index"))
    elif call.args and isinstance(func, ast.Attribute) and func.attr == "to":
        slots.append((call.args[0], "argument"))
    for value, slot in slots:
        text = string_value(value)
        found = CUDA_STRING.match(text) if text is not None else None
        if found is None and _indexed_fstring(value):
            text, index = analysis.segment(value), "f"  # f"cuda:{local_rank}"
        elif found is None or _handled(analysis, value):
            continue
        else:
            index = found.group(1) or ""
        entry = MapEntry(old=text or "", fix="cuda_device_string", accelerator_message=_DEVICE_MESSAGE)
        written = text if index == "f" else f'"{text}"'
        yield Match(rule, value, scope, entry, text or "", written or "", detail=DeviceSlot(slot, index))


def _indexed_fstring(node: ast.AST) -> bool:
    """`f"cuda:{rank}"`: an f-string that starts with `cuda:` and goes on with one value."""
    if not isinstance(node, ast.JoinedStr) or len(node.values) != 2:
        return False
    head, tail = node.values
    return isinstance(head, ast.Constant) and head.value == "cuda:" and isinstance(tail, ast.FormattedValue)


# -- NM802: `.cuda()` ---------------------------------------------------------------------------
@needles("cuda")
def cuda_method(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`x.cuda()`, `model.cuda(n)`, `x.cuda(non_blocking=True)` on tensors and modules."""
    assert isinstance(node, ast.Call)
    func = node.func
    if not isinstance(func, ast.Attribute) or func.attr != "cuda" or _is_torch_module(analysis, func.value, scope):
        return
    entry = MapEntry(
        old="cuda",
        fix="cuda_method",
        accelerator_message="Replace `{old}` with a move to the current accelerator, else the CPU",
    )
    yield Match(rule, node, scope, entry, "cuda", f"{_short(analysis, func.value)}.cuda()")


def _short(analysis: Analysis, node: ast.AST) -> str:
    text = analysis.segment(node)
    return text if len(text) <= 30 and "\n" not in text else "..."


# -- NM812: `is_cuda` ------------------------------------------------------------------------------
@needles("is_cuda")
def cuda_tensor_check(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`x.is_cuda` read on a tensor or module."""
    assert isinstance(node, ast.Attribute)
    if node.attr != "is_cuda" or not isinstance(node.ctx, ast.Load) or _is_torch_module(analysis, node.value, scope):
        return
    entry = MapEntry(
        old="is_cuda",
        fix="cuda_tensor_check",
        accelerator_message="Replace `{old}` with a check of the device type against the current accelerator",
    )
    yield Match(rule, node, scope, entry, "is_cuda", f"{_short(analysis, node.value)}.is_cuda")


# -- NM803: AMP ------------------------------------------------------------------------------------
@needles(names=_CUDA_AUTOCAST | _CUDA_SCALER | _AUTOCAST | _SCALER)
def cuda_amp(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`torch.cuda.amp.autocast/GradScaler(...)`, `torch.autocast("cuda")`, `torch.amp.GradScaler("cuda")`."""
    assert isinstance(node, ast.Call)
    names = analysis.call_names(node, scope)
    written = analysis.segment(node.func)
    if names & _CUDA_AUTOCAST:
        entry = MapEntry(old="torch.cuda.amp.autocast", fix="cuda_autocast", accelerator_message=_AMP_MESSAGE)
        yield Match(rule, node, scope, entry, "torch.cuda.amp.autocast", written)
    elif names & _CUDA_SCALER:
        entry = MapEntry(old="torch.cuda.amp.GradScaler", fix="cuda_grad_scaler", accelerator_message=_AMP_MESSAGE)
        yield Match(rule, node, scope, entry, "torch.cuda.amp.GradScaler", written)
    elif names & (_AUTOCAST | _SCALER):
        device = node.args[0] if node.args else None
        keyword = keyword_of(node, "device_type") or keyword_of(node, "device")
        device = keyword.value if keyword is not None else device
        if string_value(device) == "cuda":
            fix = "cuda_autocast" if names & _AUTOCAST else "cuda_grad_scaler"
            entry = MapEntry(old=written, fix=fix, accelerator_message=_AMP_MESSAGE)
            yield Match(rule, node, scope, entry, written, f'{written}("cuda")')


# -- NM809: the device idiom -----------------------------------------------------------------------
@needles(names=_DEVICE_CALLS | _IS_AVAILABLE)  # the IfExp tests `torch.cuda.is_available()`
def cuda_idiom(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`"cuda" if torch.cuda.is_available() else "cpu"`, alone or inside `torch.device(...)`."""
    if isinstance(node, ast.Call):
        if len(node.args) == 1 and not node.keywords and analysis.call_names(node, scope) & _DEVICE_CALLS:
            inner = node.args[0]
            if isinstance(inner, ast.IfExp) and _idiom(analysis, inner, scope) is not None:
                _claim(analysis, inner)
                yield _idiom_match(rule, analysis, node, inner, scope, "device_call")
    elif isinstance(node, ast.IfExp) and not _handled(analysis, node) and _idiom(analysis, node, scope) is not None:
        _claim(analysis, node)
        yield _idiom_match(rule, analysis, node, node, scope, "string")


def _idiom(analysis: Analysis, node: ast.IfExp, scope: Scope) -> str | None:
    """The CUDA device string of the idiom (`cuda` or `cuda:N`), or None."""
    test = node.test
    if not isinstance(test, ast.Call) or test.args or test.keywords:
        return None
    if not analysis.call_names(test, scope) & _IS_AVAILABLE:
        return None
    body, orelse = string_value(node.body), string_value(node.orelse)
    if body is None or orelse != "cpu" or CUDA_STRING.match(body) is None:
        return None
    return body


def _claim(analysis: Analysis, node: ast.IfExp) -> None:
    """Keep NM801 and NM805 off the parts of an idiom this rule rewrites whole."""
    analysis.handled.update({id(node), id(node.body), id(node.test)})


def _idiom_match(rule: RuleSpec, analysis: Analysis, node: ast.AST, inner: ast.IfExp, scope: Scope, slot: str) -> Match:
    written = (
        analysis.segment(node)
        if len(analysis.segment(node)) <= 70
        else '"cuda" if torch.cuda.is_available() else "cpu"'
    )
    text = string_value(inner.body) or "cuda"
    entry = MapEntry(
        old=text, fix="cuda_idiom", accelerator_message="Replace `{old}` with the current accelerator, else the CPU"
    )
    return Match(rule, node, scope, entry, text, written, detail=DeviceSlot(slot))


_CUDA_AMP_ARGS = ("enabled", "dtype", "cache_enabled")


_AUTOCAST_ARGS = ("device_type", "dtype", "enabled", "cache_enabled")


def _simple_args(call: ast.Call) -> bool:
    return not any(isinstance(a, ast.Starred) for a in call.args) and all(k.arg for k in call.keywords)


# -- NM801 ------------------------------------------------------------------------------------------
def fix_cuda_device_string(ctx: FixContext, match: Match) -> Plan | None:
    """`"cuda"` -> `"neuron"`; with `--target accelerator`, the current accelerator or the CPU."""
    detail = match.detail if isinstance(match.detail, DeviceSlot) else DeviceSlot()
    slot, index = detail.slot, detail.index
    node, parent = match.node, ctx.analysis.parent(match.node)
    if parent is None:
        return None  # only the module has no parent; a matched string always has one
    dropped = Safety.UNSAFE if index or slot == "device_index" else None  # the index is dropped
    if not wants_accelerator(ctx, match):
        if slot == "device_index":
            return replace_node(ctx, match, parent, '{torch}.device("neuron")', dropped)
        text = '"neuron"' if index == "f" else string_literal(ctx, node, "neuron")
        return ctx.replace(node, text, safety=dropped) if text else None
    if slot == "compare":
        return None  # `torch.accelerator.current_accelerator()` is None on the CPU; a human decides
    if slot in ("device_call", "device_index"):
        return replace_node(ctx, match, parent, ACCEL_DEVICE, dropped)
    return replace_node(ctx, match, node, ACCEL_DEVICE, dropped)


# -- NM802 ------------------------------------------------------------------------------------------
def fix_cuda_method(ctx: FixContext, match: Match) -> Plan | None:
    """`x.cuda()` -> `x.to("neuron")`; `x.cuda(n)` drops `n` (unsafe); `non_blocking` is kept."""
    call = match.node
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
    if not _simple_args(call) or len(call.args) > 2:
        return None
    named = dict(zip(("device", "non_blocking"), call.args))
    named.update({k.arg: k.value for k in call.keywords if k.arg})
    if set(named) - {"device", "non_blocking", "memory_format"}:
        return None
    device = named.pop("device", None)
    has_index = device is not None and not (isinstance(device, ast.Constant) and device.value is None)
    target = ACCEL_DEVICE if wants_accelerator(ctx, match) else '"neuron"'
    rest = "".join(f", {name}={ctx.segment(value)}" for name, value in named.items())
    rendered = ctx.render(f".to({target}{rest})", match)
    if rendered is None:
        return None
    start = ctx.src.node_span(call.func.value)[1]
    end = ctx.src.node_span(call)[1]
    return Plan((Edit(start, end, rendered[0]),), rendered[1], Safety.UNSAFE if has_index else None)


# -- NM812 ------------------------------------------------------------------------------------------
def fix_cuda_tensor_check(ctx: FixContext, match: Match) -> Plan | None:
    """`x.is_cuda` -> `x.device.type == "neuron"`; no fix with `--target accelerator`."""
    node = match.node
    assert isinstance(node, ast.Attribute)
    if wants_accelerator(ctx, match):
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
    named.update({k.arg: k.value for k in call.keywords if k.arg})
    named.pop("device_type", None)
    dtype = ctx.segment(named.pop("dtype")) if "dtype" in named else "{torch}.float16"
    accelerator = wants_accelerator(ctx, match)
    parts = [ACCEL_TYPE if accelerator else '"neuron"', f"dtype={dtype}"]
    parts += [f"{name}={ctx.segment(value)}" for name, value in named.items()]
    return replace_node(
        ctx, match, call, f"{{torch}}.autocast({', '.join(parts)})", Safety.UNSAFE if accelerator else None
    )


def cuda_grad_scaler(ctx: FixContext, match: Match) -> Plan | None:
    """`torch.cuda.amp.GradScaler(...)` -> `torch.amp.GradScaler("neuron", ...)`; `"cuda"` -> `"neuron"`."""
    call = match.node
    if not isinstance(call, ast.Call) or not _simple_args(call):
        return None
    accelerator = wants_accelerator(ctx, match)
    device = ACCEL_TYPE if accelerator else '"neuron"'
    safety = Safety.UNSAFE if accelerator else None
    if match.qualified == "torch.cuda.amp.GradScaler":
        inner = ctx.args_text(call).strip()
        if "#" in inner or "\n" in inner:
            return None
        args = f"{device}, {inner}" if inner else device
        return replace_node(ctx, match, call, f"{{torch}}.amp.GradScaler({args})", safety)
    keyword = next((k for k in call.keywords if k.arg == "device"), None)
    if keyword is None and not call.args:
        return None
    node = keyword.value if keyword is not None else call.args[0]
    if accelerator:
        return replace_node(ctx, match, node, ACCEL_TYPE, safety)
    text = string_literal(ctx, node, "neuron")
    return ctx.replace(node, text) if text else None


# -- NM809 ------------------------------------------------------------------------------------------
def fix_cuda_idiom(ctx: FixContext, match: Match) -> Plan | None:
    """`"cuda" if torch.cuda.is_available() else "cpu"` -> the same test for `neuron`, or the accelerator's type."""
    slot = match.detail.slot if isinstance(match.detail, DeviceSlot) else None
    indexed = match.qualified != "cuda"
    safety = Safety.UNSAFE if indexed else None
    if wants_accelerator(ctx, match):
        return replace_node(ctx, match, match.node, ACCEL_DEVICE if slot == "device_call" else ACCEL_TYPE, safety)
    idiom = '"neuron" if {torch}.neuron.is_available() else "cpu"'
    template = f"{{torch}}.device({idiom})" if slot == "device_call" else idiom
    return replace_node(ctx, match, match.node, template, safety)


# -- NM805 ------------------------------------------------------------------------------------------
def cuda_synchronize(ctx: FixContext, match: Match) -> Plan | None:
    """`torch.cuda.synchronize(d)` -> `torch.neuron.synchronize(d)`; with `--target accelerator`,
    `torch.accelerator.synchronize(d)` where there is an accelerator (it raises where there is none)."""
    call, entry = match.node, match.entry
    if not isinstance(call, ast.Call) or not _simple_args(call) or entry is None or entry.new_call is None:
        return None
    if wants_accelerator(ctx, match):
        return synchronize(ctx, match, ctx.args_text(call))
    return replace_node(ctx, match, call, entry.new_call)


DETECTORS: Mapping[str, tuple[tuple[type, ...], DetectorFn]] = MappingProxyType(
    {
        "cuda_device_string": ((ast.Call, ast.Compare), cuda_device_string),
        "cuda_method": ((ast.Call,), cuda_method),
        "cuda_tensor_check": ((ast.Attribute,), cuda_tensor_check),
        "cuda_amp": ((ast.Call,), cuda_amp),
        "cuda_idiom": ((ast.Call, ast.IfExp), cuda_idiom),
    }
)


FIXES: Mapping[str, FixFn] = MappingProxyType(
    {
        "cuda_device_string": fix_cuda_device_string,
        "cuda_method": fix_cuda_method,
        "cuda_tensor_check": fix_cuda_tensor_check,
        "cuda_autocast": cuda_autocast,
        "cuda_grad_scaler": cuda_grad_scaler,
        "cuda_idiom": fix_cuda_idiom,
        "cuda_synchronize": cuda_synchronize,
    }
)
