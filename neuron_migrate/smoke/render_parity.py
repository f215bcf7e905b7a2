"""The text lines of `--compare-cpu` (parity with the CPU) and `--parity` (N ranks against 1).

Pure functions of the report; no torch.
"""

from __future__ import annotations

from typing import Any

from neuron_migrate.smoke.report import ParityStep, SmokeReport


def parity_lines(report: SmokeReport) -> list[str]:
    """`--compare-cpu`: the verdict, the tolerance, and each compared value."""
    parity = report.parity
    if parity is None:
        return []
    head = f"parity with the CPU: {parity.status} ({parity.precision}, rtol={parity.rtol:g}, atol={parity.atol:g})"
    lines = [head]
    if parity.message:
        lines.append(f"  {parity.message}")
    lines += [_step_line(step, ("neuron", "cpu")) for step in parity.steps]
    return lines


def rank_parity_lines(report: SmokeReport) -> list[str]:
    """`--parity`: the verdict, what was compared and how close, and each compared value."""
    parity = report.rank_parity
    if parity is None:
        return []
    ranks = f"every one of {parity.nproc} ranks" if parity.ranks == "each" else f"the mean of {parity.nproc} ranks"
    tolerance = f"{parity.precision}, rtol={parity.rtol:g}, atol={parity.atol:g}"
    lines = [f"parity with 1 rank: {parity.status} ({ranks}; {parity.value}; {tolerance})"]
    if parity.message:
        lines.append(f"  {parity.message}")
    for step in parity.steps:
        who = f"rank {step.rank}" if step.rank is not None else "mean"
        lines.append(_step_line(step, (who, "1 rank")))
    return lines


def _step_line(step: ParityStep, names: tuple[str, str]) -> str:
    mark = "ok" if step.ok else "MISMATCH"
    pair = f"{names[0]} {_number(step.value)}, {names[1]} {_number(step.reference)}"
    return f"  {step.label}: max |diff| {step.max_abs_diff:.3e} {mark} ({pair})"


def _number(value: Any) -> str:
    return "-" if value is None else f"{value:.6g}"
