"""CUDA mixed-precision training with `torch.cuda.amp` and `GradScaler` (neuron-migrate e2e input)."""

import argparse

import torch
import torch.nn.functional as F
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 1)).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.cuda.amp.GradScaler()
    target = torch.randn(8, 1)
    for step in range(args.steps):
        x = torch.randn(8, 16).cuda(non_blocking=True)
        y = target.cuda()
        optimizer.zero_grad(set_to_none=True)
        with torch.cuda.amp.autocast():
            out = model(x)
            loss = F.mse_loss(out.float(), y)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        if step % 2 == 0:
            print(f"step {step} loss {loss.item():.4f} scale {scaler.get_scale():.0f}")
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    assert torch.isfinite(loss).item(), "training diverged"


if __name__ == "__main__":
    main()
