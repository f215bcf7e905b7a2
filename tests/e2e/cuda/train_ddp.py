"""torchrun + DistributedDataParallel on NCCL (neuron-migrate e2e input).

Launched with `torchrun --nproc_per_node=N train_ddp.py`; run with plain `python` it trains in one
process without a process group.
"""

import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def setup() -> tuple[int, int, torch.device]:
    if "WORLD_SIZE" not in os.environ:
        return 0, 1, torch.device("cuda" if torch.cuda.is_available() else "cpu")
    os.environ.setdefault("NCCL_ASYNC_ERROR_HANDLING", "1")
    dist.init_process_group(backend="nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    return dist.get_rank(), dist.get_world_size(), torch.device("cuda", local_rank)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    rank, world_size, device = setup()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
    if world_size > 1 or dist.is_initialized():
        model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    dataset = TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if rank == 0:
            print(f"epoch {epoch} loss {loss.item():.4f} on {world_size} rank(s)")
    if dist.is_initialized():
        weight = next(model.parameters()).detach().sum().reshape(1)
        gathered = [torch.zeros_like(weight) for _ in range(world_size)]
        dist.all_gather(gathered, weight)
        assert all(torch.allclose(g, gathered[0]) for g in gathered), "DDP replicas diverged"
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
