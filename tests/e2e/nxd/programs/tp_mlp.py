# NxD tensor parallelism: a column -> row parallel MLP (NxD's tp examples), every rank on the same batch.
import torch
import torch.distributed as dist
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_backend  # noqa: F401
from neuronx_distributed.parallel_layers import layers, parallel_state

HIDDEN, FFN, STEPS = 16, 64, 5


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = layers.ColumnParallelLinear(HIDDEN, FFN, gather_output=False)
        self.down = layers.RowParallelLinear(FFN, HIDDEN, input_is_parallel=True)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


def main():
    dist.init_process_group("xla")
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=dist.get_world_size())
    device = xm.xla_device()
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
        xm.mark_step()
        if dist.get_rank() == 0:
            print(f"loss {step} {loss.item():.8f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
