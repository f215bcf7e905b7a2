"""Step time of the gradient averaging `--fix` writes for `xm.optimizer_step`, against DDP.

Run from the repository root (not collected by pytest; `bench.py` runs it as one of its sections):

    python3 tests/bench/grad_averaging.py              # 2 CPU ranks (gloo), 160 parameter tensors

Each rank builds the same model (80 `Linear(64, 64)` layers, 160 tensors; the helper's copy from
a different seed on each rank) and times forward, backward and step, averaging with (a)
`_optimizer_step` exactly as the fix writes it into a file, and (b) `DistributedDataParallel`
around the same model, the two alternating step by step. Prints one JSON line: milliseconds per
step for each, their ratio, and whether the ranks' parameters agree at the end. The target is
a ratio of at most 1.5.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from neuron_migrate.analysis.values import HelperRequest
from neuron_migrate.checks.helpers import helper_text

TARGET_RATIO = 1.5


def _helper() -> Any:
    """`_optimizer_step` as `--fix` writes it, defined in a namespace where `dist` is torch's."""
    namespace: dict[str, Any] = {"dist": dist, "torch": torch}
    source = helper_text(HelperRequest("optimizer_step", "dist"))
    assert source is not None
    exec(compile(source, "<_optimizer_step>", "exec"), namespace)
    return namespace["_optimizer_step"]


def _model(layers: int) -> torch.nn.Module:
    return torch.nn.Sequential(*(torch.nn.Linear(64, 64) for _ in range(layers)))


def _timed(step: Any, model: torch.nn.Module, x: torch.Tensor) -> float:
    start = time.perf_counter()
    model(x).square().mean().backward()
    step()
    return time.perf_counter() - start


def _rank(rank: int, world: int, port: int, layers: int, steps: int, out: Any) -> None:
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    optimizer_step = _helper()
    torch.manual_seed(rank)  # unseeded ranks differ: the helper copies rank 0's parameters first
    model = _model(layers)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    torch.manual_seed(0)
    ddp = torch.nn.parallel.DistributedDataParallel(_model(layers))
    ddp_optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)

    def helper_step() -> None:
        optimizer_step(optimizer)
        optimizer.zero_grad()

    def ddp_step() -> None:
        ddp_optimizer.step()
        ddp_optimizer.zero_grad()

    # The two alternate step by step, so both see the same load on a shared machine.
    data = torch.Generator().manual_seed(rank)
    helper_times, ddp_times = [], []
    for _ in range(steps):
        x = torch.randn(32, 64, generator=data)
        helper_times.append(_timed(helper_step, model, x))
        ddp_times.append(_timed(ddp_step, ddp, x))
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    gathered = [torch.empty_like(params) for _ in range(world)]
    dist.all_gather(gathered, params)
    if rank == 0:
        warm = steps // 5  # the first steps build buffers and connections
        out.put(
            {
                "helper_ms": 1000 * statistics.median(helper_times[warm:]),
                "ddp_ms": 1000 * statistics.median(ddp_times[warm:]),
                "ranks_agree": all(torch.equal(gathered[0], g) for g in gathered),
                "tensors": len(list(model.parameters())),
            }
        )
    dist.destroy_process_group()


def measure(layers: int = 80, steps: int = 50, world: int = 2) -> dict[str, Any]:
    """Run `world` ranks and return rank 0's figures, with the ratio and whether it meets the target."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    context = mp.get_context("spawn")
    queue = context.SimpleQueue()
    mp.start_processes(_rank, args=(world, port, layers, steps, queue), nprocs=world, start_method="spawn")
    result = queue.get()
    result["ratio"] = result["helper_ms"] / result["ddp_ms"]
    result["meets_target"] = result["ratio"] <= TARGET_RATIO
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=80)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    result = measure(args.layers, args.steps)
    print(json.dumps(result))
    return 0 if result["meets_target"] and result["ranks_agree"] else 1


if __name__ == "__main__":
    sys.exit(main())
