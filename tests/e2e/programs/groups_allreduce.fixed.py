# NxD-style data parallel under torchrun: a module-level process group with a getter, and the
# gradients all-reduced over it with `groups=`, as tensor-parallel training scripts do.
import torch
import torch.distributed as dist
import torch.nn as nn


def _all_reduce(reduce_type, inputs, scale=1.0, groups=None, pin_layout=True):
    """What `xm.all_reduce` did: reduce a list of tensors in place, or a tensor into a new one."""
    single = isinstance(inputs, torch.Tensor)
    tensors = [inputs.clone()] if single else list(inputs)
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        op = getattr(torch.distributed.ReduceOp, {"sum": "SUM", "mul": "PRODUCT", "min": "MIN", "max": "MAX", "and": "BAND", "or": "BOR"}[reduce_type])
        for tensor in tensors:
            torch.distributed.all_reduce(tensor, op=op, group=groups)
    if scale != 1.0:
        for tensor in tensors:
            tensor.mul_(scale)
    return tensors[0] if single else inputs


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
    _all_reduce("sum", grads, scale=scale, groups=get_data_parallel_group())


def main():
    dist.init_process_group("neuron")
    initialize_data_parallel()
    device = torch.device("neuron")
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


if __name__ == "__main__":
    main()
