"""Templates of the helpers the collective fixes (NM306) write into migrated files: torch_xla's
`all_reduce`, `all_gather` (plain and differentiable), `collective_broadcast` and `reduce_scatter`
with their meaning kept, on `torch.distributed`.

`{torch}` is the module's name in the file; `helpers.py` registers them with the other helpers.
Kept apart only so that helpers.py stays readable.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

_REDUCE_OPS = '{"sum": "SUM", "mul": "PRODUCT", "min": "MIN", "max": "MAX", "and": "BAND", "or": "BOR"}'


COLLECTIVE_HELPERS: Mapping[str, str] = MappingProxyType(
    {
        "all_reduce": f'''def _all_reduce(reduce_type, inputs, scale=1.0, groups=None, pin_layout=True):
    """What `xm.all_reduce` did: reduce a list of tensors in place, or a tensor into a new one."""
    single = isinstance(inputs, {{torch}}.Tensor)
    tensors = [inputs.clone()] if single else list(inputs)
    if {{torch}}.distributed.is_available() and {{torch}}.distributed.is_initialized():
        op = getattr({{torch}}.distributed.ReduceOp, {_REDUCE_OPS}[reduce_type])
        for tensor in tensors:
            {{torch}}.distributed.all_reduce(tensor, op=op, group=groups)
    if scale != 1.0:
        for tensor in tensors:
            tensor.mul_(scale)
    return tensors[0] if single else inputs
''',
        "all_gather": '''def _all_gather(value, dim=0, groups=None, output=None, pin_layout=True):
    """What `xm.all_gather` did: every rank's `value`, concatenated along `dim` (each of a list's tensors)."""
    if isinstance(value, (list, tuple)):
        results = [_all_gather(v, dim, groups, o, pin_layout) for v, o in zip(value, output or [None] * len(value))]
        return results if output is None else output
    parts = [value]
    if {torch}.distributed.is_available() and {torch}.distributed.is_initialized():
        parts = [{torch}.empty_like(value) for _ in range({torch}.distributed.get_world_size())]
        {torch}.distributed.all_gather(parts, value.contiguous())
    result = {torch}.cat(parts, dim=dim)
    if output is None:
        return result
    output.copy_(result)
    return output
''',
        "all_gather_grad": '''class _AllGatherWithGrad({torch}.autograd.Function):
    """torch_xla's differentiable all_gather: the input's gradient is this rank's slice of the output's."""

    @staticmethod
    def forward(ctx, value, dim):
        ctx.dim, ctx.rank, ctx.world_size = dim, 0, 1
        parts = [value]
        if {torch}.distributed.is_available() and {torch}.distributed.is_initialized():
            ctx.rank, ctx.world_size = {torch}.distributed.get_rank(), {torch}.distributed.get_world_size()
            value = value.contiguous()
            parts = [{torch}.empty_like(value) for _ in range(ctx.world_size)]
            {torch}.distributed.all_gather(parts, value)
        return {torch}.cat(parts, dim=dim)

    @staticmethod
    def backward(ctx, grad_output):
        size = grad_output.size(ctx.dim) // ctx.world_size
        return grad_output.narrow(ctx.dim, ctx.rank * size, size).clone(), None


def _all_gather_with_grad(value, dim=0):
    """What `torch_xla.core.functions.all_gather` did: every rank's `value` along `dim`, differentiable."""
    return _AllGatherWithGrad.apply(value, dim)
''',
        "collective_broadcast": '''def _collective_broadcast(tensors, root_ordinal=0, groups=None, pin_layout=True):
    """What `xm.collective_broadcast` did: every tensor takes rank `root_ordinal`'s values, in place."""
    if {torch}.distributed.is_available() and {torch}.distributed.is_initialized():
        for tensor in tensors:
            {torch}.distributed.broadcast(tensor, src=root_ordinal)
''',
        "reduce_scatter": f'''def _reduce_scatter(reduce_type, input, scale, scatter_dim, shard_count, groups=None, output=None, pin_layout=True):
    """What `xm.reduce_scatter` did: reduce `input` over the ranks and keep this rank's shard (of each of a list's tensors)."""
    if isinstance(input, (list, tuple)):
        outputs = output or [None] * len(input)
        results = [
            _reduce_scatter(reduce_type, t, scale, scatter_dim, shard_count, groups, o, pin_layout)
            for t, o in zip(input, outputs)
        ]
        return results if output is None else output
    if {{torch}}.distributed.is_available() and {{torch}}.distributed.is_initialized():
        op = getattr({{torch}}.distributed.ReduceOp, {_REDUCE_OPS}[reduce_type])
        moved = input.movedim(scatter_dim, 0).contiguous()
        result = moved.new_empty((moved.shape[0] // shard_count, *moved.shape[1:]))
        {{torch}}.distributed.reduce_scatter_tensor(result, moved, op=op)
        result = result.movedim(0, scatter_dim)
    else:
        result = input.clone()
    result.mul_(scale)
    if output is None:
        return result
    output.copy_(result)
    return output
''',
    }
)
