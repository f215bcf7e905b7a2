# ResNet-style model with MpDeviceLoader, optimizer_step, RateTracker and test_utils logging.
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
import datetime


class _DeviceLoader:
    """Iterate `loader`, moving each batch's tensors to `device` (what MpDeviceLoader did)."""

    def __init__(self, loader, device):
        self._loader = loader
        self._device = device

    def __iter__(self):
        for batch in self._loader:
            yield _move_to_device(batch, self._device)

    def __len__(self):
        return len(self._loader)


def _move_to_device(data, device):
    """Move the tensors in `data` to `device`: in sequences, mappings, dataclasses and objects."""
    import collections.abc
    import copy

    import torch

    if isinstance(data, torch.Tensor):
        return data.to(device)
    if isinstance(data, (str, bytes, type)):
        return data
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_move_to_device(v, device) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(_move_to_device(v, device) for v in data)
    if isinstance(data, collections.abc.Mapping):
        moved = {k: _move_to_device(v, device) for k, v in data.items()}
        try:
            result = copy.copy(data)
            result.update(moved)
        except (TypeError, AttributeError):
            return moved  # a read-only mapping
        return result
    if hasattr(data, "__dict__"):
        result = copy.copy(data)
        for name, value in vars(data).items():
            vars(result)[name] = _move_to_device(value, device)
        return result
    return data


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


class _RateTracker:
    """Samples per second, smoothed and since the start (what `xm.RateTracker` reported)."""

    def __init__(self, smooth_factor=None):
        import time

        self._clock = time.time
        self._smooth_factor = 0.4 if smooth_factor is None else smooth_factor
        self._start_time = self._partial_time = self._clock()
        self._partial_count = self._count = 0.0
        self._partial_rate = None

    def add(self, count):
        self._count += count

    def rate(self):
        now = self._clock()
        delta = now - self._partial_time
        if delta <= 0:
            return 0.0
        rate = self._count / delta
        if self._partial_rate is not None:
            rate = (1 - self._smooth_factor) * rate + self._smooth_factor * self._partial_rate
        self._partial_count += self._count
        self._count = 0.0
        self._partial_time, self._partial_rate = now, rate
        return rate

    def global_rate(self):
        delta = self._clock() - self._start_time
        return (self._partial_count + self._count) / delta if delta > 0 else 0.0


def _print_training_update(device, step, loss, rate, global_rate, epoch=None, summary_writer=None):
    """Print one training line, as torch_xla's `test_utils.print_training_update` did."""
    import datetime

    items = [
        "Training",
        f"Device={device}",
        f"Epoch={epoch}" if epoch is not None else None,
        f"Step={step}",
        f"Loss={loss:.5f}",
        f"Rate={rate:.2f}",
        f"GlobalRate={global_rate:.2f}",
        f"Time={datetime.datetime.now():%H:%M:%S}",
    ]
    print("|", " ".join(item for item in items if item), flush=True)
    if summary_writer:
        summary_writer.add_scalar("examples/sec", rate, None)
        summary_writer.add_scalar("average_examples/sec", global_rate, None)


class Block(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(out)))


class TinyResNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.block = Block(8)
        self.head = nn.Linear(8, classes)

    def forward(self, x):
        x = self.block(torch.relu(self.stem(x)))
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def synthetic_images(count=32):
    generator = torch.Generator().manual_seed(0)
    return TensorDataset(torch.randn(count, 3, 16, 16, generator=generator), torch.randint(0, 10, (count,), generator=generator))


def train_loop_fn(loader, model, optimizer, loss_fn, epoch):
    tracker = _RateTracker()
    model.train()
    for step, (data, target) in enumerate(loader):
        optimizer.zero_grad()
        loss = loss_fn(model(data), target)
        loss.backward()
        _optimizer_step(optimizer)
        tracker.add(data.size(0))
        if step % 2 == 0:
            _print_training_update(torch.device("neuron"), step, loss.item(), tracker.rate(), tracker.global_rate(), epoch)


def main():
    device = torch.device("neuron")
    torch.manual_seed(0)
    model = TinyResNet().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    train_loader = _DeviceLoader(DataLoader(synthetic_images(), batch_size=8), device)
    for epoch in range(1, 3):
        train_loop_fn(train_loader, model, optimizer, loss_fn, epoch)
        print(f"epoch {epoch} finished at {datetime.datetime.now().strftime('%H:%M:%S')}")


if __name__ == "__main__":
    main()
