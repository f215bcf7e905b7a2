# xmp.spawn data parallel without DDP: xm.optimizer_step all-reduces the gradients.
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def synthetic_regression(count=64):
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(count, 8, generator=generator)
    targets = inputs.sum(dim=1, keepdim=True)
    return TensorDataset(inputs, targets)


def _mp_fn(index, flags):
    device = xm.xla_device()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=flags["lr"])
    dataset = synthetic_regression()
    sampler = DistributedSampler(dataset, num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=False)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(flags["epochs"]):
        for inputs, targets in loader:
            inputs, targets = inputs.to(device), targets.to(device)
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(inputs), targets)
            loss.backward()
            xm.optimizer_step(optimizer)
        if xm.is_master_ordinal():
            print(f"epoch {epoch} loss {loss.item():.4f}")


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=({"lr": 0.05, "epochs": 2},))
