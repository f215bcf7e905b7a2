"""Single-device CUDA training: a small classifier on synthetic data (neuron-migrate e2e input)."""

import argparse

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batches", type=int, default=4)
    args = parser.parse_args()

    torch.backends.cudnn.benchmark = True
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(0)
        print(f"training on {torch.cuda.get_device_name(0)}")

    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    data = torch.randn(args.batches * 8, 16)
    labels = torch.randint(0, 4, (args.batches * 8,))
    for epoch in range(args.epochs):
        for i in range(args.batches):
            x = data[i * 8 : (i + 1) * 8].to(device, non_blocking=True)
            y = labels[i * 8 : (i + 1) * 8].to(device)
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
            print(f"peak memory {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB")
        print(f"epoch {epoch} loss {loss.item():.4f}")
    assert torch.isfinite(loss).item(), "training diverged"


if __name__ == "__main__":
    main()
