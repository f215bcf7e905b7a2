# xmp.spawn data parallel without DDP: xm.optimizer_step all-reduces the gradients.
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler
import os


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


def synthetic_regression(count=64):
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(count, 8, generator=generator)
    targets = inputs.sum(dim=1, keepdim=True)
    return TensorDataset(inputs, targets)


def _mp_fn(index, flags):
    device = torch.device("neuron")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=flags["lr"])
    dataset = synthetic_regression()
    sampler = DistributedSampler(dataset, num_replicas=int(os.environ.get("WORLD_SIZE", 1)), rank=int(os.environ.get("RANK", 0)), shuffle=False)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(flags["epochs"]):
        for inputs, targets in loader:
            inputs, targets = inputs.to(device), targets.to(device)
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(inputs), targets)
            loss.backward()
            _optimizer_step(optimizer)
        if int(os.environ.get("LOCAL_RANK", 0)) == 0:
            print(f"epoch {epoch} loss {loss.item():.4f}")


if __name__ == "__main__":
    if "WORLD_SIZE" in os.environ:
        dist.init_process_group("neuron")
    _mp_fn(int(os.environ.get("LOCAL_RANK", 0)), {"lr": 0.05, "epochs": 2})
    if "WORLD_SIZE" in os.environ:
        dist.destroy_process_group()
