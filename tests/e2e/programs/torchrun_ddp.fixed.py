# torchrun with init_process_group("xla") and DDP, as in the torch_xla DDP guide.
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def synthetic_batches(rank, count=6, batch=4):
    generator = torch.Generator().manual_seed(100 + rank)
    return [(torch.randn(batch, 8, generator=generator), torch.randn(batch, 2, generator=generator)) for _ in range(count)]


def main():
    dist.init_process_group("neuron")
    device = torch.device("neuron")
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 2)).to(device), gradient_as_bucket_view=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for inputs, targets in synthetic_batches(dist.get_rank()):
        inputs, targets = inputs.to(device), targets.to(device)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()
    if dist.get_rank() == 0:
        print("world", dist.get_world_size(), "local", os.environ.get("LOCAL_RANK"), "loss", loss.item())


if __name__ == "__main__":
    main()
