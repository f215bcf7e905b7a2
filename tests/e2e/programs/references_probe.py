# Issue 37's constructs: an availability probe returning (device, backend) tested later, a referenced
# `checkpoint_module`, an RNG state kept in a dict and restored, and a process group started only
# behind a flag one call below the launched function, with `xm.optimizer_step` on the other path.
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr
from torch_xla.distributed.fsdp import checkpoint_module


def get_device():
    try:
        import torch_xla.core.xla_model as xm

        return xm.xla_device(), "xla"
    except ImportError:
        return torch.device("cpu"), "cpu"


def build(width, checkpointed):
    wrap = checkpoint_module if checkpointed else (lambda m: m)
    blocks = [wrap(nn.Sequential(nn.Linear(width, width), nn.Tanh())) for _ in range(2)]
    return nn.Sequential(*blocks, nn.Linear(width, 1))


def train(flags):
    if flags.ddp:
        dist.init_process_group("xla", init_method="xla://")
    device, backend = get_device()
    if backend != "xla":
        raise SystemExit("this recipe trains on an accelerator")
    torch.manual_seed(0)
    model = build(8, flags.checkpoint).to(device)
    if flags.ddp:
        model = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(100 + xr.global_ordinal())  # each rank its own batches
    state = {"step": 0, "rng": xm.get_rng_state()}
    for step in range(4):
        x = torch.randn(16, 8, generator=data).to(device)
        noise = torch.randn(16, 1, device=device)  # drawn from the device generator
        loss = nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True) + 0.01 * noise)
        optimizer.zero_grad()
        loss.backward()
        if flags.ddp:
            optimizer.step()
        else:
            xm.optimizer_step(optimizer)
        state = {"step": step + 1, "rng": xm.get_rng_state()}
    xm.set_rng_state(state["rng"])  # resume where the last step left the generator
    xm.master_print(f"done after {state['step']} steps, loss {loss.item():.4f}")


def _mp_fn(index, flags):
    train(flags)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--ddp", action="store_true")
    parser.add_argument("--no-checkpoint", dest="checkpoint", action="store_false")
    xmp.spawn(_mp_fn, args=(parser.parse_known_args()[0],))
