"""Data loading (NM308): `MpDeviceLoader` -> a plain loader moved to the device by a helper."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from types import MappingProxyType

from neuron_migrate.analysis.values import HelperRequest, Match, Plan, Request
from neuron_migrate.checks.toolkit import DetectorFn, FixContext, FixFn
from neuron_migrate.checks.toolkit_calls import argument, is_default, is_type_test
from neuron_migrate.model import Safety

_HELPER_NAMES = ("_DeviceLoader", "_move_to_device")


# MpDeviceLoader/ParallelLoader options that only tuned throughput; anything else stops the fix.
_LOADER_TUNING = frozenset(
    {"loader_prefetch_size", "device_prefetch_size", "host_to_device_transfer_threads", "batches_per_execution"}
)


def device_loader(ctx: FixContext, match: Match) -> Plan | None:
    """`pl.MpDeviceLoader(loader, device)` -> `_DeviceLoader(loader, device)`, defined in the file.

    None when the call passes an option the helper cannot keep (`input_sharding=`, `batchdim=`).
    """
    call = match.node
    if not isinstance(call, ast.Call):
        return _isinstance_check(ctx, match)
    known = ("loader", "device", "devices", *_LOADER_TUNING)
    if len(call.args) > 2 or any(k.arg not in known and not is_default(match, k) for k in call.keywords):
        return None  # `batchdim=0` is ParallelLoader's default: as if absent
    outer: ast.AST | None
    outer = call  # apart from its annotation: mypy narrows it to ast.Call
    if match.qualified.endswith("ParallelLoader"):
        attribute = ctx.analysis.parent(call)
        outer = ctx.analysis.parent(attribute) if isinstance(attribute, ast.Attribute) else None
        if not (
            isinstance(attribute, ast.Attribute)
            and attribute.attr == "per_device_loader"
            and isinstance(outer, ast.Call)
        ):
            return None
        if len(outer.args) != 1 or outer.keywords:
            return None
    loader = argument(call, "loader", 0)
    device = argument(outer, "device", 0) if outer is not call else argument(call, "device", 1)
    if outer is None or loader is None or device is None or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    needed = _helper_keys(ctx)
    if needed is None:
        return None  # the helper names mean something else in this file
    text = f"_DeviceLoader({ctx.segment(loader)}, {ctx.segment(device)})"
    return ctx.replace(outer, text, needed)


def _helper_keys(ctx: FixContext) -> tuple[Request, ...] | None:
    """The request that writes `_DeviceLoader` into the file; () when it is there, None when
    its names mean something else here."""
    resolver = ctx.analysis.resolver
    existing = [resolver.lookup(name, resolver.module_scope) for name in _HELPER_NAMES]
    if any(existing) and not all(_defines_helper(b) for b in existing):
        return None
    return () if all(existing) else (HelperRequest("device_loader", "torch"),)


def _isinstance_check(ctx: FixContext, match: Match) -> Plan | None:
    """`isinstance(x, pl.MpDeviceLoader)` (or another type test) -> `isinstance(x, _DeviceLoader)`, the class this file's
    loaders become, in a file that builds one. Unsafe: a loader another file built is that
    file's `_DeviceLoader`."""
    node = match.node
    if not match.qualified.endswith("MpDeviceLoader") or not is_type_test(ctx.analysis, node):
        return None  # referenced, not called: a finding without a fix
    resolver = ctx.analysis.resolver
    built_here = resolver.lookup("_DeviceLoader", resolver.module_scope) or any(
        match.qualified in ctx.analysis.call_names(call, resolver.module_scope) for call in ctx.analysis.nodes(ast.Call)
    )
    if not built_here:
        return None  # no loader of this file's is tested: the test is about other files' loaders
    needed = _helper_keys(ctx)
    return None if needed is None else ctx.replace(node, "_DeviceLoader", needed, safety=Safety.UNSAFE)


def _defines_helper(bindings: list) -> bool:
    return len(bindings) == 1 and isinstance(bindings[0].node, (ast.ClassDef, ast.FunctionDef))


DETECTORS: Mapping[str, tuple[tuple[type, ...], DetectorFn]] = MappingProxyType({})


FIXES: Mapping[str, FixFn] = MappingProxyType(
    {
        "device_loader": device_loader,
    }
)
