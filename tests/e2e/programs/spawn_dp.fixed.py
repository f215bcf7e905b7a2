# xmp.spawn data parallel without DDP: xm.optimizer_step all-reduces the gradients.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler
import os
import torch.distributed as dist


def _optimizer_step(optimizer, **step_args):
    """Average gradients over the default process group, then step (as torch_xla's optimizer_step did)."""
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        world_size = dist.get_world_size()
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param.grad is not None:
                    dist.all_reduce(param.grad)
                    param.grad.div_(world_size)
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
