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
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from neuron_migrate.analysis.values import HelperRequest, Match, Plan, Request
from neuron_migrate.checks.collective_helpers import COLLECTIVE_HELPERS
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
    return (HelperRequest(name, rendered[0]), *rendered[1])


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


# What `xm.optimizer_step` did, written into the migrated file once: average, then step. The
# gradients go in flat buckets (one all-reduce each, as DDP does: one per tensor is much slower
# for a model of many tensors), and the first call copies rank 0's parameters, as DDP's constructor does.
OPTIMIZER_STEP = '''def _optimizer_step(optimizer, **step_args):
    """Average gradients over the default process group, then step (as torch_xla's optimizer_step did)."""
    # The gradients travel in flat buckets of about 25 MB, one all-reduce each, as in DDP. The first
    # call copies rank 0's parameters to every rank, so ranks built from different seeds agree.
    if {dist}.is_available() and {dist}.is_initialized() and {dist}.get_world_size() > 1:
        import torch

        world_size = {dist}.get_world_size()

        def in_buckets(tensors, average):
            by_kind = {}
            for tensor in tensors:
                by_kind.setdefault((tensor.dtype, tensor.device), []).append(tensor)
            for group in by_kind.values():
                start = 0
                while start < len(group):
                    end, size = start + 1, group[start].nbytes
                    while end < len(group) and size + group[end].nbytes <= 25 * 2**20:
                        size, end = size + group[end].nbytes, end + 1
                    bucket, start = group[start:end], end
                    flat = torch.cat([t.reshape(-1) for t in bucket])
                    if average:
                        {dist}.all_reduce(flat)
                        flat.div_(world_size)
                    else:
                        {dist}.broadcast(flat, src=0)
                    for tensor, piece in zip(bucket, flat.split([t.numel() for t in bucket])):
                        tensor.copy_(piece.view_as(tensor))

        params = [p for group in optimizer.param_groups for p in group["params"]]
        if not getattr(optimizer, "_rank0_params_copied", False):
            in_buckets([p.data for p in params], average=False)
            optimizer._rank0_params_copied = True
        grads = [p.grad for p in params if p.grad is not None]
        in_buckets([g for g in grads if not g.is_sparse], average=True)
        for grad in grads:
            if grad.is_sparse:
                {dist}.all_reduce(grad)
                grad.div_(world_size)
    return optimizer.step(**step_args)
'''


# The averaging of `_optimizer_step` for the helpers that average before their own step (the
# ZeRO-1 optimizer): flat buckets of about 25 MB, one all-reduce each, as DDP does.
AVERAGE_GRADIENTS = '''def _average_gradients(grads):
    """Average `grads` over the default process group in flat buckets of about 25 MB, one all-reduce each, as DDP does."""
    world_size = {torch}.distributed.get_world_size()
    by_kind = {}
    for grad in grads:
        if grad.is_sparse:
            {torch}.distributed.all_reduce(grad)
            grad.div_(world_size)
        else:
            by_kind.setdefault((grad.dtype, grad.device), []).append(grad)
    for group in by_kind.values():
        start = 0
        while start < len(group):
            end, size = start + 1, group[start].nbytes
            while end < len(group) and size + group[end].nbytes <= 25 * 2**20:
                size, end = size + group[end].nbytes, end + 1
            bucket, start = group[start:end], end
            flat = {torch}.cat([t.reshape(-1) for t in bucket])
            {torch}.distributed.all_reduce(flat)
            flat.div_(world_size)
            for tensor, piece in zip(bucket, flat.split([t.numel() for t in bucket])):
                tensor.copy_(piece.view_as(tensor))
'''


# What `xm.reduce_gradients` did: the first half of `xm.optimizer_step`, without the step.
REDUCE_GRADIENTS = '''def _reduce_gradients(optimizer):
    """Average gradients over the default process group (as torch_xla's reduce_gradients did); no step."""
    if {dist}.is_available() and {dist}.is_initialized() and {dist}.get_world_size() > 1:
        world_size = {dist}.get_world_size()
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param.grad is not None:
                    {dist}.all_reduce(param.grad)
                    param.grad.div_(world_size)
'''


# What `xm.reduce_gradients(opt, groups=...)` did: sum each gradient over this rank's replica group
# and scale it by 1 / world size (torch_xla's scale, whatever the group's size); no step.
REDUCE_GRADIENTS_IN_GROUPS = '''def _reduce_gradients_in_groups(optimizer, groups):
    """Sum gradients over this rank's replica group of `groups` (lists of ranks), then divide by the
    world size, as torch_xla's reduce_gradients(groups=) did; no step."""
    if {dist}.is_available() and {dist}.is_initialized() and {dist}.get_world_size() > 1:
        world_size = {dist}.get_world_size()
        group = groups if isinstance(groups, {dist}.ProcessGroup) else None
        if groups and group is None:
            # Every rank creates every group, once and in the same order, as new_group requires.
            made = _reduce_gradients_in_groups.__dict__.setdefault("process_groups", {})
            key = tuple(tuple(ranks) for ranks in groups)
            if key not in made:
                rank = {dist}.get_rank()
                created = [({dist}.new_group(list(ranks)), ranks) for ranks in key]
                mine = [process_group for process_group, ranks in created if rank in ranks]
                if not mine:
                    raise ValueError(f"rank {rank} is in none of the replica groups {groups}")
                made[key] = mine[0]
            group = made[key]
        for param_group in optimizer.param_groups:
            for param in param_group["params"]:
                if param.grad is not None:
                    {dist}.all_reduce(param.grad, group=group)
                    param.grad.div_(world_size)
'''


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
