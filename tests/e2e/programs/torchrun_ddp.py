# torchrun with init_process_group("xla") and DDP, as in the torch_xla DDP guide.
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_backend  # noqa: F401  registers the "xla" backend
import torch_xla.runtime as xr
from torch.nn.parallel import DistributedDataParallel as DDP


def synthetic_batches(rank, count=6, batch=4):
    generator = torch.Generator().manual_seed(100 + rank)
    return [(torch.randn(batch, 8, generator=generator), torch.randn(batch, 2, generator=generator)) for _ in range(count)]


def main():
    dist.init_process_group("xla", init_method="xla://")
    device = xm.xla_device()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 2)).to(device), gradient_as_bucket_view=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for inputs, targets in synthetic_batches(xr.global_ordinal()):
        inputs, targets = inputs.to(device), targets.to(device)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()
        xm.mark_step()
    if xr.global_ordinal() == 0:
        print("world", xr.world_size(), "local", os.environ.get("LOCAL_RANK"), "loss", loss.item())


if __name__ == "__main__":
    main()
