"""Record every ATen op that touches the `neuron` device, with the user line that caused it.

A `TorchDispatchMode` sees each op once, above the device. For ops run by autograd in the
backward pass the line is the forward line that built the autograd node (anomaly-mode
metadata), because the backward thread has no user frames. Child process only.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from neuron_migrate.smoke.child.flat import leaves
from neuron_migrate.smoke.sites import (
    MAX_CACHED_SITES,
    MAX_SITES,
    Site,
    SiteFinder,
    UserFiles,
    format_site,
    site_from_formatted_stack,
)

DEVICE_TYPE = "neuron"
_SITE_KEY = "neuron_migrate_site"
_LOW_PRECISION = (torch.float16, torch.bfloat16)

# Ops that legitimately take a CPU tensor next to a device tensor (copies, CPU indices).
_MIXING_EXEMPT = frozenset(
    {
        "aten::copy_",
        "aten::_to_copy",
        "aten::_copy_from",
        "aten::_copy_from_and_resize",
        "aten::index",
        "aten::index_put",
        "aten::index_put_",
        "aten::_index_put_impl_",
        "aten::set_",
        "aten::lift_fresh",
        "aten::_foreach_copy_",
    }
)


# c10d ops that move no tensor between ranks.
_COLLECTIVE_NAMESPACES = ("c10d::", "_c10d_functional::", "_c10d_functional_autograd::")
_NOT_EXCHANGES = frozenset(
    {
        "c10d::barrier",
        "c10d::monitored_barrier_",
        "_c10d_functional::wait_tensor",
        "_c10d_functional::_wrap_tensor_autograd",
    }
)
_ProcessGroup: Any = torch.distributed.ProcessGroup if torch.distributed.is_available() else ()


@dataclass
class OpStats:
    """How often one op ran on `neuron`, and from where (up to MAX_SITES lines)."""

    count: int = 0
    sites: dict[Site, int] = field(default_factory=dict)


@dataclass
class EventStats:
    """One kind of problem at one line: `float64` or `device-mixing`.

    float64 counts tensors with more than one element: one-element float64 values (e.g. the
    GradScaler's scale reciprocal) lose no meaningful precision as float32.
    """

    kind: str
    op: str
    site: Site | None
    detail: str
    count: int = 0


class OpRecorder(TorchDispatchMode):
    """Counts ops on `neuron`, float64 use and CPU/neuron mixing.

    Each op costs a walk up to its first user frame; the Site of that line is built once
    (`SiteFinder`). The recorder keeps names, counts and Sites, never a tensor.
    """

    def __init__(self, files: UserFiles) -> None:
        super().__init__()
        self.files = files
        self.finder = SiteFinder(files)
        self.ops: dict[str, OpStats] = {}
        self.events: dict[tuple[str, str, Site | None], EventStats] = {}
        self.collectives: dict[str, OpStats] = {}
        self.low_precision = False
        self._paused = 0
        self._trigger: Site | None = None

    @contextlib.contextmanager
    def triggered_by(self, site: Site | None) -> Iterator[None]:
        """Collectives run inside this block (a backward pass) belong to `site`, its user line.

        The backward pass runs the gradient collectives of DDP and FSDP from autograd hooks, whose
        autograd nodes point at the lines that built the model; the line to fix is the backward call.
        """
        previous, self._trigger = self._trigger, site
        try:
            yield
        finally:
            self._trigger = previous

    @contextlib.contextmanager
    def suspended(self) -> Iterator[None]:
        """Do not record ops run inside this block (the smoke hooks' own work)."""
        self._paused += 1
        try:
            yield
        finally:
            self._paused -= 1

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        return _record(self, func, args, kwargs)

    def _safe_observe(self, func: Any, args: Any, kwargs: dict[str, Any], out: Any) -> None:
        if self._paused:
            return
        try:
            self._observe(func._schema.name, args, kwargs, out)
        except Exception:  # noqa: BLE001 - recording must never change what the script does
            return

    def _observe(self, name: str, args: Any, kwargs: dict[str, Any], out: Any) -> None:
        if _exchanges_data(name, args, kwargs):
            _count(self.collectives, name, self._site(name))
        inputs = [t for t in (*leaves(args), *leaves(kwargs)) if isinstance(t, torch.Tensor)]
        outputs = [t for t in leaves(out) if isinstance(t, torch.Tensor)]
        on_neuron = [t for t in (*inputs, *outputs) if t.device.type == DEVICE_TYPE]
        if not on_neuron:
            return
        site = self._site(name)
        _count(self.ops, name, site)
        if any(t.dtype == torch.float64 and t.numel() > 1 for t in on_neuron):
            self._event("float64", name, site, "float64 tensor on `neuron`")
        if any(t.dtype in _LOW_PRECISION for t in on_neuron):
            self.low_precision = True
        if name not in _MIXING_EXEMPT and _mixes_cpu(inputs):
            self._event("device-mixing", name, site, "mixes a `neuron` tensor and a CPU tensor")

    def _event(self, kind: str, op: str, site: Site | None, detail: str) -> None:
        key = (kind, op, site)
        event = self.events.get(key)
        if event is None:
            event = self.events[key] = EventStats(kind, op, site, detail)
        event.count += 1

    def _site(self, name: str) -> Site | None:
        """The user line of an op: the forward line that built the autograd node running it, or
        for a collective the line that triggered it (the backward call, the forward call)."""
        if name.startswith(_COLLECTIVE_NAMESPACES):
            return self._trigger or self.finder.site(sys._getframe(1))
        node = torch._C._current_autograd_node()
        if node is not None:
            found = _node_site(node, self.files)
            if found is not None:
                return found
        return self.finder.site(sys._getframe(1))


class EmulatedOpRecorder(OpRecorder):
    """The recorder of the emulated device, whose `__torch_dispatch__` is not dynamo-disabled.

    `TorchDispatchMode` wraps a mode's dispatch in `torch._disable_dynamo` (so that a compiled
    region never traces into it): a few microseconds on every op, and the `torch._dynamo` import
    on the first. Under the emulation `torch.compile` runs eagerly (`bootstrap`), so no frame is
    ever compiled and the wrapper guards nothing.
    """

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        return _record(self, func, args, kwargs)


def _record(
    recorder: OpRecorder,
    func: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any] | None,
) -> Any:
    kwargs = kwargs or {}
    out = None
    try:
        out = func(*args, **kwargs)
        return out
    finally:  # also record an op that raised
        recorder._safe_observe(func, args, kwargs, out)


def _count(table: dict[str, OpStats], name: str, site: Site | None) -> None:
    stats = table.setdefault(name, OpStats())
    stats.count += 1
    if site is not None and (site in stats.sites or len(stats.sites) < MAX_SITES):
        stats.sites[site] = stats.sites.get(site, 0) + 1


def _exchanges_data(name: str, args: Any, kwargs: dict[str, Any]) -> bool:
    """True for a collective that moves tensors between two or more ranks.

    c10d ops carry their process group; functional collectives (`_c10d_functional::`, used in
    compiled code and by DTensor) carry its name. A barrier exchanges no tensor, and a collective
    on a one-rank group reaches no other rank; neither keeps replicas in step. Collectives on
    CPU tensors count too (object collectives).
    """
    if not name.startswith(_COLLECTIVE_NAMESPACES) or name in _NOT_EXCHANGES:
        return False
    groups = [g for g in map(_process_group, (*leaves(args), *leaves(kwargs))) if g is not None]
    return not groups or any(g.size() > 1 for g in groups)


def _process_group(value: Any) -> Any:
    """The process group an op argument stands for, or None.

    c10d ops get it boxed in a `ScriptObject` (next to a boxed ReduceOp, which does not unbox);
    functional collectives get its registered name.
    """
    try:
        if isinstance(value, torch.ScriptObject):
            return _ProcessGroup.unbox(value)
        if isinstance(value, str):
            from torch.distributed.distributed_c10d import _resolve_process_group

            return _resolve_process_group(value)  # type: ignore[arg-type]  # torch's GroupName is a NewType of str
    except Exception:  # noqa: BLE001 - another boxed type, or not a group name
        return None
    return value if isinstance(value, _ProcessGroup) else None


def _mixes_cpu(inputs: list[torch.Tensor]) -> bool:
    """True when a neuron tensor meets a CPU tensor that is not a 0-dim scalar."""
    has_neuron = any(t.device.type == DEVICE_TYPE for t in inputs)
    return has_neuron and any(t.device.type == "cpu" and t.dim() > 0 for t in inputs)


def _node_site(node: Any, files: UserFiles) -> Site | None:
    meta = node.metadata
    stack = meta.get("traceback_", ())
    if isinstance(stack, ForwardStack):
        return stack.site
    # A stack stored by torch's own `format_stack` (FX kept node metadata): parse it once.
    if _SITE_KEY not in meta:
        meta[_SITE_KEY] = site_from_formatted_stack(stack, files)
    return meta[_SITE_KEY]


class ForwardStack(list[str]):
    """What anomaly mode stores on an autograd node here: its user frame, and that frame's Site.

    A list of formatted frames, like `traceback.format_stack()`, so that anomaly mode's own
    "Traceback of forward call" messages still print it. Nodes built at one line share one.
    """

    __slots__ = ("site",)

    def __init__(self, site: Site | None) -> None:
        super().__init__([format_site(site)] if site is not None else [])
        self.site = site


def warm_up() -> None:
    """Import what the first recorded op would import, before the script's time limit starts.

    A dispatch mode's `__torch_dispatch__` runs behind `torch._disable_dynamo`, which imports
    `torch._dynamo` on its first call: seconds on a loaded machine, charged to the user's first
    `neuron` op (and its timeout) otherwise.
    """
    import torch._dynamo  # noqa: F401 - imported now for the cost, as said above


def enable_forward_tracebacks(finder: SiteFinder) -> None:
    """Store the forward user line on every autograd node, so backward ops map to forward lines.

    Anomaly mode stores `torch.fx.traceback.format_stack()` on every node it creates: the whole
    stack, formatted, hundreds of microseconds a node. The smoke run needs the innermost user
    frame only, so that function now returns a `ForwardStack` of that frame (one per line), and
    torch's own version still runs where FX keeps node metadata (while tracing a graph).
    """
    import torch.fx.traceback as fx_traceback

    original = fx_traceback.format_stack
    stacks: dict[Site | None, ForwardStack] = {}

    def format_stack() -> list[str]:
        if fx_traceback.has_preserved_node_meta():
            return original()
        site = finder.site(sys._getframe(1))
        stack = stacks.get(site)
        if stack is None:
            stack = ForwardStack(site)
            if len(stacks) < MAX_CACHED_SITES:
                stacks[site] = stack
        return stack

    fx_traceback.format_stack = format_stack
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.autograd.set_detect_anomaly(True, check_nan=False)


def to_json(recorder: OpRecorder) -> dict[str, Any]:
    """The recorder's findings as plain JSON data."""
    events = [
        {
            "kind": e.kind,
            "op": e.op,
            "detail": e.detail,
            "count": e.count,
            "site": e.site.to_json() if e.site else None,
        }
        for e in sorted(
            recorder.events.values(),
            key=lambda e: (e.kind, e.op, e.site or Site("", 0)),
        )
    ]
    return {
        "ops": _stats_json(recorder.ops),
        "collectives": _stats_json(recorder.collectives),
        "events": events,
        "low_precision": recorder.low_precision,
    }


def _stats_json(table: dict[str, OpStats]) -> list[dict[str, Any]]:
    return [
        {
            "op": name,
            "count": stats.count,
            "sites": [dict(s.to_json(), count=n) for s, n in sorted(stats.sites.items())],
        }
        for name, stats in sorted(table.items())
    ]
