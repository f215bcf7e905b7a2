# Single-device MNIST-style MLP: xla_device, mark_step, xm.optimizer_step, met.metrics_report.
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met
from torch.utils.data import DataLoader, TensorDataset


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
    device = xm.xla_device()
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
            xm.optimizer_step(optimizer)
            xm.mark_step()
            if step % 2 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
    print(met.metrics_report())


if __name__ == "__main__":
    train()
