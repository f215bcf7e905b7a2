"""Templates of the helpers the sharding fixes (NM311, NM315) write into migrated files: XLA FSDP,
its sharded checkpoints and ZeRO-1 on FSDP2, DCP full state dicts and torch's ZeRO.

`{torch}` (or `{dist_optim}` for the ZeRO class) is the module's name in the file; `helpers.py`
registers them with the other helpers. Kept apart only so that helpers.py stays readable.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

_FSDP_DECLINED = '("sharding_groups", "sharding_rank", "sharding_world_size", "param_init_fn")'

SHARDING_HELPERS: Mapping[str, str] = MappingProxyType(
    {
        "fully_shard": f"""def _fully_shard(module, reshard_after_forward=True, *, compute_dtype=None, buffer_dtype=None, fp32_reduce_scatter=False, auto_wrap_policy=None, auto_wrapper_callable=None, **xla_only):
    \"\"\"What torch_xla's FSDP wrapper did, with FSDP2: shard the submodules the policy picks, then `module`.\"\"\"
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    import os

    for name in {_FSDP_DECLINED}:
        if xla_only.get(name) is not None:
            raise NotImplementedError(f"XLA FSDP's {{name}}= has no FSDP2 counterpart; port it by hand")
    distributed = {{torch}}.distributed.is_available() and {{torch}}.distributed.is_initialized()
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
        reduce_dtype = {{torch}}.float32 if fp32_reduce_scatter else None
        mp_policy = MixedPrecisionPolicy(param_dtype=compute_dtype, reduce_dtype=reduce_dtype)
        fully_shard(module, reshard_after_forward=reshard_after_forward, mp_policy=mp_policy)
    return module


def _shard_children(module, policy, wrap, options):
    \"\"\"torch_xla's recursive auto-wrap: wrap each child `policy` picks; the parameters wrapped.\"\"\"
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
""",
        "checkpoint_module": """def _checkpoint_module(module):
    \"\"\"Recompute `module`'s activations in the backward pass: its `forward` is patched in place and
    the module returned, as torch_xla's `checkpoint_module` did (a call whose inputs need no gradient runs plainly).\"\"\"
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
""",
        "shard_metadata": """def _shard_metadata(model):
    \"\"\"In place of XLA FSDP's `get_shard_metadata()`: the full state dict, gathered from every rank (call it on all).\"\"\"
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    distributed = {torch}.distributed.is_available() and {torch}.distributed.is_initialized()
    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    rank, world_size = ({torch}.distributed.get_rank(), {torch}.distributed.get_world_size()) if distributed else (0, 1)
    return {"full_state_dict": get_model_state_dict(model, options=options), "rank": rank, "world_size": world_size}
""",
        "consolidate_checkpoints": """def _consolidate_sharded_model_checkpoints(ckpt_prefix, ckpt_suffix="*.pth", save_path="", save_model=True):
    \"\"\"What torch_xla's `consolidate_sharded_model_checkpoints` did, from the full state dict `_shard_metadata` kept.\"\"\"
    import glob

    paths = sorted(glob.glob(ckpt_prefix + ckpt_suffix))
    if not paths:
        raise FileNotFoundError(f"no checkpoint matches {ckpt_prefix + ckpt_suffix}")
    full_state_dict = None
    for path in paths:
        metadata = {torch}.load(path, map_location="cpu", weights_only=False).get("shard_metadata") or {}
        full_state_dict = full_state_dict or metadata.get("full_state_dict")
    if not full_state_dict:
        raise ValueError(f"no checkpoint matching {ckpt_prefix + ckpt_suffix} holds a `_shard_metadata` full state dict")
    if not save_model:
        return full_state_dict, None
    save_path = save_path or ckpt_prefix + "_consolidated.pth"
    {torch}.save({"model": full_state_dict}, save_path)
    return full_state_dict, save_path
""",
        "zero_redundancy_optimizer": """class _ZeroRedundancyOptimizer({dist_optim}.ZeroRedundancyOptimizer):
    \"\"\"torch_xla's ZeRO-1 on torch's: its `step` averaged the gradients over the ranks and clipped their norm.\"\"\"

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
""",
        "zero1_optimizer": """class _Zero1Optimizer({dist_optim}.ZeroRedundancyOptimizer):
    \"\"\"NxD's NeuronZero1Optimizer on torch's ZeRO: its `step` averaged the gradients over the
    data-parallel group (`process_group`) and clipped their norm (to 1.0 by default) before stepping.\"\"\"

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
""",
    }
)
