# Issue 37's constructs: an availability probe returning (device, backend) tested later, a referenced
# `checkpoint_module`, an RNG state kept in a dict and restored, and a process group started only
# behind a flag one call below the launched function, with `xm.optimizer_step` on the other path.
import argparse
import os

import torch
import torch.distributed as dist
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


def get_device():
    return torch.device("neuron"), "xla"


def build(width, checkpointed):
    wrap = _checkpoint_module if checkpointed else (lambda m: m)
    blocks = [wrap(nn.Sequential(nn.Linear(width, width), nn.Tanh())) for _ in range(2)]
    return nn.Sequential(*blocks, nn.Linear(width, 1))


def train(flags):
    if flags.ddp:
        dist.init_process_group("neuron")
    if "WORLD_SIZE" in os.environ and not dist.is_initialized():
        dist.init_process_group("neuron")
    device, backend = get_device()
    if backend != "xla":
        raise SystemExit("this recipe trains on an accelerator")
    torch.manual_seed(0)
    model = build(8, flags.checkpoint).to(device)
    if flags.ddp:
        model = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(100 + int(os.environ.get("RANK", 0)))  # each rank its own batches
    state = {"step": 0, "rng": torch.neuron.get_rng_state()}
    for step in range(4):
        x = torch.randn(16, 8, generator=data).to(device)
        noise = torch.randn(16, 1, device=device)  # drawn from the device generator
        loss = nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True) + 0.01 * noise)
        optimizer.zero_grad()
        loss.backward()
        if flags.ddp:
            optimizer.step()
        else:
            _optimizer_step(optimizer)
        state = {"step": step + 1, "rng": torch.neuron.get_rng_state()}
    torch.neuron.set_rng_state(state["rng"])  # resume where the last step left the generator
    if int(os.environ.get("RANK", 0)) == 0:
        print(f"done after {state['step']} steps, loss {loss.item():.4f}")


def _mp_fn(index, flags):
    train(flags)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--ddp", action="store_true")
    parser.add_argument("--no-checkpoint", dest="checkpoint", action="store_false")
    _mp_fn(int(os.environ.get("LOCAL_RANK", 0)), parser.parse_known_args()[0])
    if dist.is_initialized():
        dist.destroy_process_group()
