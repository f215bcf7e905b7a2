# NxD data parallelism: the mesh from initialize_model_parallel and gradients all-reduced over NxD's dp groups.
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh


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


BATCH, STEPS = 8, 5


def allreduce_gradients(model):
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    scale = 1.0 / _MESH["dp"].size()
    _all_reduce("sum", grads, scale=scale, groups=_MESH["dp"].get_group())


def main():
    dist.init_process_group("neuron")
    global _MESH
    _MESH = init_device_mesh("neuron", (dist.get_world_size() // 1, 1), mesh_dim_names=("dp", "tp"))
    device = torch.device("neuron")
    dp_size = _MESH["dp"].size()
    dp_rank = _MESH["dp"].get_local_rank()
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
        reported = _all_reduce("sum", loss.detach(), scale=1.0 / dp_size)
        if dist.get_rank() == 0:
            print(f"loss {step} {reported.item():.8f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
