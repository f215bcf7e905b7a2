"""What the runner tells each smoke child process. Imports no torch."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class ChildConfig:
    """One smoke child: which script to run, how, and where to write its rank report."""

    script: str  # absolute path
    args: tuple[str, ...]
    device: str  # "neuron" (real torch_neuronx) or "emulate"
    steps: int
    timeout_s: float
    report_dir: str
    reference: bool = False  # the CPU reference run of --compare-cpu
    seed: int = 0
    device_count: int = 1
    user_roots: tuple[str, ...] = ()
    same_seed: bool = False  # `--parity`: every rank gets `seed` (else rank N gets seed + N)
    parity_value: str = ""  # `--parity-value`: the variable read at each optimizer step

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ChildConfig:
        data = json.loads(text)
        data["args"] = tuple(data["args"])
        data["user_roots"] = tuple(data.get("user_roots", ()))
        return cls(**data)


def rank_report_name(rank: int) -> str:
    """File name of one rank's JSON report inside `report_dir`."""
    return f"rank{rank}.json"
