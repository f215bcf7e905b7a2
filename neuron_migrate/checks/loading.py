"""Data loading (NM308): `MpDeviceLoader` -> a plain loader moved to the device by a helper."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from types import MappingProxyType

from neuron_migrate.analysis.analyze import Match, Plan
from neuron_migrate.checks.toolkit import DetectorFn, FixContext, FixFn, argument, is_default

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
        return None  # referenced, not called: a finding without a fix
    known = ("loader", "device", "devices", *_LOADER_TUNING)
    if len(call.args) > 2 or any(k.arg not in known and not is_default(match, k) for k in call.keywords):
        return None  # `batchdim=0` is ParallelLoader's default: as if absent
    outer: ast.AST | None = call
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
    device = argument(outer, "device", 0) if outer is not call else argument(call, "device", 1)  # type: ignore[arg-type]
    if outer is None or loader is None or device is None or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    resolver = ctx.analysis.resolver
    existing = [resolver.lookup(name, resolver.module_scope) for name in _HELPER_NAMES]
    if any(existing) and not all(_defines_helper(b) for b in existing):
        return None  # the helper names mean something else in this file
    needed = () if all(existing) else ("helper:device_loader:torch",)
    text = f"_DeviceLoader({ctx.segment(loader)}, {ctx.segment(device)})"
    return ctx.replace(outer, text, needed)


def _defines_helper(bindings: list) -> bool:
    return len(bindings) == 1 and isinstance(bindings[0].node, (ast.ClassDef, ast.FunctionDef))


DETECTORS: Mapping[str, tuple[tuple[type, ...], DetectorFn]] = MappingProxyType({})


FIXES: Mapping[str, FixFn] = MappingProxyType(
    {
        "device_loader": device_loader,
    }
)
