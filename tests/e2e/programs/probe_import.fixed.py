# A script that runs with or without torch_xla: it probes the import and falls back to the CPU.
import torch
import torch.nn as nn

device = torch.device("neuron")


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    generator = torch.Generator().manual_seed(3)
    for step in range(4):
        inputs = torch.randn(5, 4, generator=generator).to(device)
        loss = (model(inputs) - inputs).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} on {device}: {loss.item():.4f}")


if __name__ == "__main__":
    main()
