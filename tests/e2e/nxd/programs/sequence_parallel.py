# NxD sequence parallelism in NxD's [S, B, H] layout: tagged norms, sequence-parallel layers and the
# training script's own all-reduce of the norms' gradients over the tensor-parallel group.
import torch
import torch.distributed as dist
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_backend  # noqa: F401
from neuronx_distributed.parallel_layers import layers, parallel_state
from neuronx_distributed.parallel_layers.layer_norm import LayerNorm
from neuronx_distributed.parallel_layers.loss_functions import parallel_cross_entropy
from neuronx_distributed.parallel_layers.mappings import scatter_to_sequence_parallel_region

VOCAB, HIDDEN, FFN, SEQ, BATCH, STEPS = 32, 16, 32, 8, 3, 5


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = LayerNorm(HIDDEN, sequence_parallel_enabled=True)
        self.up = layers.ColumnParallelLinear(HIDDEN, FFN, gather_output=False, sequence_parallel_enabled=True)
        self.down = layers.RowParallelLinear(FFN, HIDDEN, input_is_parallel=True, sequence_parallel_enabled=True)

    def forward(self, x):
        return x + self.down(torch.relu(self.up(self.norm(x))))


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = layers.ParallelEmbedding(VOCAB, HIDDEN)
        self.block = Block()
        self.final_norm = LayerNorm(HIDDEN, sequence_parallel_enabled=True)
        self.head = layers.ColumnParallelLinear(
            HIDDEN, VOCAB, bias=False, gather_output=False, sequence_parallel_enabled=True
        )

    def forward(self, ids):
        hidden = self.embed(ids).transpose(0, 1).contiguous()
        hidden = scatter_to_sequence_parallel_region(hidden)
        logits = self.head(self.final_norm(self.block(hidden)))
        return logits.transpose(0, 1)


def allreduce_sequence_parallel_gradients(model):
    grads = [
        p.grad for p in model.parameters() if getattr(p, "sequence_parallel_enabled", False) and p.grad is not None
    ]
    xm.all_reduce(xm.REDUCE_SUM, grads, groups=parallel_state.get_tensor_model_parallel_group(as_list=True))


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
        loss = parallel_cross_entropy(model(ids), labels).mean()
        loss.backward()
        allreduce_sequence_parallel_gradients(model)
        optimizer.step()
        xm.mark_step()
        if dist.get_rank() == 0:
            print(f"loss {step} {loss.item():.8f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
