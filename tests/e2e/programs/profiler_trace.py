# Step traces and a profiler server around a training loop, with a detached capture on one step.
import tempfile

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.debug.profiler as xp

PORT = 9229


def train(device, logdir):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 20), nn.GELU(), nn.Linear(20, 3)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    generator = torch.Generator().manual_seed(2)
    for step in range(5):
        inputs = torch.randn(16, 10, generator=generator).to(device)
        labels = torch.randint(0, 3, (16,), generator=generator).to(device)
        with xp.StepTrace("train_step", step_num=step):
            with xp.Trace("forward"):
                loss = nn.functional.cross_entropy(model(inputs), labels)
            with xp.Trace("backward", sync=False):
                optimizer.zero_grad()
                loss.backward()
            xm.optimizer_step(optimizer)
        if step == 1:
            xp.trace_detached(f"localhost:{PORT}", logdir, duration_ms=500)
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    server = xp.start_server(PORT)
    train(xm.xla_device(), tempfile.mkdtemp(prefix="profile-"))
