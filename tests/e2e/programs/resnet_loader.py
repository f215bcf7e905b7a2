# ResNet-style model with MpDeviceLoader, optimizer_step, RateTracker and test_utils logging.
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.test.test_utils as test_utils
from torch.utils.data import DataLoader, TensorDataset


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
    tracker = xm.RateTracker()
    model.train()
    for step, (data, target) in enumerate(loader):
        optimizer.zero_grad()
        loss = loss_fn(model(data), target)
        loss.backward()
        xm.optimizer_step(optimizer)
        tracker.add(data.size(0))
        if step % 2 == 0:
            test_utils.print_training_update(xm.xla_device(), step, loss.item(), tracker.rate(), tracker.global_rate(), epoch)


def main():
    device = xm.xla_device()
    torch.manual_seed(0)
    model = TinyResNet().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    train_loader = pl.MpDeviceLoader(DataLoader(synthetic_images(), batch_size=8), device)
    for epoch in range(1, 3):
        train_loop_fn(train_loader, model, optimizer, loss_fn, epoch)
        print(f"epoch {epoch} finished at {test_utils.now()}")


if __name__ == "__main__":
    main()
