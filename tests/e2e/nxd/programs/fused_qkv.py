# An NxD fused QKV projection: one ColumnParallelLinear with stride=3 that forward splits into q, k, v.
# NxD gives each rank its slice of q, of k and of v; a plain column shard would not.
import math

import torch
import torch.distributed as dist
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_backend  # noqa: F401
from neuronx_distributed.parallel_layers import layers, parallel_state

HIDDEN, HEADS, SEQ, BATCH, STEPS = 16, 4, 5, 2, 4


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = HEADS // parallel_state.get_tensor_model_parallel_size()
        self.qkv = layers.ColumnParallelLinear(HIDDEN, 3 * HIDDEN, bias=False, gather_output=False, stride=3)
        self.out = layers.RowParallelLinear(HIDDEN, HIDDEN, bias=False, input_is_parallel=True)

    def forward(self, x):
        batch, seq, _ = x.shape
        q, k, v = (t.view(batch, seq, self.heads, -1).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1))
        weights = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
        return self.out((weights @ v).transpose(1, 2).reshape(batch, seq, -1))


def main():
    dist.init_process_group("xla")
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=dist.get_world_size())
    device = xm.xla_device()
    torch.manual_seed(0)
    model = Attention().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data, target = torch.randn(BATCH, SEQ, HIDDEN).to(device), torch.randn(BATCH, SEQ, HIDDEN).to(device)
    for step in range(STEPS):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(data), target)
        loss.backward()
        optimizer.step()
        xm.mark_step()
        if dist.get_rank() == 0:
            print(f"loss {step} {loss.item():.8f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
