# The wrong port of fused_qkv.py, kept as a control: the fused nn.Linear with a plain ColwiseParallel gives
# rank 0 the first rows of q|k|v (all of q, half of k), runs without error, and trains another model.
import math

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

HIDDEN, HEADS, SEQ, BATCH, STEPS = 16, 4, 5, 2, 4


class Attention(nn.Module):
    def __init__(self, tp):
        super().__init__()
        self.heads = HEADS // tp
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN, bias=False)
        self.out = nn.Linear(HIDDEN, HIDDEN, bias=False)

    def forward(self, x):
        batch, seq, _ = x.shape
        q, k, v = (t.view(batch, seq, self.heads, -1).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1))
        weights = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
        return self.out((weights @ v).transpose(1, 2).reshape(batch, seq, -1))


def main():
    dist.init_process_group("neuron")
    mesh = init_device_mesh("neuron", (dist.get_world_size(),), mesh_dim_names=("tp",))
    device = torch.device("neuron")
    torch.manual_seed(0)
    model = Attention(mesh["tp"].size()).to(device)
    parallelize_module(model, mesh["tp"], {"qkv": ColwiseParallel(), "out": RowwiseParallel()})
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data, target = torch.randn(BATCH, SEQ, HIDDEN).to(device), torch.randn(BATCH, SEQ, HIDDEN).to(device)
    for step in range(STEPS):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(data), target)
        loss.backward()
        optimizer.step()
        if dist.get_rank() == 0:
            print(f"loss {step} {loss.item():.8f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
