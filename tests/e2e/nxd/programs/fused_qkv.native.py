# The native form of fused_qkv.py: the fused projection split into q, k and v layers, each ColwiseParallel,
# so each rank holds whole heads of each (TorchTitan's plan). The full q|k|v weight is initialised as one
# matrix and split, as the fused layer was.
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
        fused = nn.Linear(HIDDEN, 3 * HIDDEN, bias=False)
        self.q_proj, self.k_proj, self.v_proj = (nn.Linear(HIDDEN, HIDDEN, bias=False) for _ in range(3))
        with torch.no_grad():
            for layer, part in zip((self.q_proj, self.k_proj, self.v_proj), fused.weight.chunk(3, dim=0)):
                layer.weight.copy_(part)
        self.out = nn.Linear(HIDDEN, HIDDEN, bias=False)

    def forward(self, x):
        batch, seq, _ = x.shape
        q, k, v = (
            p(x).view(batch, seq, self.heads, -1).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj)
        )
        weights = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
        return self.out((weights @ v).transpose(1, 2).reshape(batch, seq, -1))


def main():
    dist.init_process_group("neuron")
    mesh = init_device_mesh("neuron", (dist.get_world_size(),), mesh_dim_names=("tp",))
    device = torch.device("neuron")
    torch.manual_seed(0)
    model = Attention(mesh["tp"].size()).to(device)
    plan = {
        "q_proj": ColwiseParallel(),
        "k_proj": ColwiseParallel(),
        "v_proj": ColwiseParallel(),
        "out": RowwiseParallel(),
    }
    parallelize_module(model, mesh["tp"], plan)
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
