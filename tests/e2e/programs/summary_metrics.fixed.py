# Training that logs through torch_xla's summary helper (with its XLA metrics) and prints metric reports.
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


def _write_to_summary(summary_writer, global_step=None, dict_to_write={}, write_xla_metrics=False):
    """Add each value as a scalar, as torch_xla's `test_utils.write_to_summary` did."""
    if summary_writer is None:
        return
    for key, value in dict_to_write.items():
        summary_writer.add_scalar(key, value, global_step)


class ScalarLog:
    """What a SummaryWriter is to the helper: scalars by tag and step, and flushes."""

    def __init__(self):
        self.rows = []
        self.flushes = 0

    def add_scalar(self, tag, value, global_step=None):
        self.rows.append((tag, float(value), global_step))

    def flush(self):
        self.flushes += 1


def main():
    device = torch.device("neuron")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 1)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    writer = ScalarLog()
    generator = torch.Generator().manual_seed(1)
    for step in range(6):
        inputs = torch.randn(8, 6, generator=generator).to(device)
        loss = nn.functional.mse_loss(model(inputs), inputs[:, :1] * 2)
        optimizer.zero_grad()
        loss.backward()
        _optimizer_step(optimizer)
        _write_to_summary(writer, step, dict_to_write={"train/loss": loss.item()}, write_xla_metrics=True)
        assert any(tag == "train/loss" and at == step for tag, _, at in writer.rows), writer.rows


if __name__ == "__main__":
    main()
