# ZeRO-1 with torch_xla's ZeroRedundancyOptimizer: optimizer state sharded over the ranks, the
# gradients reduce-scattered and the parameters all-gathered inside its `step`.
import torch
import torch.nn as nn
import torch.distributed as dist
from torch_xla.distributed.zero_redundancy_optimizer import ZeroRedundancyOptimizer
import os


def _mp_fn(index):
    device = torch.device("neuron")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 12)).to(device)
    optimizer = ZeroRedundancyOptimizer(
        model.parameters(),
        torch.optim.SGD,
        lr=0.05,
        momentum=0.9,
        pin_layout=False,
    )
    generator = torch.Generator().manual_seed(int(os.environ.get("RANK", 0)))
    for step in range(4):
        inputs = torch.randn(4, 12, generator=generator).to(device)
        optimizer.zero_grad()
        loss = nn.functional.smooth_l1_loss(model(inputs), inputs.flip(1))
        loss.backward()
        optimizer.step()
        if int(os.environ.get("RANK", 0)) == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    if "WORLD_SIZE" in os.environ:
        dist.init_process_group("neuron")
    _mp_fn(int(os.environ.get("LOCAL_RANK", 0)))
