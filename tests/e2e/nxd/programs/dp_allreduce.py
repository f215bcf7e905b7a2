# NxD data parallelism: the mesh from initialize_model_parallel and gradients all-reduced over NxD's dp groups.
import torch
import torch.distributed as dist
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_backend  # noqa: F401
from neuronx_distributed.parallel_layers import parallel_state

BATCH, STEPS = 8, 5


def allreduce_gradients(model):
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    scale = 1.0 / parallel_state.get_data_parallel_size()
    xm.all_reduce(xm.REDUCE_SUM, grads, scale=scale, groups=parallel_state.get_data_parallel_group(as_list=True))


def main():
    dist.init_process_group("xla")
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=1)
    device = xm.xla_device()
    dp_size = parallel_state.get_data_parallel_size()
    dp_rank = parallel_state.get_data_parallel_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data, target = torch.randn(BATCH, 6), torch.randn(BATCH, 1)
    shard = BATCH // dp_size
    inputs = data[dp_rank * shard : (dp_rank + 1) * shard].to(device)
    labels = target[dp_rank * shard : (dp_rank + 1) * shard].to(device)
    for step in range(STEPS):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs), labels)
        loss.backward()
        allreduce_gradients(model)
        optimizer.step()
        xm.mark_step()
        reported = xm.all_reduce(xm.REDUCE_SUM, loss.detach(), scale=1.0 / dp_size)
        if dist.get_rank() == 0:
            print(f"loss {step} {reported.item():.8f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
