# XLA FSDP built through a lambda: partial auto-wrap policies, checkpointed inner wrappers, and a
# sharded checkpoint (shard metadata) consolidated at the end, as the FSDP MNIST recipes do.
import functools
import os
import tempfile

import torch
import torch.distributed as dist
import torch.distributed.fsdp as fsdp
import torch.nn as nn


def _checkpoint_module(module):
    """Recompute `module`'s activations in the backward pass: its `forward` is patched in place and
    the module returned, as torch_xla's `checkpoint_module` did (a call whose inputs need no gradient runs plainly)."""
    import functools

    import torch.utils.checkpoint

    forward = module.forward

    @functools.wraps(forward)
    def checkpointed(*args, **kwargs):
        if any(isinstance(t, torch.Tensor) and t.requires_grad for t in (*args, *kwargs.values())):
            return torch.utils.checkpoint.checkpoint(forward, *args, use_reentrant=False, **kwargs)
        return forward(*args, **kwargs)

    module.forward = checkpointed
    return module


def _consolidate_sharded_model_checkpoints(ckpt_prefix, ckpt_suffix="*.pth", save_path="", save_model=True):
    """What torch_xla's `consolidate_sharded_model_checkpoints` did, from the full state dict `_shard_metadata` kept."""
    import glob

    paths = sorted(glob.glob(ckpt_prefix + ckpt_suffix))
    if not paths:
        raise FileNotFoundError(f"no checkpoint matches {ckpt_prefix + ckpt_suffix}")
    full_state_dict = None
    for path in paths:
        metadata = torch.load(path, map_location="cpu", weights_only=False).get("shard_metadata") or {}
        full_state_dict = full_state_dict or metadata.get("full_state_dict")
    if not full_state_dict:
        raise ValueError(f"no checkpoint matching {ckpt_prefix + ckpt_suffix} holds a `_shard_metadata` full state dict")
    if not save_model:
        return full_state_dict, None
    save_path = save_path or ckpt_prefix + "_consolidated.pth"
    torch.save({"model": full_state_dict}, save_path)
    return full_state_dict, save_path


def _fully_shard(module, reshard_after_forward=True, *, compute_dtype=None, buffer_dtype=None, fp32_reduce_scatter=False, auto_wrap_policy=None, auto_wrapper_callable=None, **xla_only):
    """What torch_xla's FSDP wrapper did, with FSDP2: shard the submodules the policy picks, then `module`."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    import os

    for name in ("sharding_groups", "sharding_rank", "sharding_world_size", "param_init_fn"):
        if xla_only.get(name) is not None:
            raise NotImplementedError(f"XLA FSDP's {name}= has no FSDP2 counterpart; port it by hand")
    distributed = torch.distributed.is_available() and torch.distributed.is_initialized()
    if not distributed and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise RuntimeError("FSDP needs a process group on every rank: call torch.distributed.init_process_group() first")
    options = dict(reshard_after_forward=reshard_after_forward, compute_dtype=compute_dtype, buffer_dtype=buffer_dtype, fp32_reduce_scatter=fp32_reduce_scatter, **xla_only)
    if auto_wrap_policy is not None:
        _shard_children(module, auto_wrap_policy, auto_wrapper_callable or _fully_shard, options)
    if buffer_dtype or compute_dtype:
        for buffer in module.buffers():
            if buffer.is_floating_point():
                buffer.data = buffer.data.to(buffer_dtype or compute_dtype)
    if distributed:  # one process (no torchrun) keeps the module whole, as sharding over one rank did
        reduce_dtype = torch.float32 if fp32_reduce_scatter else None
        mp_policy = MixedPrecisionPolicy(param_dtype=compute_dtype, reduce_dtype=reduce_dtype)
        fully_shard(module, reshard_after_forward=reshard_after_forward, mp_policy=mp_policy)
    return module


def _shard_children(module, policy, wrap, options):
    """torch_xla's recursive auto-wrap: wrap each child `policy` picks; the parameters wrapped."""
    wrapped = 0
    for name, child in module.named_children():
        count = sum(p.numel() for p in child.parameters())
        if not policy(child, True, count):
            continue
        inner = _shard_children(child, policy, wrap, options)
        if policy(child, False, count - inner):
            setattr(module, name, wrap(child, **options))
            wrapped += count
        else:
            wrapped += inner
    return wrapped


def _shard_metadata(model):
    """In place of XLA FSDP's `get_shard_metadata()`: the full state dict, gathered from every rank (call it on all)."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    distributed = torch.distributed.is_available() and torch.distributed.is_initialized()
    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    rank, world_size = (torch.distributed.get_rank(), torch.distributed.get_world_size()) if distributed else (0, 1)
    return {"full_state_dict": get_model_state_dict(model, options=options), "rank": rank, "world_size": world_size}


def _to_cpu(data):
    """Copy the tensors in `data` to the CPU, as torch_xla's save did before writing."""
    if isinstance(data, torch.Tensor):
        return data.cpu()
    if isinstance(data, dict):
        return type(data)((k, _to_cpu(v)) for k, v in data.items())
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_to_cpu(v) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(_to_cpu(v) for v in data)
    return data


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
    device = torch.device("neuron")
    torch.manual_seed(0)
    if flags["policy"] == "size":
        auto_wrap_policy = functools.partial(fsdp.wrap.size_based_auto_wrap_policy, min_num_params=1000)
    else:
        auto_wrap_policy = functools.partial(fsdp.wrap.transformer_auto_wrap_policy, transformer_layer_cls={Residual})
    fsdp_wrap = lambda module: _fully_shard(
        module,
        compute_dtype=torch.bfloat16,
        fp32_reduce_scatter=True,
        flatten_parameters=True,
        shard_param_on_dim_0=False,
        pin_layout_in_collective_ops=True,
        auto_wrap_policy=auto_wrap_policy,
        auto_wrapper_callable=lambda m, *args, **kwargs: _fully_shard(_checkpoint_module(m), *args, **kwargs),
    )
    model = fsdp_wrap(Net().to(device))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(int(os.environ.get("RANK", 0)))
    for step in range(4):
        inputs = torch.randn(8, 6, generator=generator).to(device)
        labels = (inputs.sum(dim=1) > 0).long().to(device)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs).float(), labels)
        loss.backward()
        optimizer.step()
        if int(os.environ.get("RANK", 0)) == 0:
            print(f"step {step} loss {loss.item():.4f}")
    ckpt_dir = flags["ckpt_dir"]
    ckpt = {"model": model.state_dict(), "shard_metadata": _shard_metadata(model), "optimizer": optimizer.state_dict()}
    ckpt_path = os.path.join(ckpt_dir, f"rank-{int(os.environ.get('RANK', 0))}-of-{int(os.environ.get('WORLD_SIZE', 1))}.pth")
    torch.save(_to_cpu(ckpt), ckpt_path)
    if dist.is_initialized():
        dist.barrier()
    if dist.is_initialized():
        dist.barrier()
    if int(os.environ.get("RANK", 0)) == 0:
        _consolidate_sharded_model_checkpoints(ckpt_prefix=os.path.join(ckpt_dir, ""), ckpt_suffix="rank-*-of-*.pth")


if __name__ == "__main__":
    if "WORLD_SIZE" in os.environ:
        dist.init_process_group("neuron")
    _mp_fn(int(os.environ.get("LOCAL_RANK", 0)), {"policy": "size", "ckpt_dir": tempfile.mkdtemp(prefix="fsdp-ckpt-")})
    if "WORLD_SIZE" in os.environ:
        dist.destroy_process_group()
