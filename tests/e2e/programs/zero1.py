# ZeRO-1 with torch_xla's ZeroRedundancyOptimizer: optimizer state sharded over the ranks, the
# gradients reduce-scattered and the parameters all-gathered inside its `step`.
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr
from torch_xla.distributed.zero_redundancy_optimizer import ZeroRedundancyOptimizer


def _mp_fn(index):
    device = xm.xla_device()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 12)).to(device)
    optimizer = ZeroRedundancyOptimizer(
        model.parameters(),
        torch.optim.SGD,
        lr=0.05,
        momentum=0.9,
        pin_layout=False,
    )
    generator = torch.Generator().manual_seed(xr.global_ordinal())
    for step in range(4):
        inputs = torch.randn(4, 12, generator=generator).to(device)
        optimizer.zero_grad()
        loss = nn.functional.smooth_l1_loss(model(inputs), inputs.flip(1))
        loss.backward()
        optimizer.step()
        xm.mark_step()
        xm.master_print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=())
