# ZeRO-1 with torch_xla's ZeroRedundancyOptimizer: optimizer state sharded over the ranks, the
# gradients reduce-scattered and the parameters all-gathered inside its `step`.
import torch
import torch.distributed as dist
import torch.distributed.optim as dist_optim
import torch.nn as nn
import os


def _average_gradients(grads):
    """Average `grads` over the default process group in flat buckets of about 25 MB, one all-reduce each, as DDP does."""
    world_size = torch.distributed.get_world_size()
    by_kind = {}
    for grad in grads:
        if grad.is_sparse:
            torch.distributed.all_reduce(grad)
            grad.div_(world_size)
        else:
            by_kind.setdefault((grad.dtype, grad.device), []).append(grad)
    for group in by_kind.values():
        start = 0
        while start < len(group):
            end, size = start + 1, group[start].nbytes
            while end < len(group) and size + group[end].nbytes <= 25 * 2**20:
                size, end = size + group[end].nbytes, end + 1
            bucket, start = group[start:end], end
            flat = torch.cat([t.reshape(-1) for t in bucket])
            torch.distributed.all_reduce(flat)
            flat.div_(world_size)
            for tensor, piece in zip(bucket, flat.split([t.numel() for t in bucket])):
                tensor.copy_(piece.view_as(tensor))


class _ZeroRedundancyOptimizer(dist_optim.ZeroRedundancyOptimizer):
    """torch_xla's ZeRO-1 on torch's: its `step` averaged the gradients over the ranks and clipped their norm."""

    def __init__(self, params, optimizer_class, optimizer_dtype=None, grad_clipping=True, max_norm=None, pin_layout=True, sharding_groups=None, grad_norm_groups=None, lazy_init=False, bucket_cap_mb_all_gather=0, bucket_cap_mb_reduce_scatter=0, use_grad_acc_hook=False, save_master_weights=False, higher_cc_precision=False, coalesce_cc=False, **defaults):
        super().__init__(params, optimizer_class=optimizer_class, **defaults)
        self._xla_max_norm = (1.0 if max_norm is None else max_norm) if grad_clipping else None

    def step(self, closure=None, **kwargs):
        import torch

        params = [p for group in self.param_groups for p in group["params"] if p.grad is not None]
        _average_gradients([p.grad for p in params])
        if self._xla_max_norm is not None:
            torch.nn.utils.clip_grad_norm_(params, self._xla_max_norm)
        return super().step(closure, **kwargs)


def _mp_fn(index):
    device = torch.device("neuron")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 12)).to(device)
    optimizer = _ZeroRedundancyOptimizer(
        model.parameters(),
        torch.optim.SGD,
        lr=0.05,
        momentum=0.9,
        pin_layout=False,
    )
    generator = torch.Generator().manual_seed(int(os.environ.get("RANK", 0)))
    for step in range(4):
        inputs = torch.randn(4, 12, generator=generator).to(device)
        optimizer.zero_grad()
        loss = nn.functional.smooth_l1_loss(model(inputs), inputs.flip(1))
        loss.backward()
        optimizer.step()
        if int(os.environ.get("RANK", 0)) == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    if "WORLD_SIZE" in os.environ:
        dist.init_process_group("neuron")
    _mp_fn(int(os.environ.get("LOCAL_RANK", 0)))
    if "WORLD_SIZE" in os.environ:
        dist.destroy_process_group()
