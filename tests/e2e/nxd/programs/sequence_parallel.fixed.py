# NxD sequence parallelism in NxD's [S, B, H] layout: tagged norms, sequence-parallel layers and the
# training script's own all-reduce of the norms' gradients over the tensor-parallel group.
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor
from torch.distributed.tensor import Replicate
from torch.distributed.tensor import Shard
from torch.distributed.tensor.parallel import ColwiseParallel
from torch.distributed.tensor.parallel import RowwiseParallel
from torch.distributed.tensor.parallel import SequenceParallel
from torch.distributed.tensor.parallel import loss_parallel
from torch.distributed.tensor.parallel import parallelize_module

VOCAB, HIDDEN, FFN, SEQ, BATCH, STEPS = 32, 16, 32, 8, 3, 5


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(HIDDEN)
        self.up = nn.Linear(HIDDEN, FFN)
        self.down = nn.Linear(FFN, HIDDEN)
        parallelize_module(
            self,
            _MESH["tp"],
            {
                "norm": SequenceParallel(sequence_dim=0, use_local_output=True),
                "up": ColwiseParallel(input_layouts=Shard(0)),
                "down": RowwiseParallel(output_layouts=Shard(0)),
            },
        )

    def forward(self, x):
        return x + self.down(torch.relu(self.up(self.norm(x))))


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.block = Block()
        self.final_norm = nn.LayerNorm(HIDDEN)
        self.head = nn.Linear(HIDDEN, VOCAB, bias=False)
        parallelize_module(
            self,
            _MESH["tp"],
            {
                "embed": RowwiseParallel(input_layouts=Replicate()),
                "final_norm": SequenceParallel(sequence_dim=0, use_local_output=True),
                "head": ColwiseParallel(input_layouts=Shard(0)),
            },
        )

    def forward(self, ids):
        hidden = self.embed(ids).transpose(0, 1).contiguous()
        hidden = DTensor.from_local(hidden, _MESH["tp"], [Replicate()], run_check=False).redistribute(_MESH["tp"], [Shard(0)]).to_local()
        logits = self.head(self.final_norm(self.block(hidden)))
        return logits.transpose(0, 1)


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
    model = TinyLM().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    ids = torch.randint(0, VOCAB, (BATCH, SEQ)).to(device)
    labels = torch.randint(0, VOCAB, (BATCH, SEQ)).to(device)
    for step in range(STEPS):
        optimizer.zero_grad()
        with loss_parallel():
            loss = F.cross_entropy(DTensor.from_local(model(ids), _MESH["tp"], [Shard(-1)]).flatten(0, -2), labels.flatten(), reduction="none").view_as(labels).mean()
            loss.backward()
        optimizer.step()
        if dist.get_rank() == 0:
            print(f"loss {step} {loss.item():.8f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
