"""Detectors of the CUDA family (NM8xx, `--from cuda`): device strings, `.cuda()`, `is_cuda`,
AMP, `nccl`, CUDA-only imports and extension builds, and the `"cuda" if ... else "cpu"` idiom.

Each detector is a pure function (rule, analysis, node, scope) -> matches. The map entries they
build name their fix in `checks/cuda_fixes.py`; what the fix writes depends on `--target`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType

from neuron_migrate.analysis.analyze import Analysis, Match
from neuron_migrate.analysis.names import Scope
from neuron_migrate.catalogue import MapEntry, RuleSpec

DetectorFn = Callable[[RuleSpec, Analysis, ast.AST, Scope], Iterator[Match]]
CUDA_STRING = re.compile(r"^cuda(?::(\d+))?$")
_DEVICE_KEYWORDS = {"device", "map_location"}
_DEVICE_CALLS = {"torch.device"}
_AUTOCAST = {"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"}
_CUDA_AUTOCAST = {"torch.cuda.amp.autocast", "torch.cuda.amp.autocast_mode.autocast"}
_SCALER = {"torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler"}
_CUDA_SCALER = {"torch.cuda.amp.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler"}
_IS_AVAILABLE = {"torch.cuda.is_available"}
_INIT_PG = {
    "torch.distributed.init_process_group",
    "torch.distributed.distributed_c10d.init_process_group",
    "torch.distributed.new_group",
    "torch.distributed.distributed_c10d.new_group",
}
_DEVICE_MESSAGE = "Replace the device string `{old}` with the current accelerator, else the CPU"
_COMPARE_MESSAGE = "Compare with the current accelerator's type instead of `{old}`; it is None on the CPU"
_AMP_MESSAGE = "Replace `{old}` with its `torch.amp` form on the current accelerator, else the CPU"
_EXTENSION = {"torch.utils.cpp_extension.CUDAExtension"}
_EXTENSION_LOAD = {"torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline"}


def _string(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _keyword(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def _handled(analysis: Analysis, node: ast.AST) -> bool:
    return id(node) in analysis.handled


def _is_torch_module(analysis: Analysis, node: ast.AST, scope: Scope) -> bool:
    """Whether `node` names a torch module (so `torch.cuda` is not a `.cuda` attribute)."""
    return any(n == "torch" or n.startswith("torch.") for n in analysis.qualified(node, scope))


# -- NM801: device strings ---------------------------------------------------------------------
def cuda_device_string(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`"cuda"` / `"cuda:N"` in `.to()`, `device=`, `map_location=`, `torch.device()`, and `.type == "cuda"`."""
    if isinstance(node, ast.Call):
        yield from _device_call(rule, analysis, node, scope)
    elif isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        if any(isinstance(o, ast.Attribute) and o.attr == "type" for o in operands):
            for operand in operands:
                if _string(operand) == "cuda":
                    entry = MapEntry(old="cuda", fix="cuda_device_string", accelerator_message=_COMPARE_MESSAGE)
                    yield Match(rule, operand, scope, entry, "cuda", '"cuda"', (("slot", "compare"),))


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
        text = _string(value)
        found = CUDA_STRING.match(text) if text is not None else None
        if found is None and _indexed_fstring(value):
            text, index = analysis.segment(value), "f"  # f"cuda:{local_rank}"
        elif found is None or _handled(analysis, value):
            continue
        else:
            index = found.group(1) or ""
        entry = MapEntry(old=text or "", fix="cuda_device_string", accelerator_message=_DEVICE_MESSAGE)
        extra = (("slot", slot), ("index", index))
        written = text if index == "f" else f'"{text}"'
        yield Match(rule, value, scope, entry, text or "", written or "", extra)


def _indexed_fstring(node: ast.AST) -> bool:
    """`f"cuda:{rank}"`: an f-string that starts with `cuda:` and goes on with one value."""
    if not isinstance(node, ast.JoinedStr) or len(node.values) != 2:
        return False
    head, tail = node.values
    return isinstance(head, ast.Constant) and head.value == "cuda:" and isinstance(tail, ast.FormattedValue)


# -- NM802: `.cuda()` ---------------------------------------------------------------------------
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
        keyword = _keyword(node, "device_type") or _keyword(node, "device")
        device = keyword.value if keyword is not None else device
        if _string(device) == "cuda":
            fix = "cuda_autocast" if names & _AUTOCAST else "cuda_grad_scaler"
            entry = MapEntry(old=written, fix=fix, accelerator_message=_AMP_MESSAGE)
            yield Match(rule, node, scope, entry, written, f'{written}("cuda")')


