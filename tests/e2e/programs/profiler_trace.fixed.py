# Step traces and a profiler server around a training loop, with a detached capture on one step.
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn


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


PORT = 9229


def train(device, logdir):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 20), nn.GELU(), nn.Linear(20, 3)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    generator = torch.Generator().manual_seed(2)
    for step in range(5):
        inputs = torch.randn(16, 10, generator=generator).to(device)
        labels = torch.randint(0, 3, (16,), generator=generator).to(device)
        with torch.profiler.record_function("train_step"):
            with torch.profiler.record_function("forward"):
                loss = nn.functional.cross_entropy(model(inputs), labels)
            with torch.profiler.record_function("backward"):
                optimizer.zero_grad()
                loss.backward()
            _optimizer_step(optimizer)
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    train(torch.device("neuron"), tempfile.mkdtemp(prefix="profile-"))
