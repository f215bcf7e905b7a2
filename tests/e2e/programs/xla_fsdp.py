# XLA FSDP under torchrun: transformer_auto_wrap_policy, compute_dtype and XLA-only arguments.
import functools

import torch
import torch.distributed as dist
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_backend  # noqa: F401
from torch_xla.distributed.fsdp import XlaFullyShardedDataParallel as FSDP
from torch_xla.distributed.fsdp.wrap import transformer_auto_wrap_policy


class Block(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.ff = nn.Sequential(nn.Linear(width, 2 * width), nn.ReLU(), nn.Linear(2 * width, width))

    def forward(self, x):
        return x + self.ff(x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block())
        self.out = nn.Linear(16, 1)

    def forward(self, x):
        return self.out(self.blocks(x))


def main():
    dist.init_process_group("xla", init_method="xla://")
    device = xm.xla_device()
    torch.manual_seed(0)
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Block})
    model = FSDP(Model().to(device), auto_wrap_policy=policy, compute_dtype=torch.bfloat16, pin_layout_in_collective_ops=False)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(dist.get_rank())
    for step in range(4):
        inputs = torch.randn(4, 16, generator=generator).to(device)
        loss = model(inputs).float().pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        xm.mark_step()
        if dist.get_rank() == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
