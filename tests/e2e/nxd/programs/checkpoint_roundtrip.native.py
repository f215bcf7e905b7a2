# The native form of checkpoint_roundtrip.py: Distributed Checkpoint (dcp.save / dcp.load of get_state_dict)
# of a DTensor-sharded model and its AdamW state, into one folder every rank writes its shards to.
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

HIDDEN, FFN = 16, 32
CHECKPOINTS = "checkpoints"


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(HIDDEN, FFN)
        self.down = nn.Linear(FFN, HIDDEN)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


def build(mesh, device):
    model = MLP().to(device)
    parallelize_module(model, mesh["tp"], {"up": ColwiseParallel(), "down": RowwiseParallel()})
    return model, torch.optim.AdamW(model.parameters(), lr=0.01)


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
    mesh = init_device_mesh("neuron", (dist.get_world_size(),), mesh_dim_names=("tp",))
    device = torch.device("neuron")
    torch.manual_seed(0)
    data, target = torch.randn(8, HIDDEN).to(device), torch.randn(8, HIDDEN).to(device)
    model, optimizer = build(mesh, device)
    train(model, optimizer, data, target, 3, 0)
    model_state, optim_state = get_state_dict(model, optimizer)
    dcp.save({"model": model_state, "optim": optim_state}, checkpoint_id=f"{CHECKPOINTS}/step_3")
    torch.manual_seed(1)
    resumed, resumed_optimizer = build(mesh, device)
    model_state, optim_state = get_state_dict(resumed, resumed_optimizer)
    state = {"model": model_state, "optim": optim_state}
    dcp.load(state, checkpoint_id=f"{CHECKPOINTS}/step_3")
    set_state_dict(resumed, resumed_optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), resumed.parameters())), "not restored"
    train(resumed, resumed_optimizer, data, target, 3, 3)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
