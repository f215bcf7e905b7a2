# Training that logs through torch_xla's summary helper (with its XLA metrics) and prints metric reports.
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met
import torch_xla.test.test_utils as test_utils


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
    device = xm.xla_device()
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
        xm.optimizer_step(optimizer)
        test_utils.write_to_summary(writer, step, dict_to_write={"train/loss": loss.item()}, write_xla_metrics=True)
        assert any(tag == "train/loss" and at == step for tag, _, at in writer.rows), writer.rows
        if step % 2 == 0:
            xm.master_print(met.metrics_report(), flush=True)
    print(met.short_metrics_report())


if __name__ == "__main__":
    main()
