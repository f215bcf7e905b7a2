# xmp.spawn with the TPU/CUDA AMP recipe: bf16 autocast on TPU, fp16 with a gradient scaler on CUDA.
import os
import sys

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


def _optimizer_step(optimizer, **step_args):
    """Average gradients over the default process group, then step (as torch_xla's optimizer_step did)."""
    # The gradients travel in flat buckets of about 25 MB, one all-reduce each, as in DDP. The first
    # call copies rank 0's parameters to every rank, so ranks built from different seeds agree.
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        import torch

        world_size = dist.get_world_size()

        def in_buckets(tensors, average):
            by_kind = {}
            for tensor in tensors:
                by_kind.setdefault((tensor.dtype, tensor.device), []).append(tensor)
            for group in by_kind.values():
                start = 0
                while start < len(group):
                    end, size = start + 1, group[start].nbytes
                    while end < len(group) and size + group[end].nbytes <= 25 * 2**20:
                        size, end = size + group[end].nbytes, end + 1
                    bucket, start = group[start:end], end
                    flat = torch.cat([t.reshape(-1) for t in bucket])
                    if average:
                        dist.all_reduce(flat)
                        flat.div_(world_size)
                    else:
                        dist.broadcast(flat, src=0)
                    for tensor, piece in zip(bucket, flat.split([t.numel() for t in bucket])):
                        tensor.copy_(piece.view_as(tensor))

        params = [p for group in optimizer.param_groups for p in group["params"]]
        if not getattr(optimizer, "_rank0_params_copied", False):
            in_buckets([p.data for p in params], average=False)
            optimizer._rank0_params_copied = True
        grads = [p.grad for p in params if p.grad is not None]
        in_buckets([g for g in grads if not g.is_sparse], average=True)
        for grad in grads:
            if grad.is_sparse:
                dist.all_reduce(grad)
                grad.div_(world_size)
    return optimizer.step(**step_args)


def _mp_fn(index):
    device = torch.device("neuron")
    device_hw = getattr(torch.accelerator.current_accelerator(), "type", None)
    if device_hw == "neuron":
        autocast_args = {"dtype": torch.bfloat16}
        scaler = None
    elif device_hw == "cuda":
        autocast_args = {}
        scaler = torch.amp.GradScaler("neuron")
    else:
        print(f"AMP needs a TPU or a CUDA device, not {device_hw}")
        sys.exit(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    generator = torch.Generator().manual_seed(int(os.environ.get("RANK", 0)))
    for step in range(4):
        inputs = torch.randn(8, 8, generator=generator).to(device)
        optimizer.zero_grad()
        with torch.autocast("neuron", **{"dtype": torch.bfloat16, **autocast_args}):
            loss = (model(inputs) - inputs.sum(1, keepdim=True)).pow(2).mean()
        if scaler is None:
            loss.backward()
            _optimizer_step(optimizer)
        else:
            scaler.scale(loss).backward()
            gradients = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
            _all_reduce("sum", gradients, scale=1.0 / int(os.environ.get("WORLD_SIZE", 1)))
            scaler.step(optimizer)
            scaler.update()
        if int(os.environ.get("RANK", 0)) == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    if "WORLD_SIZE" in os.environ:
        dist.init_process_group("neuron")
    _mp_fn(int(os.environ.get("LOCAL_RANK", 0)))
    if "WORLD_SIZE" in os.environ:
        dist.destroy_process_group()
