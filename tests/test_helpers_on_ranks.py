"""Helpers the fixes write for torch_xla collectives, run under torchrun on 4 CPU ranks (gloo).

Each helper's text is taken from `checks/helpers.py` as a fix writes it into a file, and its
results are compared with what torch_xla computed: replica-group gradient sums scaled by the
world size, a broadcast from a chosen root, and a differentiable all_gather whose backward hands
each rank its own slice of the gradient.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from neuron_migrate.analysis.values import HelperRequest
from neuron_migrate.checks.helpers import helper_text

pytest.importorskip("torch")

# helper -> the name the file has for the module it is written against
HELPERS = {"reduce_gradients_in_groups": "dist", "collective_broadcast": "torch", "all_gather_grad": "torch"}

PROGRAM = """
import json, os, sys
import torch
import torch.distributed as dist

{helpers}

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
seen = {{"rank": rank, "world": world}}

param = torch.nn.Parameter(torch.zeros(3))
param.grad = torch.full((3,), float(rank + 1))
optimizer = torch.optim.SGD([param], lr=0.1)
_reduce_gradients_in_groups(optimizer, [[0, 1], [2, 3]])
seen["grouped"] = param.grad.tolist()
_reduce_gradients_in_groups(optimizer, [[0, 1], [2, 3]])  # the groups are made once
seen["grouped_twice"] = param.grad.tolist()
param.grad = torch.full((3,), float(rank + 1))
_reduce_gradients_in_groups(optimizer, dist.new_group([0, 1, 2, 3]))
seen["process_group"] = param.grad.tolist()

tensors = [torch.full((2,), float(rank)), torch.full((1,), float(10 * rank))]
_collective_broadcast(tensors, root_ordinal=1)
seen["broadcast"] = [t.tolist() for t in tensors]

value = torch.full((2,), float(rank), requires_grad=True)
gathered = _all_gather_with_grad(value)
weights = torch.arange(2.0 * world)
(gathered * weights).sum().backward()
seen["gathered"] = gathered.tolist()
seen["gather_grad"] = value.grad.tolist()

with open(os.path.join(sys.argv[1], f"rank{{rank}}.json"), "w") as out:
    json.dump(seen, out)
dist.destroy_process_group()
"""


@pytest.mark.slow
def test_collective_helpers_match_torch_xla_on_four_ranks(tmp_path: Path) -> None:
    texts = [helper_text(HelperRequest(name, module)) for name, module in HELPERS.items()]
    assert all(texts)
    script = tmp_path / "helpers_program.py"
    script.write_text(PROGRAM.format(helpers="\n\n".join(t for t in texts if t)), encoding="utf-8")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "4",
            str(script),
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=240,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    seen = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(4)]
    for rank, got in enumerate(seen):
        # torch_xla: the sum over the rank's replica group, times 1 / world size (not the group's).
        group_sum = 1 + 2 if rank < 2 else 3 + 4
        assert got["grouped"] == [group_sum / 4] * 3
        assert got["grouped_twice"] == [group_sum / 8] * 3  # the same groups, reused
        assert got["process_group"] == [(1 + 2 + 3 + 4) / 4] * 3
        assert got["broadcast"] == [[1.0, 1.0], [10.0]]
        assert got["gathered"] == [0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
        assert got["gather_grad"] == [2.0 * rank, 2.0 * rank + 1]
