# Eager-mode script: eager_mode(True), torch_xla.device(), device_type checks and sync calls.
import torch
import torch.nn as nn


def main():
    device = torch.device("neuron")
    if getattr(torch.accelerator.current_accelerator(), "type", None) == "neuron":
        print("running on Trainium")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(0)
    for step in range(3):
        inputs = torch.randn(6, 4, generator=generator).to(device)
        labels = torch.randint(0, 3, (6,), generator=generator).to(device)
        loss = nn.functional.cross_entropy(model(inputs), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    torch.accelerator.synchronize()
    print("final loss", loss.item())


if __name__ == "__main__":
    main()
