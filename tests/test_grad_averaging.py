"""The gradient averaging `--fix` writes for `xm.optimizer_step`, on 2 CPU ranks against DDP.

`tests/bench/grad_averaging.py` builds each rank's model from a different seed and times
forward, backward and step with `_optimizer_step` (as the fix writes it) and with DDP on the
same model: the ranks must end with the same parameters, and a step must take at most 1.5x
DDP's (one all-reduce per parameter tensor took 13x).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).with_name("bench")))

import grad_averaging


@pytest.mark.slow
def test_bucketed_averaging_agrees_across_ranks_at_ddp_speed() -> None:
    result = grad_averaging.measure(layers=80, steps=40)
    assert result["tensors"] == 160
    assert result["ranks_agree"], "unseeded ranks must end with rank 0's model"
    assert result["ratio"] <= grad_averaging.TARGET_RATIO, result
