# NxD tensor parallelism: a column -> row parallel MLP (NxD's tp examples), every rank on the same batch.
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import ColwiseParallel
from torch.distributed.tensor.parallel import RowwiseParallel
from torch.distributed.tensor.parallel import parallelize_module

HIDDEN, FFN, STEPS = 16, 64, 5


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(HIDDEN, FFN)
        self.down = nn.Linear(FFN, HIDDEN)
        parallelize_module(self, _MESH["tp"], {"up": ColwiseParallel(), "down": RowwiseParallel()})

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


def main():
    dist.init_process_group("neuron")
    global _MESH
    _MESH = init_device_mesh(
        "neuron",
        (dist.get_world_size() // dist.get_world_size(), dist.get_world_size()),
        mesh_dim_names=("dp", "tp"),
    )
    device = torch.device("neuron")
    torch.manual_seed(0)
    model = MLP().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.randn(8, HIDDEN).to(device)
    target = torch.randn(8, HIDDEN).to(device)
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
