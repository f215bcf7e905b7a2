# NxD ZeRO-1 under data parallelism: NeuronZero1Optimizer shards AdamW's state over NxD's dp groups and
# averages and clips the gradients in its step.
import torch
import torch.distributed as dist
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_backend  # noqa: F401
from neuronx_distributed.optimizer import NeuronZero1Optimizer
from neuronx_distributed.parallel_layers import parallel_state

BATCH, STEPS = 8, 5


def main():
    dist.init_process_group("xla")
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=1)
    device = xm.xla_device()
    dp_size = parallel_state.get_data_parallel_size()
    dp_rank = parallel_state.get_data_parallel_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 2)).to(device)
    optimizer = NeuronZero1Optimizer(
        model.parameters(),
        torch.optim.AdamW,
        lr=0.05,
        pin_layout=False,
        sharding_groups=parallel_state.get_data_parallel_replica_groups(),
        grad_norm_groups=parallel_state.get_tensor_model_parallel_replica_groups(),
    )
    data, target = torch.randn(BATCH, 6) * 3, torch.randn(BATCH, 2) * 3
    shard = BATCH // dp_size
    inputs = data[dp_rank * shard : (dp_rank + 1) * shard].to(device)
    labels = target[dp_rank * shard : (dp_rank + 1) * shard].to(device)
    for step in range(STEPS):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs), labels)
        loss.backward()
        optimizer.step()
        xm.mark_step()
        reported = xm.all_reduce(xm.REDUCE_SUM, loss.detach(), scale=1.0 / dp_size)
        if dist.get_rank() == 0:
            print(f"loss {step} {reported.item():.8f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
