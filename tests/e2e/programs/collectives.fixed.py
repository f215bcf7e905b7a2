# torch_xla collectives under torchrun, asserting the values torch_xla defines for each rank.
import torch
import torch.distributed as dist
import torch.nn as nn


def _all_gather(value, dim=0, groups=None, output=None, pin_layout=True):
    """What `xm.all_gather` did: every rank's `value`, concatenated along `dim` (each of a list's tensors)."""
    if isinstance(value, (list, tuple)):
        results = [_all_gather(v, dim, groups, o, pin_layout) for v, o in zip(value, output or [None] * len(value))]
        return results if output is None else output
    parts = [value]
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        parts = [torch.empty_like(value) for _ in range(torch.distributed.get_world_size())]
        torch.distributed.all_gather(parts, value.contiguous())
    result = torch.cat(parts, dim=dim)
    if output is None:
        return result
    output.copy_(result)
    return output


def _all_reduce(reduce_type, inputs, scale=1.0, groups=None, pin_layout=True):
    """What `xm.all_reduce` did: reduce a list of tensors in place, or a tensor into a new one."""
    single = isinstance(inputs, torch.Tensor)
    tensors = [inputs.clone()] if single else list(inputs)
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        op = getattr(torch.distributed.ReduceOp, {"sum": "SUM", "mul": "PRODUCT", "min": "MIN", "max": "MAX", "and": "BAND", "or": "BOR"}[reduce_type])
        for tensor in tensors:
            torch.distributed.all_reduce(tensor, op=op, group=groups)
    if scale != 1.0:
        for tensor in tensors:
            tensor.mul_(scale)
    return tensors[0] if single else inputs


def _broadcast_master_param(model):
    """Copy rank 0's parameters and buffers to every rank (what `xm.broadcast_master_param` did)."""
    if not torch.distributed.is_available() or not torch.distributed.is_initialized():
        return
    with torch.no_grad():
        for tensor in [*model.parameters(), *model.buffers()]:
            torch.distributed.broadcast(tensor.data, src=0)


def _mesh_reduce(data, reduce_fn):
    """Gather `data` from every rank and reduce the list (what `xm.mesh_reduce` did)."""
    if isinstance(data, torch.Tensor):
        data = data.cpu()
    if not torch.distributed.is_available() or not torch.distributed.is_initialized():
        return reduce_fn([data])
    values = [None] * torch.distributed.get_world_size()
    torch.distributed.all_gather_object(values, data)
    return reduce_fn(values)


def _reduce_scatter(reduce_type, input, scale, scatter_dim, shard_count, groups=None, output=None, pin_layout=True):
    """What `xm.reduce_scatter` did: reduce `input` over the ranks and keep this rank's shard (of each of a list's tensors)."""
    if isinstance(input, (list, tuple)):
        outputs = output or [None] * len(input)
        results = [
            _reduce_scatter(reduce_type, t, scale, scatter_dim, shard_count, groups, o, pin_layout)
            for t, o in zip(input, outputs)
        ]
        return results if output is None else output
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        op = getattr(torch.distributed.ReduceOp, {"sum": "SUM", "mul": "PRODUCT", "min": "MIN", "max": "MAX", "and": "BAND", "or": "BOR"}[reduce_type])
        moved = input.movedim(scatter_dim, 0).contiguous()
        result = moved.new_empty((moved.shape[0] // shard_count, *moved.shape[1:]))
        torch.distributed.reduce_scatter_tensor(result, moved, op=op)
        result = result.movedim(0, scatter_dim)
    else:
        result = input.clone()
    result.mul_(scale)
    if output is None:
        return result
    output.copy_(result)
    return output


def main():
    dist.init_process_group("neuron")
    device = torch.device("neuron")
    rank, world = dist.get_rank(), dist.get_world_size()
    total = sum(range(1, world + 1))

    value = torch.full((2,), float(rank + 1), device=device)
    reduced = _all_reduce("sum", value, scale=0.5)
    assert reduced.tolist() == [total * 0.5] * 2, reduced  # a tensor: reduced into a new one
    assert value.tolist() == [rank + 1.0] * 2, value
    biggest = _all_reduce("max", torch.tensor([float(rank)], device=device))
    assert biggest.tolist() == [world - 1.0], biggest

    gathered = _all_gather(torch.tensor([[float(rank)]], device=device), dim=1)
    assert gathered.tolist() == [[float(r) for r in range(world)]], gathered
    shard = _reduce_scatter("sum", torch.arange(2.0 * world, device=device), 1.0, 0, world)
    assert shard.tolist() == [world * 2.0 * rank, world * (2.0 * rank + 1)], shard
    pair = [torch.tensor([[float(rank)]], device=device), torch.tensor([[rank + 10.0]], device=device)]
    first, second = _all_gather(pair, dim=1, pin_layout=False)  # a list: each tensor gathered
    assert first.tolist() == [[float(r) for r in range(world)]], first
    assert second.tolist() == [[r + 10.0 for r in range(world)]], second
    inputs = [torch.arange(2.0 * world, device=device), torch.arange(2.0 * world, device=device)]
    shards = _reduce_scatter("sum", inputs, 0.5, 0, world, pin_layout=False)
    assert [s.tolist() for s in shards] == [[world * rank, world * (rank + 0.5)]] * 2, shards

    torch.manual_seed(rank)
    model = nn.Linear(4, 1).to(device)
    _broadcast_master_param(model)
    weights = _all_gather(model.weight.detach(), dim=0)
    assert torch.equal(weights[0], weights[-1]), weights
    assert _mesh_reduce(1, sum) == world

    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(rank)
    for step in range(3):
        loss = model(torch.randn(2, 4, generator=generator).to(device)).pow(2).mean()
        loss.backward()
        gradients = [p.grad for p in model.parameters()]
        _all_reduce("sum", gradients, scale=1.0 / world)  # a list: reduced in place
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    main()
