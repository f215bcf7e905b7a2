# The native form of dp_allreduce.py: a one-dimensional `dp` mesh and gradients all-reduced over its group.
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh

BATCH, STEPS = 8, 5


def allreduce_gradients(model, mesh):
    group = mesh["dp"].get_group()
    for param in model.parameters():
        if param.grad is not None:
            dist.all_reduce(param.grad, group=group)
            param.grad.div_(mesh["dp"].size())


def main():
    dist.init_process_group("neuron")
    mesh = init_device_mesh("neuron", (dist.get_world_size(),), mesh_dim_names=("dp",))
    device = torch.device("neuron")
    dp_size, dp_rank = mesh["dp"].size(), mesh["dp"].get_local_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data, target = torch.randn(BATCH, 6), torch.randn(BATCH, 1)
    shard = BATCH // dp_size
    inputs = data[dp_rank * shard : (dp_rank + 1) * shard].to(device)
    labels = target[dp_rank * shard : (dp_rank + 1) * shard].to(device)
    for step in range(STEPS):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs), labels)
        loss.backward()
        allreduce_gradients(model, mesh)
        optimizer.step()
        reported = loss.detach().clone()
        dist.all_reduce(reported, group=mesh["dp"].get_group())
        if dist.get_rank() == 0:
            print(f"loss {step} {reported.item() / dp_size:.8f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
