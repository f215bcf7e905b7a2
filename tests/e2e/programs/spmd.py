# SPMD data parallel: use_spmd, a 1-D Mesh and mark_sharding; stays a manual port.
import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr

xr.use_spmd()


def main():
    num_devices = xr.global_runtime_device_count()
    mesh = xs.Mesh(np.arange(num_devices), (num_devices,), ("data",))
    device = xm.xla_device()
    torch.manual_seed(0)
    model = nn.Linear(8, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        inputs = torch.randn(8, 8).to(device)
        xs.mark_sharding(inputs, mesh, ("data", None))
        loss = model(inputs).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        xm.mark_step()


if __name__ == "__main__":
    main()
