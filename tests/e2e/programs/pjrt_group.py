# DDP under torchrun on the PJRT process group: the init method depends on the runtime in use.
import torch
import torch.distributed as dist
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_backend  # noqa: F401
import torch_xla.experimental.pjrt_backend  # noqa: F401
import torch_xla.runtime as xr
from torch.nn.parallel import DistributedDataParallel as DDP


def init_distributed():
    if xr.using_pjrt():
        dist.init_process_group("xla", init_method="pjrt://")
    else:
        dist.init_process_group("xla")


def main():
    init_distributed()
    device = xm.xla_device()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 2)).to(device), gradient_as_bucket_view=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    generator = torch.Generator().manual_seed(dist.get_rank())
    for step in range(4):
        inputs = torch.randn(6, 5, generator=generator).to(device)
        loss = model(inputs).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        xm.mark_step()
        if dist.get_rank() == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
