"""Likely causes that point at the blocking lines: leftover torch_xla uses and "xla" strings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from neuron_migrate.smoke.assemble import (
    Launch,
    RankOutcome,
    ReportContext,
    build_report,
)
from neuron_migrate.smoke.causes import likely_cause

NO_TORCH_XLA = ("ModuleNotFoundError", "No module named 'torch_xla'")
NOT_LINKED = ("RuntimeError", "PyTorch is not linked with support for xla devices")


def failed_run(tmp_path: Path, error: tuple[str, str], line: int, traceback: str = "") -> Any:
    script = tmp_path / "train.py"
    failure = {
        "type": error[0], "message": error[1], "traceback": traceback,
        "site": {"path": str(script), "line": line, "function": "<module>", "column": 1, "code": ""},
    }  # fmt: skip
    data = {
        "status": "failed",
        "failure": failure,
        "ops": [],
        "events": [],
        "notes": [],
    }
    context = ReportContext(script, "emulated", "2.14", 1, 300.0, tmp_path)
    report = build_report(context, Launch((RankOutcome(0, 1, data),), False, 1.0), None)
    assert report.failure is not None
    return report.failure.likely_cause


def test_after_fix_the_cause_lists_the_findings_fix_left(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(
        "import torch\nimport torch_xla.core.xla_model as xm\n\nxm.collective_broadcast([torch.zeros(1)], groups=[[0, 1]])\n"
    )
    cause = failed_run(tmp_path, NO_TORCH_XLA, 2)
    assert cause.startswith("`--fix` left `torch_xla` in use (train.py:2 NM601, train.py:4 NM306)")
    assert "run `neuron-migrate --fix`" not in cause


def test_before_fix_the_cause_still_says_run_fix_and_where(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import torch_xla.core.xla_model as xm\n\nxm.mark_step()\n")
    cause = failed_run(tmp_path, NO_TORCH_XLA, 1)
    assert cause == (
        "The script still uses `torch_xla` (train.py:1 NM601, train.py:3 NM201); run `neuron-migrate --fix` on it first"
    )


def test_not_linked_with_xla_points_at_the_xla_string(tmp_path: Path) -> None:
    (tmp_path / "helpers.py").write_text('import torch\n\n\ndef device():\n    return torch.device("xla:0")\n')
    (tmp_path / "train.py").write_text(
        'import torch\nfrom helpers import device\n\nDEVICE = "xla"\nx = torch.ones(1).to(device())\n'
    )
    traceback = (
        f'  File "{tmp_path / "train.py"}", line 5, in <module>\n'
        f'  File "{tmp_path / "helpers.py"}", line 5, in device\n'
        '  File "/usr/lib/python3/site-packages/torch/x.py", line 1, in f\n'
    )
    cause = failed_run(tmp_path, NOT_LINKED, 5, traceback)
    assert cause == (
        'The script still asks for the `xla` device ("xla" at train.py:4, helpers.py:5); use `torch.device("neuron")`'
    )


def test_without_a_blocking_line_the_generic_cause_stays(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import torch\nimport mylib  # imports torch_xla itself\n")
    assert failed_run(tmp_path, NO_TORCH_XLA, 2) == likely_cause(*NO_TORCH_XLA)
    assert failed_run(tmp_path, NOT_LINKED, 2) == likely_cause(*NOT_LINKED)
    assert "`xla` device" in likely_cause(*NOT_LINKED)
