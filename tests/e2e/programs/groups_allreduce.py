# NxD-style data parallel under torchrun: a module-level process group with a getter, and the
# gradients all-reduced over it with `groups=`, as tensor-parallel training scripts do.
import torch
import torch.distributed as dist
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_backend  # noqa: F401

_DATA_PARALLEL_GROUP = None


def initialize_data_parallel():
    global _DATA_PARALLEL_GROUP
    _DATA_PARALLEL_GROUP = dist.new_group(list(range(dist.get_world_size())))


def get_data_parallel_group():
    return _DATA_PARALLEL_GROUP


def get_data_parallel_size():
    return dist.get_world_size(group=get_data_parallel_group())


def allreduce_gradients(model):
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    scale = 1.0 / get_data_parallel_size()
    xm.all_reduce(xm.REDUCE_SUM, grads, scale=scale, groups=get_data_parallel_group())


def main():
    dist.init_process_group("xla", init_method="xla://")
    initialize_data_parallel()
    device = xm.xla_device()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(7, 14), nn.Tanh(), nn.Linear(14, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(dist.get_rank())
    for step in range(4):
        inputs = torch.randn(3, 7, generator=generator).to(device)
        loss = model(inputs).abs().mean()
        optimizer.zero_grad()
        loss.backward()
        allreduce_gradients(model)
        optimizer.step()
        xm.mark_step()


if __name__ == "__main__":
    main()
