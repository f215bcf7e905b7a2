# xmp.spawn with the TPU/CUDA AMP recipe: bf16 autocast on TPU, fp16 with a gradient scaler on CUDA.
import sys

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr
from torch_xla.amp import GradScaler, autocast


def _mp_fn(index):
    device = xm.xla_device()
    device_hw = xm.xla_device_hw(device)
    if device_hw == "TPU":
        autocast_args = {"dtype": torch.bfloat16}
        scaler = None
    elif device_hw == "CUDA":
        autocast_args = {}
        scaler = GradScaler()
    else:
        print(f"AMP needs a TPU or a CUDA device, not {device_hw}")
        sys.exit(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    generator = torch.Generator().manual_seed(xr.global_ordinal())
    for step in range(4):
        inputs = torch.randn(8, 8, generator=generator).to(device)
        optimizer.zero_grad()
        with autocast(device, **autocast_args):
            loss = (model(inputs) - inputs.sum(1, keepdim=True)).pow(2).mean()
        if scaler is None:
            loss.backward()
            xm.optimizer_step(optimizer)
        else:
            scaler.scale(loss).backward()
            gradients = xm._fetch_gradients(optimizer)
            xm.all_reduce(xm.REDUCE_SUM, gradients, scale=1.0 / xr.world_size())
            scaler.step(optimizer)
            scaler.update()
        xm.master_print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=())
