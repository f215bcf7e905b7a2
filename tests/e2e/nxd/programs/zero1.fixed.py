# NxD ZeRO-1 under data parallelism: NeuronZero1Optimizer shards AdamW's state over NxD's dp groups and
# averages and clips the gradients in its step.
import torch
import torch.distributed as dist
import torch.distributed.optim as dist_optim
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


class _Zero1Optimizer(dist_optim.ZeroRedundancyOptimizer):
    """NxD's NeuronZero1Optimizer on torch's ZeRO: its `step` averaged the gradients over the
    data-parallel group (`process_group`) and clipped their norm (to 1.0 by default) before stepping."""

    def __init__(self, params, optimizer_class, process_group=None, grad_clipping=True, max_norm=None, **defaults):
        super().__init__(params, optimizer_class=optimizer_class, process_group=process_group, **defaults)
        self._nxd_max_norm = (1.0 if max_norm is None else max_norm) if grad_clipping else None

    def step(self, closure=None, **kwargs):
        import torch

        params = [p for group in self.param_groups for p in group["params"] if p.grad is not None]
        size = torch.distributed.get_world_size(self.process_group)
        for param in params:
            torch.distributed.all_reduce(param.grad, group=self.process_group)
            param.grad.div_(size)
        if self._nxd_max_norm is not None:
            torch.nn.utils.clip_grad_norm_(params, self._nxd_max_norm)
        return super().step(closure, **kwargs)


BATCH, STEPS = 8, 5


def main():
    dist.init_process_group("neuron")
    global _MESH
    _MESH = init_device_mesh("neuron", (dist.get_world_size() // 1, 1), mesh_dim_names=("dp", "tp"))
    device = torch.device("neuron")
    dp_size = _MESH["dp"].size()
    dp_rank = _MESH["dp"].get_local_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 2)).to(device)
    optimizer = _Zero1Optimizer(
        model.parameters(),
        torch.optim.AdamW,
        lr=0.05,
        process_group=_MESH["dp"].get_group(),
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
        reported = _all_reduce("sum", loss.detach(), scale=1.0 / dp_size)
        if dist.get_rank() == 0:
            print(f"loss {step} {reported.item():.8f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
