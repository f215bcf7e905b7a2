"""Run a migrated script as one smoke rank and record what its optimizer did (not a test module).

Usage, as the script `run_smoke` runs: `dist_probe.py OUT_DIR [--plain] SCRIPT [ARGS...]`.
`--plain` removes torchrun's variables first, as when the script is started with plain `python`.
Writes `OUT_DIR/<RANK or plain>.json`: after each optimizer step, the world size of the default
process group (None without one) and every parameter's values.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
from pathlib import Path
from typing import Any

import torch.distributed as dist
from torch.optim.optimizer import register_optimizer_step_post_hook

TORCHRUN_VARIABLES = (
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
)


def record(steps: list[dict[str, Any]]) -> Any:
    def hook(optimizer: Any, args: Any, kwargs: Any) -> None:
        params = [p.detach().cpu().reshape(-1).tolist() for g in optimizer.param_groups for p in g["params"]]
        world = dist.get_world_size() if dist.is_initialized() else None
        steps.append({"world": world, "params": params})

    return hook


def main() -> None:
    out, *rest = sys.argv[1:]
    name = os.environ.get("RANK", "0")
    if rest[0] == "--plain":
        rest = rest[1:]
        name = "plain"
        for variable in TORCHRUN_VARIABLES:
            os.environ.pop(variable, None)
    steps: list[dict[str, Any]] = []
    register_optimizer_step_post_hook(record(steps))
    sys.argv = rest
    sys.path[0] = str(Path(rest[0]).parent)
    try:
        runpy.run_path(rest[0], run_name="__main__")
    finally:
        Path(out, f"{name}.json").write_text(json.dumps({"steps": steps}))


main()
