# torch_xla collectives under torchrun, asserting the values torch_xla defines for each rank.
import torch
import torch.distributed as dist
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_backend  # noqa: F401
import torch_xla.runtime as xr


def main():
    dist.init_process_group("xla", init_method="xla://")
    device = xm.xla_device()
    rank, world = xr.global_ordinal(), xr.world_size()
    total = sum(range(1, world + 1))

    value = torch.full((2,), float(rank + 1), device=device)
    reduced = xm.all_reduce(xm.REDUCE_SUM, value, scale=0.5)
    assert reduced.tolist() == [total * 0.5] * 2, reduced  # a tensor: reduced into a new one
    assert value.tolist() == [rank + 1.0] * 2, value
    biggest = xm.all_reduce(xm.REDUCE_MAX, torch.tensor([float(rank)], device=device))
    assert biggest.tolist() == [world - 1.0], biggest

    gathered = xm.all_gather(torch.tensor([[float(rank)]], device=device), dim=1)
    assert gathered.tolist() == [[float(r) for r in range(world)]], gathered
    shard = xm.reduce_scatter(xm.REDUCE_SUM, torch.arange(2.0 * world, device=device), 1.0, 0, world)
    assert shard.tolist() == [world * 2.0 * rank, world * (2.0 * rank + 1)], shard
    pair = [torch.tensor([[float(rank)]], device=device), torch.tensor([[rank + 10.0]], device=device)]
    first, second = xm.all_gather(pair, dim=1, pin_layout=False)  # a list: each tensor gathered
    assert first.tolist() == [[float(r) for r in range(world)]], first
    assert second.tolist() == [[r + 10.0 for r in range(world)]], second
    inputs = [torch.arange(2.0 * world, device=device), torch.arange(2.0 * world, device=device)]
    shards = xm.reduce_scatter(xm.REDUCE_SUM, inputs, 0.5, 0, world, pin_layout=False)
    assert [s.tolist() for s in shards] == [[world * rank, world * (rank + 0.5)]] * 2, shards

    torch.manual_seed(rank)
    model = nn.Linear(4, 1).to(device)
    xm.broadcast_master_param(model)
    weights = xm.all_gather(model.weight.detach(), dim=0)
    assert torch.equal(weights[0], weights[-1]), weights
    assert xm.mesh_reduce("ranks", 1, sum) == world

    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(rank)
    for step in range(3):
        loss = model(torch.randn(2, 4, generator=generator).to(device)).pow(2).mean()
        loss.backward()
        gradients = [p.grad for p in model.parameters()]
        xm.all_reduce(xm.REDUCE_SUM, gradients, scale=1.0 / world)  # a list: reduced in place
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    main()
