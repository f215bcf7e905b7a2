# ZeRO-1 with torch_xla's ZeroRedundancyOptimizer: optimizer state sharded over the ranks, the
# gradients reduce-scattered and the parameters all-gathered inside its `step`.
import torch
import torch.distributed as dist
import torch.distributed.optim as dist_optim
import torch.nn as nn
import os


class _ZeroRedundancyOptimizer(dist_optim.ZeroRedundancyOptimizer):
    """torch_xla's ZeRO-1 on torch's: its `step` averaged the gradients over the ranks and clipped their norm."""

    def __init__(self, params, optimizer_class, optimizer_dtype=None, grad_clipping=True, max_norm=None, pin_layout=True, sharding_groups=None, grad_norm_groups=None, lazy_init=False, bucket_cap_mb_all_gather=0, bucket_cap_mb_reduce_scatter=0, use_grad_acc_hook=False, save_master_weights=False, higher_cc_precision=False, coalesce_cc=False, **defaults):
        super().__init__(params, optimizer_class=optimizer_class, **defaults)
        self._xla_max_norm = (1.0 if max_norm is None else max_norm) if grad_clipping else None

    def step(self, closure=None, **kwargs):
        import torch

        params = [p for group in self.param_groups for p in group["params"] if p.grad is not None]
        world_size = torch.distributed.get_world_size()
        for param in params:
            torch.distributed.all_reduce(param.grad)
            param.grad.div_(world_size)
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
