# The native form of vocab_parallel_lm.py: a vocabulary-sharded embedding and head, and loss_parallel.
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate, Shard
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, loss_parallel, parallelize_module

VOCAB, HIDDEN, SEQ, BATCH, STEPS = 32, 16, 6, 4, 5


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.head = nn.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, ids):
        return self.head(torch.tanh(self.embed(ids)))


def main():
    dist.init_process_group("neuron")
    mesh = init_device_mesh("neuron", (dist.get_world_size(),), mesh_dim_names=("tp",))
    device = torch.device("neuron")
    torch.manual_seed(0)
    model = TinyLM().to(device)
    plan = {
        "embed": RowwiseParallel(input_layouts=Replicate()),
        "head": ColwiseParallel(output_layouts=Shard(-1), use_local_output=False),
    }
    parallelize_module(model, mesh["tp"], plan)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    ids = torch.randint(0, VOCAB, (BATCH, SEQ)).to(device)
    labels = torch.randint(0, VOCAB, (BATCH, SEQ)).to(device)
    for step in range(STEPS):
        optimizer.zero_grad()
        logits = model(ids)
        with loss_parallel():
            loss = F.cross_entropy(logits.flatten(0, -2), labels.flatten(), reduction="none").view_as(labels).mean()
            loss.backward()
        optimizer.step()
        if dist.get_rank() == 0:
            print(f"loss {step} {loss.item():.8f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
