"""The gradient helpers a fix writes into a migrated file: what `xm.optimizer_step` and
`xm.reduce_gradients` did (average the gradients over the ranks, then step), and the averaging
alone for the helpers that step themselves (the ZeRO-1 optimizer). `checks/helpers.py` registers them.
"""

from __future__ import annotations

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
