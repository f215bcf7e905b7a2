"""Code that fixes write into the migrated file once, after its imports, by helper name.

A fix asks for a helper with a `HelperRequest(name, module name)` among its imports;
`engine/add_imports.py` writes `helper_text(request)`: `HELPERS[name]`'s template with the
module's name filled in.
`HELPER_NAMES` is the function or class each helper defines, which the fix calls.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import io
import tokenize
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from neuron_migrate.analysis.values import HelperRequest, Match, Plan, Request
from neuron_migrate.checks.collective_helpers import COLLECTIVE_HELPERS
from neuron_migrate.checks.gradient_helpers import (
    AVERAGE_GRADIENTS,
    OPTIMIZER_STEP,
    REDUCE_GRADIENTS,
    REDUCE_GRADIENTS_IN_GROUPS,
)
from neuron_migrate.checks.sharding_helpers import SHARDING_HELPERS
from neuron_migrate.checks.toolkit import ACCELERATOR_EXPRESSION, ACCELERATOR_NAME, FixContext


def helper_imports(ctx: FixContext, match: Match, name: str) -> tuple[Request, ...] | None:
    """The requests that write helper `name` into the file; () when this file has it already.

    None when the helper's name is bound to something else here, or its module's name (torch's,
    or `dist`'s for the optimizer step) is taken at module scope, where the helper lives.
    """
    template, defined, module = HELPERS[name]
    resolver = ctx.analysis.resolver
    bindings = resolver.lookup(defined, resolver.module_scope)
    if bindings:
        node = bindings[0].node
        if len(bindings) == 1 and isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            return () if ast.get_docstring(node) == _docstring(template) else None
        return None
    rendered = ctx.render("{" + module + "}", dataclasses.replace(match, scope=resolver.module_scope))
    if rendered is None:
        return None
    requests: tuple[Request, ...] = (HelperRequest(name, rendered[0]), *rendered[1])
    for other in helper_needs(name):  # `_ZeroRedundancyOptimizer.step` calls `_average_gradients`
        needed = helper_imports(ctx, match, other)
        if needed is None:
            return None
        requests += needed
    return tuple(dict.fromkeys(requests))


@functools.cache
def helper_needs(name: str) -> tuple[str, ...]:
    """The other helpers that helper `name`'s code calls (names in its code, not in its strings)."""
    tokens = tokenize.generate_tokens(io.StringIO(HELPERS[name][0]).readline)
    used = {token.string for token in tokens if token.type == tokenize.NAME}
    return tuple(other for other, (_, defined, _) in HELPERS.items() if other != name and defined in used)


def _docstring(template: str) -> str:
    return template.split('"""')[1]


_PORT_HELPERS: Mapping[str, str] = MappingProxyType(
    {
        "write_to_summary": '''def _write_to_summary(summary_writer, global_step=None, dict_to_write={}, write_xla_metrics=False):
    """Add each value as a scalar, as torch_xla's `test_utils.write_to_summary` did."""
    if summary_writer is None:
        return
    for key, value in dict_to_write.items():
        summary_writer.add_scalar(key, value, global_step)
''',
        "close_summary_writer": '''def _close_summary_writer(summary_writer):
    """Close the writer if there is one, as torch_xla's `test_utils.close_summary_writer` did."""
    if summary_writer is not None:
        summary_writer.flush()
        summary_writer.close()
''',
        "get_summary_writer": '''def _get_summary_writer(logdir):
    """A TensorBoard writer for `logdir`, or None without one (torch_xla's `get_summary_writer`)."""
    if not logdir:
        return None
    import time

    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=logdir)
    writer.add_scalar("TensorboardStartTimestamp", time.time(), 0)
    return writer
''',
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
    if summary_writer:
        summary_writer.add_scalar("examples/sec", rate, None)
        summary_writer.add_scalar("average_examples/sec", global_rate, None)
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
    """Copy rank 0's parameters and buffers to every rank (what `xm.broadcast_master_param` did)."""
    if not {torch}.distributed.is_available() or not {torch}.distributed.is_initialized():
        return
    with {torch}.no_grad():
        for tensor in [*model.parameters(), *model.buffers()]:
            {torch}.distributed.broadcast(tensor.data, src=0)
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
        "write_to_summary": "_write_to_summary",
        "close_summary_writer": "_close_summary_writer",
        "get_summary_writer": "_get_summary_writer",
        "all_reduce": "_all_reduce",
        "all_gather": "_all_gather",
        "all_gather_grad": "_all_gather_with_grad",
        "collective_broadcast": "_collective_broadcast",
        "reduce_scatter": "_reduce_scatter",
        "fully_shard": "_fully_shard",
        "checkpoint_module": "_checkpoint_module",
        "shard_metadata": "_shard_metadata",
        "consolidate_checkpoints": "_consolidate_sharded_model_checkpoints",
        "zero_redundancy_optimizer": "_ZeroRedundancyOptimizer",
        "zero1_optimizer": "_Zero1Optimizer",
    }
)


HELPER_TEMPLATES: Mapping[str, str] = MappingProxyType({**_PORT_HELPERS, **COLLECTIVE_HELPERS, **SHARDING_HELPERS})
# The module a template's `{...}` names, where it is not torch.
_HELPER_MODULES: Mapping[str, str] = MappingProxyType(
    {"zero_redundancy_optimizer": "dist_optim", "zero1_optimizer": "dist_optim"}
)


# What `xm.save` did before writing: copy every tensor to the CPU.
TO_CPU = '''def _to_cpu(data):
    """Copy the tensors in `data` to the CPU, as torch_xla's save did before writing."""
    if isinstance(data, {torch}.Tensor):
        return data.cpu()
    if isinstance(data, dict):
        return type(data)((k, _to_cpu(v)) for k, v in data.items())
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_to_cpu(v) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(_to_cpu(v) for v in data)
    return data
'''


# A drop-in for MpDeviceLoader, written into the migrated file once. It imports what it needs
# itself, so it works wherever `torch` is (or is not) imported in the file.
DEVICE_LOADER = '''class _DeviceLoader:
    """Iterate `loader`, moving each batch's tensors to `device` (what MpDeviceLoader did)."""

    def __init__(self, loader, device):
        self._loader = loader
        self._device = device

    def __iter__(self):
        for batch in self._loader:
            yield _move_to_device(batch, self._device)

    def __len__(self):
        return len(self._loader)


def _move_to_device(data, device):
    """Move the tensors in `data` to `device`: in sequences, mappings, dataclasses and objects."""
    import collections.abc
    import copy

    import torch

    if isinstance(data, torch.Tensor):
        return data.to(device)
    if isinstance(data, (str, bytes, type)):
        return data
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_move_to_device(v, device) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(_move_to_device(v, device) for v in data)
    if isinstance(data, collections.abc.Mapping):
        moved = {k: _move_to_device(v, device) for k, v in data.items()}
        try:
            result = copy.copy(data)
            result.update(moved)
        except (TypeError, AttributeError):
            return moved  # a read-only mapping
        return result
    if hasattr(data, "__dict__"):
        result = copy.copy(data)
        for name, value in vars(data).items():
            vars(result)[name] = _move_to_device(value, device)
        return result
    return data
'''


# `--target accelerator`'s device, named by every fix that names it: computed once, at import.
ACCELERATOR = f"""# The current accelerator (a GPU, a NeuronCore, ...), or the CPU where there is none.
{ACCELERATOR_NAME} = {ACCELERATOR_EXPRESSION}
"""


# Every helper a fix may write: template, the name it defines, the module it uses. They are
# written in this order (the device loader first, the others by name).
HELPERS: Mapping[str, tuple[str, str, str]] = MappingProxyType(
    {
        "device_loader": (DEVICE_LOADER, "_DeviceLoader", "torch"),
        **dict(
            sorted(
                {
                    "accelerator": (ACCELERATOR, ACCELERATOR_NAME, "torch"),
                    "average_gradients": (AVERAGE_GRADIENTS, "_average_gradients", "torch"),
                    "optimizer_step": (OPTIMIZER_STEP, "_optimizer_step", "dist"),
                    "reduce_gradients": (REDUCE_GRADIENTS, "_reduce_gradients", "dist"),
                    "reduce_gradients_in_groups": (REDUCE_GRADIENTS_IN_GROUPS, "_reduce_gradients_in_groups", "dist"),
                    "to_cpu": (TO_CPU, "_to_cpu", "torch"),
                    # port_fixes / collective_fixes: utilities and collectives with torch_xla's meaning
                    **{
                        name: (template, HELPER_NAMES[name], _HELPER_MODULES.get(name, "torch"))
                        for name, template in HELPER_TEMPLATES.items()
                    },
                }.items()
            )
        ),
    }
)


def helper_text(request: HelperRequest) -> str | None:
    """The source of the helper `request` asks for, with its module's name filled in."""
    if request.name not in HELPERS:
        return None
    template, _, module = HELPERS[request.name]
    return template.replace("{" + module + "}", request.module)


@functools.cache
def helper_defines(request: HelperRequest) -> frozenset[str]:
    """The names the helper `request` asks for defines at the top of the file."""
    source = helper_text(request)
    if source is None:
        return frozenset()
    statements = ast.parse(source).body
    names = {s.name for s in statements if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    names |= {t.id for s in statements if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)}
    return frozenset(names)


def helper_shadowed(ctx: FixContext, match: Match, requests: Iterable[Request]) -> bool:
    """Whether a name a requested helper defines is bound in a function or class around `match`
    (`_optimizer_step = None` in the function that calls it): the helper, written at module
    level, is not what the new code would call there."""
    resolver = ctx.analysis.resolver
    for request in requests:
        for name in helper_defines(request) if isinstance(request, HelperRequest) else ():
            seen = resolver.lookup(name, match.scope)
            if seen and seen is not resolver.module_scope.bindings.get(name):
                return True
    return False


def helper_call(ctx: FixContext, match: Match, name: str, call_text: str, node: ast.AST) -> Plan | None:
    """Replace `node` with `call_text`, which calls the helper `HELPERS[name]` written into the file."""
    needed = helper_imports(ctx, match, name)
    return ctx.replace(node, call_text, needed) if needed is not None else None
