# The native form of zero1.py: torch's ZeroRedundancyOptimizer on the `dp` group, with the gradients
# averaged over that group and their norm clipped to 1.0 before each step, as NxD's ZeRO-1 step did.
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.optim import ZeroRedundancyOptimizer

BATCH, STEPS = 8, 5


def main():
    dist.init_process_group("neuron")
    mesh = init_device_mesh("neuron", (dist.get_world_size(),), mesh_dim_names=("dp",))
    device = torch.device("neuron")
    dp_size, dp_rank = mesh["dp"].size(), mesh["dp"].get_local_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 2)).to(device)
    optimizer = ZeroRedundancyOptimizer(
        model.parameters(), optimizer_class=torch.optim.AdamW, process_group=mesh["dp"].get_group(), lr=0.05
    )
    data, target = torch.randn(BATCH, 6) * 3, torch.randn(BATCH, 2) * 3
    shard = BATCH // dp_size
    inputs = data[dp_rank * shard : (dp_rank + 1) * shard].to(device)
    labels = target[dp_rank * shard : (dp_rank + 1) * shard].to(device)
    for step in range(STEPS):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs), labels)
        loss.backward()
        for param in model.parameters():
            dist.all_reduce(param.grad, group=mesh["dp"].get_group())
            param.grad.div_(dp_size)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        reported = loss.detach().clone()
        dist.all_reduce(reported, group=mesh["dp"].get_group())
        if dist.get_rank() == 0:
            print(f"loss {step} {reported.item() / dp_size:.8f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
