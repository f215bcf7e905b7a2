# spmd.py ported by hand as NM312 says for a 1-D data mesh: DDP, and each rank its slice of the batch.
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    if "WORLD_SIZE" in os.environ:
        dist.init_process_group("neuron")
    world = dist.get_world_size() if dist.is_initialized() else 1
    rank = dist.get_rank() if dist.is_initialized() else 0
    device = torch.device("neuron")
    torch.manual_seed(0)
    model = nn.Linear(8, 1).to(device)
    if dist.is_initialized():
        model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        inputs = torch.randn(8, 8)
        local = inputs.chunk(world)[rank].to(device)  # the rows mark_sharding(inputs, mesh, ("data", None)) gave this device
        loss = model(local).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    main()
