# Single-device MNIST-style MLP: xla_device, mark_step, xm.optimizer_step, met.metrics_report.
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


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


def synthetic_mnist(count=64):
    generator = torch.Generator().manual_seed(0)
    images = torch.randn(count, 1, 28, 28, generator=generator)
    labels = torch.randint(0, 10, (count,), generator=generator)
    return TensorDataset(images, labels)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(28 * 28, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = torch.flatten(x, 1)
        return F.log_softmax(self.fc2(F.relu(self.fc1(x))), dim=1)


def train():
    torch.manual_seed(1)
    device = torch.device("neuron")
    model = MLP().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
    loader = DataLoader(synthetic_mnist(), batch_size=16, shuffle=False)
    model.train()
    for epoch in range(2):
        for step, (data, target) in enumerate(loader):
            data, target = data.to(device), target.to(device)
            optimizer.zero_grad()
            loss = F.nll_loss(model(data), target)
            loss.backward()
            _optimizer_step(optimizer)
            if step % 2 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    train()
