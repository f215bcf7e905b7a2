# NxD checkpoints: a tensor-parallel model and its AdamW state saved with nxd.save_checkpoint after three
# steps, loaded into a model built from another seed with nxd.load_checkpoint, and trained on.
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.distributed.checkpoint.state_dict import get_state_dict
from torch.distributed.checkpoint.state_dict import set_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import ColwiseParallel
from torch.distributed.tensor.parallel import RowwiseParallel
from torch.distributed.tensor.parallel import parallelize_module
import os

HIDDEN, FFN = 16, 32
CHECKPOINTS = "checkpoints"


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(HIDDEN, FFN)
        self.down = nn.Linear(FFN, HIDDEN)
        parallelize_module(self, _MESH["tp"], {"up": ColwiseParallel(), "down": RowwiseParallel()})

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


def train(model, optimizer, data, target, steps, first):
    for step in range(first, first + steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(data), target)
        loss.backward()
        optimizer.step()
        if dist.get_rank() == 0:
            print(f"loss {step} {loss.item():.8f}")


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
    data, target = torch.randn(8, HIDDEN).to(device), torch.randn(8, HIDDEN).to(device)
    model = MLP().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
    train(model, optimizer, data, target, 3, 0)
    model_state, optimizer_state = get_state_dict(model, optimizer)
    dcp.save({"model": model_state, "optimizer": optimizer_state}, checkpoint_id=os.path.join(CHECKPOINTS, "step_3"))
    torch.manual_seed(1)
    resumed = MLP().to(device)
    resumed_optimizer = torch.optim.AdamW(resumed.parameters(), lr=0.01)
    model_state, optimizer_state = get_state_dict(resumed, resumed_optimizer)
    dcp.load({"model": model_state, "optimizer": optimizer_state}, checkpoint_id=os.path.join(CHECKPOINTS, "step_3"))
    set_state_dict(resumed, resumed_optimizer, model_state_dict=model_state, optim_state_dict=optimizer_state)
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), resumed.parameters())), "not restored"
    train(resumed, resumed_optimizer, data, target, 3, 3)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
