"""CUDA inference with `torch.compile`, a checkpoint loaded to the CPU, and bf16 autocast
(neuron-migrate e2e input)."""

import argparse
import os
import tempfile

import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.head = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=3)
    args = parser.parse_args()

    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "classifier.pt")
        torch.save(Classifier().state_dict(), path)
        state = torch.load(path, map_location="cpu")
    model = Classifier().cuda().eval()
    model.load_state_dict(state)
    compiled = torch.compile(model, mode="max-autotune")

    with torch.inference_mode():
        for i in range(args.batches):
            batch = torch.randn(4, 32, device="cuda")
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                logits = compiled(batch)
            predictions = logits.float().argmax(dim=-1)
            print(f"batch {i}: {predictions.tolist()}")
    if torch.cuda.is_available():
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
