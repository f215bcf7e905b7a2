# NxD vocabulary parallelism: a ParallelEmbedding and a column-parallel head feeding parallel_cross_entropy.
import torch
import torch.distributed as dist
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_backend  # noqa: F401
from neuronx_distributed.parallel_layers import layers, parallel_state
from neuronx_distributed.parallel_layers.loss_functions import parallel_cross_entropy

VOCAB, HIDDEN, SEQ, BATCH, STEPS = 32, 16, 6, 4, 5


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = layers.ParallelEmbedding(VOCAB, HIDDEN)
        self.head = layers.ColumnParallelLinear(HIDDEN, VOCAB, bias=False, gather_output=False)

    def forward(self, ids):
        return self.head(torch.tanh(self.embed(ids)))


def main():
    dist.init_process_group("xla")
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=dist.get_world_size())
    device = xm.xla_device()
    torch.manual_seed(0)
    model = TinyLM().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    ids = torch.randint(0, VOCAB, (BATCH, SEQ)).to(device)
    labels = torch.randint(0, VOCAB, (BATCH, SEQ)).to(device)
    for step in range(STEPS):
        optimizer.zero_grad()
        logits = model(ids)
        loss = parallel_cross_entropy(logits, labels).mean()
        loss.backward()
        optimizer.step()
        xm.mark_step()
        if dist.get_rank() == 0:
            print(f"loss {step} {loss.item():.8f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
