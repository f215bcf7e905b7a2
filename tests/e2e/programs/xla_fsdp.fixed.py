# XLA FSDP under torchrun: transformer_auto_wrap_policy, compute_dtype and XLA-only arguments.
import functools

import torch
import torch.distributed as dist
import torch.distributed.fsdp as fsdp
import torch.nn as nn


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
    dist.init_process_group("neuron")
    device = torch.device("neuron")
    torch.manual_seed(0)
    model = Model().to(device)
    for submodule in model.modules():
        if isinstance(submodule, (Block,)):
            fsdp.fully_shard(submodule, mp_policy=fsdp.MixedPrecisionPolicy(param_dtype=torch.bfloat16))
    fsdp.fully_shard(model, mp_policy=fsdp.MixedPrecisionPolicy(param_dtype=torch.bfloat16))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(dist.get_rank())
    for step in range(4):
        inputs = torch.randn(4, 16, generator=generator).to(device)
        loss = model(inputs).float().pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if dist.get_rank() == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
