# XLA FSDP built through a lambda: partial auto-wrap policies, checkpointed inner wrappers, and a
# sharded checkpoint (shard metadata) consolidated at the end, as the FSDP MNIST recipes do.
import functools
import os
import tempfile

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr
from torch_xla.distributed.fsdp import XlaFullyShardedDataParallel as FSDP
from torch_xla.distributed.fsdp import checkpoint_module, consolidate_sharded_model_checkpoints
from torch_xla.distributed.fsdp.wrap import size_based_auto_wrap_policy, transformer_auto_wrap_policy


class Residual(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.inner = nn.Sequential(nn.Linear(width, 4 * width), nn.SiLU(), nn.Linear(4 * width, width))

    def forward(self, x):
        return x + self.inner(x)


class Net(nn.Module):
    def __init__(self, width=24, depth=3):
        super().__init__()
        self.embed = nn.Linear(6, width)
        self.layers = nn.ModuleList(Residual(width) for _ in range(depth))
        self.head = nn.Linear(width, 2)

    def forward(self, x):
        x = self.embed(x)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


def _mp_fn(index, flags):
    device = xm.xla_device()
    torch.manual_seed(0)
    if flags["policy"] == "size":
        auto_wrap_policy = functools.partial(size_based_auto_wrap_policy, min_num_params=1000)
    else:
        auto_wrap_policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Residual})
    fsdp_wrap = lambda module: FSDP(
        module,
        compute_dtype=torch.bfloat16,
        fp32_reduce_scatter=True,
        flatten_parameters=True,
        shard_param_on_dim_0=False,
        pin_layout_in_collective_ops=True,
        auto_wrap_policy=auto_wrap_policy,
        auto_wrapper_callable=lambda m, *args, **kwargs: FSDP(checkpoint_module(m), *args, **kwargs),
    )
    model = fsdp_wrap(Net().to(device))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(xr.global_ordinal())
    for step in range(4):
        inputs = torch.randn(8, 6, generator=generator).to(device)
        labels = (inputs.sum(dim=1) > 0).long().to(device)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs).float(), labels)
        loss.backward()
        optimizer.step()
        xm.mark_step()
        xm.master_print(f"step {step} loss {loss.item():.4f}")
    ckpt_dir = flags["ckpt_dir"]
    ckpt = {"model": model.state_dict(), "shard_metadata": model.get_shard_metadata(), "optimizer": optimizer.state_dict()}
    ckpt_path = os.path.join(ckpt_dir, f"rank-{xr.global_ordinal()}-of-{xr.world_size()}.pth")
    xm.save(ckpt, ckpt_path, master_only=False)
    xm.rendezvous("ckpt_saved")
    if xm.is_master_ordinal(local=False):
        consolidate_sharded_model_checkpoints(ckpt_prefix=os.path.join(ckpt_dir, ""), ckpt_suffix="rank-*-of-*.pth")


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=({"policy": "size", "ckpt_dir": tempfile.mkdtemp(prefix="fsdp-ckpt-")},))
