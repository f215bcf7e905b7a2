# NxD checkpoints: a tensor-parallel model and its AdamW state saved with nxd.save_checkpoint after three
# steps, loaded into a model built from another seed with nxd.load_checkpoint, and trained on.
import torch
import torch.distributed as dist
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_backend  # noqa: F401
import neuronx_distributed as nxd
from neuronx_distributed.parallel_layers import layers, parallel_state

HIDDEN, FFN = 16, 32
CHECKPOINTS = "checkpoints"


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = layers.ColumnParallelLinear(HIDDEN, FFN, gather_output=False)
        self.down = layers.RowParallelLinear(FFN, HIDDEN, input_is_parallel=True)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


def train(model, optimizer, data, target, steps, first):
    for step in range(first, first + steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(data), target)
        loss.backward()
        optimizer.step()
        xm.mark_step()
        if dist.get_rank() == 0:
            print(f"loss {step} {loss.item():.8f}")


def main():
    dist.init_process_group("xla")
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=dist.get_world_size())
    device = xm.xla_device()
    torch.manual_seed(0)
    data, target = torch.randn(8, HIDDEN).to(device), torch.randn(8, HIDDEN).to(device)
    model = MLP().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
    train(model, optimizer, data, target, 3, 0)
    nxd.save_checkpoint(CHECKPOINTS, tag="step_3", model=model, optimizer=optimizer)
    torch.manual_seed(1)
    resumed = MLP().to(device)
    resumed_optimizer = torch.optim.AdamW(resumed.parameters(), lr=0.01)
    nxd.load_checkpoint(CHECKPOINTS, tag="step_3", model=resumed, optimizer=resumed_optimizer)
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), resumed.parameters())), "not restored"
    train(resumed, resumed_optimizer, data, target, 3, 3)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
