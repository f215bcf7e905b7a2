"""Applying fixes is linear (or n log n) in the number of findings.

Each case runs in a subprocess with a generous wall-clock bound (and without the memory budget
that refuses files this large, see engine/budget.py): the quadratic versions took
8.6 s for 10k `xm.mark_step()` lines and did not finish 100k; `FixContext.name_for` walked every
module binding for every match.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_RUN = textwrap.dedent(
    """
    import sys
    from neuron_migrate.engine import planning
    from neuron_migrate.engine.pipeline import check_source
    from neuron_migrate.settings import Settings

    planning.refusals = lambda text, fix: (None, None)  # the budget refuses these files; time is measured here
    text = sys.stdin.read()
    result = check_source(text, "big.py", Settings(select=("NM",), fix=True))
    assert result.fixed_source is not None
    print(len(result.fixed), len(result.findings), len(result.fixed_source.splitlines()))
    """
)


def _fix_in_subprocess(text: str, limit_s: float) -> list[int]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _RUN], input=text, capture_output=True, text=True, env=env, timeout=limit_s, check=True
    )
    return [int(n) for n in done.stdout.split()]


@pytest.mark.slow
def test_many_deleted_statements_in_one_block() -> None:
    n = 30_000  # quadratic: about 80 s (8.6 s at 10k); linear: a few seconds
    text = "import torch_xla.core.xla_model as xm\n\n\ndef step():\n" + "    xm.mark_step()\n" * n
    fixed, remaining, lines = _fix_in_subprocess(text, limit_s=60)
    assert fixed == n + 1  # every call and the import
    assert remaining == 0
    assert lines == 3  # a blank line, `def step():` and the `pass` that keeps the block valid


@pytest.mark.slow
def test_many_matches_with_many_module_bindings() -> None:
    n = 15_000  # name_for once per match over every binding: about 2 x 10^8 steps
    text = "import torch\nimport torch_xla.core.xla_model as xm\n"
    text += "".join(f"v{i} = {i}\n" for i in range(n))
    text += "".join(f"d{i} = xm.xla_device()\n" for i in range(n))
    fixed, remaining, _ = _fix_in_subprocess(text, limit_s=60)
    assert fixed == n + 1
    assert remaining == 0
