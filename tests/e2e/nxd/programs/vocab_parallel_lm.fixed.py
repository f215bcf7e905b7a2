# NxD vocabulary parallelism: a ParallelEmbedding and a column-parallel head feeding parallel_cross_entropy.
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
from torch.distributed.tensor.parallel import loss_parallel
from torch.distributed.tensor.parallel import parallelize_module

VOCAB, HIDDEN, SEQ, BATCH, STEPS = 32, 16, 6, 4, 5


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.head = nn.Linear(HIDDEN, VOCAB, bias=False)
        parallelize_module(
            self,
            _MESH["tp"],
            {
                "embed": RowwiseParallel(input_layouts=Replicate()),
                "head": ColwiseParallel(),
            },
        )

    def forward(self, ids):
        return self.head(torch.tanh(self.embed(ids)))


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
        logits = model(ids)
        with loss_parallel():
            loss = F.cross_entropy(DTensor.from_local(logits, _MESH["tp"], [Shard(-1)]).flatten(0, -2), labels.flatten(), reduction="none").view_as(labels).mean()
            loss.backward()
        optimizer.step()
        if dist.get_rank() == 0:
            print(f"loss {step} {loss.item():.8f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
