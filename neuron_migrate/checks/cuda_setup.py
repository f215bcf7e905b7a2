"""CUDA setup (NM804, NM806-NM808, NM810; `--from cuda`): `nccl`, CUDA environment variables,
CUDA-only imports, extension builds and cuDNN/CUDA backend flags.

With `--target accelerator` the fixes write code that still runs on CUDA
(`dist.get_default_backend_for_device`), or leave the finding.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from types import MappingProxyType

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.index import needles
from neuron_migrate.analysis.names import Scope
from neuron_migrate.analysis.values import Edit, Match, Plan
from neuron_migrate.catalogue import MapEntry, RuleSpec
from neuron_migrate.checks.toolkit import DetectorFn, FixContext, FixFn
from neuron_migrate.checks.toolkit_calls import (
    ACCEL_DEVICE,
    keyword_of,
    replace_node,
    string_literal,
    string_value,
    wants_accelerator,
)

_INIT_PG = {
    "torch.distributed.init_process_group",
    "torch.distributed.distributed_c10d.init_process_group",
    "torch.distributed.new_group",
    "torch.distributed.distributed_c10d.new_group",
}


_EXTENSION = {"torch.utils.cpp_extension.CUDAExtension"}


_EXTENSION_LOAD = {"torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline"}


# -- NM804: process groups ---------------------------------------------------------------------------
@needles(names=_INIT_PG)
def nccl_backend(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`init_process_group("nccl")`, `backend="nccl"`, `"cpu:gloo,cuda:nccl"`, `new_group(backend="nccl")`."""
    assert isinstance(node, ast.Call)
    if not analysis.call_names(node, scope) & _INIT_PG:
        return
    is_init = any(n.endswith("init_process_group") for n in analysis.call_names(node, scope))
    keyword = keyword_of(node, "backend")
    backend = keyword.value if keyword is not None else (node.args[0] if node.args and is_init else None)
    text = string_value(backend)
    if backend is None or text is None or "nccl" not in text.lower():
        return
    message = "Replace the process-group backend `{old}` with `dist.get_default_backend_for_device(...)`"
    yield Match(
        rule, backend, scope, MapEntry(old=text, fix="nccl_backend", accelerator_message=message), text, f'"{text}"'
    )


# -- NM810: cuDNN / CUDA backend flags -------------------------------------------------------------
_FLAG_MODULES = ("torch.backends.cudnn", "torch.backends.cuda")


def _is_flag(analysis: Analysis, node: ast.AST, scope: Scope) -> bool:
    return any(n == m or n.startswith(m + ".") for n in analysis.qualified(node, scope) for m in _FLAG_MODULES)


@needles(under=_FLAG_MODULES)
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


@needles(maps="words")  # an import spells the module it brings in
def cuda_library_import(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """Imports of the packages the rule lists (`old = "flash_attn"` covers `flash_attn.*`)."""
    assert isinstance(node, (ast.Import, ast.ImportFrom))
    for module in _imported_modules(node):
        entry = next((e for e in rule.maps if module == e.old or module.startswith(e.old + ".")), None)
        if entry is not None:
            yield Match(rule, node, scope, entry, entry.old, module)
            return


# -- NM808: CUDA extension builds ----------------------------------------------------------------------
@needles(names=_EXTENSION | _EXTENSION_LOAD)
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
    if keyword_of(call, "cuda_sources") is not None:
        return True
    with_cuda = keyword_of(call, "with_cuda")
    if with_cuda is not None and not (isinstance(with_cuda.value, ast.Constant) and not with_cuda.value.value):
        return True
    return any((string_value(n) or "").endswith((".cu", ".cuh")) for n in ast.walk(call))


# -- NM804 ------------------------------------------------------------------------------------------
def fix_nccl_backend(ctx: FixContext, match: Match) -> Plan | None:
    """`"nccl"` -> `"neuron"`; `"cpu:gloo,cuda:nccl"` -> `"cpu:gloo,neuron:neuron"`.

    With `--target accelerator`, `dist.get_default_backend_for_device(<current accelerator>)`:
    nccl on CUDA, neuron on Neuron, gloo on the CPU.
    """
    node = match.node
    value = match.qualified.replace(" ", "")
    if wants_accelerator(ctx, match):
        if value != "nccl":
            return None
        return replace_node(ctx, match, node, f"{{dist}}.get_default_backend_for_device({ACCEL_DEVICE})")
    if value == "nccl":
        new = "neuron"
    elif set(value.split(",")) <= {"cpu:gloo", "cuda:nccl"} and "cuda:nccl" in value.split(","):
        new = value.replace("cuda:nccl", "neuron:neuron")
    else:
        return None
    text = string_literal(ctx, node, new)
    return ctx.replace(node, text) if text else None


# -- NM806 ------------------------------------------------------------------------------------------
def rename_env_var(ctx: FixContext, match: Match) -> Plan | None:
    """`os.environ["CUDA_LAUNCH_BLOCKING"] = ...` -> the Neuron variable named by the entry's `new`."""
    entry = match.entry
    if entry is None or not entry.new or wants_accelerator(ctx, match):
        return None
    node = match.node
    for child in ast.walk(node):
        if isinstance(child, ast.Constant) and child.value == match.qualified:
            text = string_literal(ctx, child, entry.new)
            return ctx.replace(child, text) if text else None
    if isinstance(node, ast.keyword) and node.arg == match.qualified:
        start = ctx.src.node_span(node)[0]
        return Plan((Edit(start, start + len(node.arg), entry.new),))
    return None


# -- NM810 ------------------------------------------------------------------------------------------
def remove_flag_assignment(ctx: FixContext, match: Match) -> Plan | None:
    """`torch.backends.cudnn.benchmark = True` on its own line -> nothing (Neuron ignores it)."""
    stmt = match.node
    if wants_accelerator(ctx, match) or not isinstance(stmt, ast.Assign):
        return None  # with --target accelerator the flag still matters on CUDA
    if not isinstance(stmt.value, ast.Constant):
        return None  # the value may have side effects
    return ctx.delete_statement(stmt)


DETECTORS: Mapping[str, tuple[tuple[type, ...], DetectorFn]] = MappingProxyType(
    {
        "nccl_backend": ((ast.Call,), nccl_backend),
        "cuda_library_import": ((ast.Import, ast.ImportFrom), cuda_library_import),
        "cuda_extension": ((ast.Call,), cuda_extension),
        "cuda_backend_flag": ((ast.Assign, ast.Attribute), cuda_backend_flag),
    }
)


FIXES: Mapping[str, FixFn] = MappingProxyType(
    {
        "nccl_backend": fix_nccl_backend,
        "rename_env_var": rename_env_var,
        "remove_flag_assignment": remove_flag_assignment,
    }
)
