# Step traces and a profiler server around a training loop, with a detached capture on one step.
import tempfile

import torch
import torch.nn as nn
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
