"""The ZeRO-1 optimizer `--fix` writes for torch_xla's, on 2 CPU ranks (gloo).

Its `step` averages the gradients as `_optimizer_step` does, in flat buckets (one all-reduce for
a model of small tensors, not one per tensor), and the ranks end with the same parameters, those
of a plain optimizer stepping on the averaged gradients.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest

from neuron_migrate.analysis.values import HelperRequest
from neuron_migrate.checks.helpers import helper_text

torch = pytest.importorskip("torch")

LAYERS = 12  # 24 parameter tensors, well under one 25 MB bucket


def _helpers() -> dict[str, Any]:
    """`_ZeroRedundancyOptimizer` and `_average_gradients` as `--fix` writes them."""
    import torch.distributed.optim as dist_optim

    namespace: dict[str, Any] = {"torch": torch, "dist_optim": dist_optim}
    for request in (
        HelperRequest("average_gradients", "torch"),
        HelperRequest("zero_redundancy_optimizer", "dist_optim"),
    ):
        source = helper_text(request)
        assert source is not None
        exec(compile(source, f"<{request.name}>", "exec"), namespace)
    return namespace


def _model() -> Any:
    torch.manual_seed(0)
    return torch.nn.Sequential(*(torch.nn.Linear(8, 8) for _ in range(LAYERS)))


def _rank(rank: int, world: int, port: int, out: Any) -> None:
    import os

    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    helpers = _helpers()
    model, reference = _model(), _model()
    optimizer = helpers["_ZeroRedundancyOptimizer"](model.parameters(), torch.optim.SGD, lr=0.1, grad_clipping=False)
    plain = torch.optim.SGD(reference.parameters(), lr=0.1)
    calls = []
    all_reduce = dist.all_reduce

    def counted(tensor: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(tensor.numel())
        return all_reduce(tensor, *args, **kwargs)

    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(rank))  # each rank its own data
    model(x).square().mean().backward()
    dist.all_reduce = counted
    optimizer.step()
    dist.all_reduce = all_reduce
    reference(x).square().mean().backward()
    for param in reference.parameters():  # what averaging means, one tensor at a time
        all_reduce(param.grad)
        param.grad.div_(world)
    plain.step()
    mine = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    expected = torch.cat([p.detach().reshape(-1) for p in reference.parameters()])
    gathered = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(gathered, mine)
    if rank == 0:
        out.put({"all_reduces": len(calls), "agree": all(torch.equal(gathered[0], g) for g in gathered)})
        out.put({"matches_plain": bool(torch.allclose(mine, expected, atol=1e-6))})
    dist.barrier()  # no rank closes its gloo connections while another still reads the last gather
    dist.destroy_process_group()


@pytest.mark.slow
def test_zero1_step_averages_in_one_bucket_and_the_ranks_agree() -> None:
    import torch.multiprocessing as mp

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    queue = mp.get_context("spawn").SimpleQueue()
    mp.start_processes(_rank, args=(2, port, queue), nprocs=2, start_method="spawn")
    counts, matches = queue.get(), queue.get()
    assert counts == {"all_reduces": 1, "agree": True}
    assert matches == {"matches_plain": True}
