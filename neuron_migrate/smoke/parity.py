"""`--compare-cpu`: compare the losses and final outputs of two seeded runs. No torch."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from neuron_migrate.smoke.report import Parity, ParityStep
from neuron_migrate.smoke.sites import Site

# (rtol, atol): bf16 has 8 bits of mantissa, so a couple of steps drift by about 1e-2.
LOW_PRECISION_TOL = (5e-2, 1e-2)
FP32_TOL = (1e-3, 1e-5)


def close(a: float, b: float, rtol: float, atol: float) -> bool:
    """|a - b| <= atol + rtol * |b|, with NaN equal only to NaN."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= atol + rtol * abs(b)


def compare(main: Mapping[str, Any], reference: Mapping[str, Any] | None) -> Parity:
    """Compare rank 0 of the `neuron` run with rank 0 of the CPU reference run."""
    low = bool(main.get("low_precision"))
    rtol, atol = LOW_PRECISION_TOL if low else FP32_TOL
    precision = "bf16/fp16" if low else "fp32"
    if reference is None or reference.get("status") != "ok":
        reason = _failure_text(reference)
        return Parity("skipped", precision, rtol, atol, message=f"the CPU reference run {reason}")
    steps = [*_loss_steps(main, reference, rtol, atol)]
    output = _output_step(main.get("output"), reference.get("output"), rtol, atol)
    if output is not None:
        steps.append(output)
    message = _length_mismatch(main, reference)
    if not steps and not message:
        return Parity(
            "skipped",
            precision,
            rtol,
            atol,
            message="no loss and no module output to compare",
        )
    ok = not message and all(step.ok for step in steps)
    return Parity("ok" if ok else "mismatch", precision, rtol, atol, tuple(steps), message)


def _failure_text(reference: Mapping[str, Any] | None) -> str:
    if reference is None:
        return "did not run"
    failure = reference.get("failure") or {}
    return f"failed: {failure.get('type', '')}: {failure.get('message', '')}".rstrip(": ")


def _loss_steps(main: Mapping[str, Any], reference: Mapping[str, Any], rtol: float, atol: float) -> list[ParityStep]:
    steps = []
    pairs = zip(main.get("losses", ()), reference.get("losses", ()))
    for number, (ours, theirs) in enumerate(pairs, start=1):
        a, b = float(ours["value"]), float(theirs["value"])
        site = Site.from_json(ours["site"]) if ours.get("site") else None
        steps.append(ParityStep(f"loss {number}", a, b, abs(a - b), close(a, b, rtol, atol), site))
    return steps


def _output_step(
    ours: Mapping[str, Any] | None,
    theirs: Mapping[str, Any] | None,
    rtol: float,
    atol: float,
) -> ParityStep | None:
    if not ours or not theirs:
        return None
    a: Sequence[float] = ours["values"]
    b: Sequence[float] = theirs["values"]
    diffs = [abs(x - y) for x, y in zip(a, b)]
    ok = len(a) == len(b) and all(close(x, y, rtol, atol) for x, y in zip(a, b))
    site = Site.from_json(ours["site"]) if ours.get("site") else None
    first_a, first_b = (a[0] if a else None), (b[0] if b else None)
    return ParityStep("output", first_a, first_b, max(diffs, default=0.0), ok, site)


def _length_mismatch(main: Mapping[str, Any], reference: Mapping[str, Any]) -> str:
    ours, theirs = len(main.get("losses", ())), len(reference.get("losses", ()))
    if ours != theirs:
        return f"the runs passed {ours} and {theirs} losses to `backward()`"
    return ""