# -- NM804: process groups ---------------------------------------------------------------------------
def nccl_backend(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`init_process_group("nccl")`, `backend="nccl"`, `"cpu:gloo,cuda:nccl"`, `new_group(backend="nccl")`."""
    assert isinstance(node, ast.Call)
    if not analysis.call_names(node, scope) & _INIT_PG:
        return
    is_init = any(n.endswith("init_process_group") for n in analysis.call_names(node, scope))
    keyword = _keyword(node, "backend")
    backend = keyword.value if keyword is not None else (node.args[0] if node.args and is_init else None)
    text = _string(backend)
    if backend is None or text is None or "nccl" not in text.lower():
        return
    message = "Replace the process-group backend `{old}` with `dist.get_default_backend_for_device(...)`"
    yield Match(
        rule, backend, scope, MapEntry(old=text, fix="nccl_backend", accelerator_message=message), text, f'"{text}"'
    )


# -- NM809: the device idiom -----------------------------------------------------------------------
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
    body, orelse = _string(node.body), _string(node.orelse)
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
    text = _string(inner.body) or "cuda"
    entry = MapEntry(
        old=text, fix="cuda_idiom", accelerator_message="Replace `{old}` with the current accelerator, else the CPU"
    )
    return Match(rule, node, scope, entry, text, written, (("slot", slot),))


# -- NM810: cuDNN / CUDA backend flags -------------------------------------------------------------
_FLAG_MODULES = ("torch.backends.cudnn", "torch.backends.cuda")


def _is_flag(analysis: Analysis, node: ast.AST, scope: Scope) -> bool:
    return any(n == m or n.startswith(m + ".") for n in analysis.qualified(node, scope) for m in _FLAG_MODULES)


def cuda_backend_flag(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`torch.backends.cudnn.benchmark = True` (one target), and reads of the cuDNN / CUDA flags."""
    if isinstance(node, ast.Assign):
        target = node.targets[0]
        if len(node.targets) == 1 and isinstance(target, ast.Attribute) and _is_flag(analysis, target.value, scope):
            entry = MapEntry(old="flag", fix="remove_flag_assignment", accelerator_message=_FLAG_MESSAGE)
            yield Match(rule, node, scope, entry, "flag", analysis.segment(target))
        return
    assert isinstance(node, ast.Attribute)
    parent = analysis.parent(node)
    if isinstance(parent, ast.Attribute) and isinstance(parent.ctx, ast.Store):
        owner = analysis.parent(parent)
        if isinstance(owner, ast.Assign) and len(owner.targets) == 1 and owner.targets[0] is parent:
            return  # reported with the assignment
    if isinstance(node.ctx, ast.Load) and _is_flag(analysis, node, scope):
        message = "Remove `{old}`; Neuron has no cuDNN or CUDA backend to query or configure"
        entry = MapEntry(old="read", message=message, accelerator_message=_FLAG_MESSAGE)
        yield Match(rule, node, scope, entry, "read", analysis.segment(node))


_FLAG_MESSAGE = "Keep `{old}` for CUDA runs only; Neuron ignores the cuDNN and CUDA flags"


# -- NM807: CUDA-only libraries ----------------------------------------------------------------------
def _imported_modules(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.ImportFrom):
        return [node.module] if node.level == 0 and node.module else []
    return [alias.name for alias in node.names]


def cuda_library_import(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """Imports of the packages the rule lists (`old = "flash_attn"` covers `flash_attn.*`)."""
    assert isinstance(node, (ast.Import, ast.ImportFrom))
    for module in _imported_modules(node):
        entry = next((e for e in rule.maps if module == e.old or module.startswith(e.old + ".")), None)
        if entry is not None:
            yield Match(rule, node, scope, entry, entry.old, module)
            return


# -- NM808: CUDA extension builds ----------------------------------------------------------------------
def cuda_extension(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`CUDAExtension(...)`, and `load` / `load_inline` given CUDA sources or `with_cuda=True`."""
    assert isinstance(node, ast.Call)
    names = analysis.call_names(node, scope)
    written = analysis.segment(node.func)
    if names & _EXTENSION:
        yield Match(rule, node, scope, None, "CUDAExtension", written)
    elif names & _EXTENSION_LOAD and _builds_cuda(node):
        yield Match(rule, node, scope, None, written, written)


def _builds_cuda(call: ast.Call) -> bool:
    if _keyword(call, "cuda_sources") is not None:
        return True
    with_cuda = _keyword(call, "with_cuda")
    if with_cuda is not None and not (isinstance(with_cuda.value, ast.Constant) and not with_cuda.value.value):
        return True
    return any(_string(n) is not None and _string(n).endswith((".cu", ".cuh")) for n in ast.walk(call))  # type: ignore[union-attr]


DETECTORS: Mapping[str, tuple[tuple[type, ...], DetectorFn]] = MappingProxyType(
    {
        "cuda_device_string": ((ast.Call, ast.Compare), cuda_device_string),
        "cuda_method": ((ast.Call,), cuda_method),
        "cuda_tensor_check": ((ast.Attribute,), cuda_tensor_check),
        "cuda_amp": ((ast.Call,), cuda_amp),
        "nccl_backend": ((ast.Call,), nccl_backend),
        "cuda_idiom": ((ast.Call, ast.IfExp), cuda_idiom),
        "cuda_library_import": ((ast.Import, ast.ImportFrom), cuda_library_import),
        "cuda_extension": ((ast.Call,), cuda_extension),
        "cuda_backend_flag": ((ast.Assign, ast.Attribute), cuda_backend_flag),
    }
)
