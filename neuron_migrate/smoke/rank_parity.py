"""`--parity`: the N-rank run of a script against its 1-rank run, step by step. No torch.

AWS checks distributed code by running it on the CPU with gloo, then on Neuron, and comparing
the results rank by rank. Parity applies the same check across world sizes: a tensor-parallel
or sequence-parallel plan must give every rank the numbers one rank computes alone (`each`),
and data parallelism over slices of one global batch must give their mean (`mean`). Both runs
seed every rank alike, so they draw the same numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from neuron_migrate.smoke.parity import LOW_PRECISION_TOL, close
from neuron_migrate.smoke.report import OK, ParityStep, RankParity
from neuron_migrate.smoke.sites import Site

EACH = "each"
MEAN = "mean"
# Ranks add partial sums in another order than one rank does: float32 rounding, about 1e-7
# relative per reduction, grows over a few optimizer steps; a wrong plan is off by 1e-3 or more.
FP32_TOL = (1e-4, 1e-6)


@dataclass(frozen=True)
class ParityRequest:
    """What `--parity` compares and how close it must be (the CLI flags)."""

    ranks: str = EACH  # each | mean
    value: str = ""  # a variable read at each optimizer step; "" compares losses and outputs
    rtol: float | None = None  # None: by precision (FP32_TOL, or LOW_PRECISION_TOL for bf16/fp16)
    atol: float | None = None


@dataclass(frozen=True)
class _Series:
    """One rank's values to compare: a label, the numbers and the user line, per step."""

    labels: tuple[str, ...]
    values: tuple[tuple[float, ...], ...]
    sites: tuple[Site | None, ...]
    problem: str = ""


def compare_ranks(
    multi: Sequence[Mapping[str, Any] | None],
    single: Mapping[str, Any] | None,
    request: ParityRequest,
) -> RankParity:
    """Compare every rank of the N-rank run (`multi`, rank order) with the 1-rank run."""
    nproc = len(multi)
    low = any(bool(d.get("low_precision")) for d in (*multi, single) if d)
    default = LOW_PRECISION_TOL if low else FP32_TOL
    rtol = default[0] if request.rtol is None else request.rtol
    atol = default[1] if request.atol is None else request.atol
    result = RankParity(
        "unproved", nproc, request.ranks, _what(request), "bf16/fp16" if low else "fp32", rtol, atol
    )  # fmt: skip
    why = _unfinished(multi, single, nproc)
    if why:
        return replace(result, message=why)
    assert single is not None
    ours = [_series(d, request) for d in multi if d is not None]
    theirs = _series(single, request)
    why = next((s.problem for s in (theirs, *ours) if s.problem), "") or _nothing(theirs, request)
    if why:
        return replace(result, message=why)
    why = _lengths(ours, theirs)
    if why:
        return replace(result, status="mismatch", message=why)
    steps = tuple(_step(i, ours, theirs, request.ranks, rtol, atol) for i in range(len(theirs.labels)))
    status = OK if all(s.ok for s in steps) else "mismatch"
    return replace(result, status=status, steps=steps)


def _what(request: ParityRequest) -> str:
    if request.value:
        return f"`{request.value}` at each optimizer step"
    if request.ranks == MEAN:
        return "the losses passed to backward()"
    return "the losses passed to backward() and the last output of the model"


def _unfinished(multi: Sequence[Mapping[str, Any] | None], single: Mapping[str, Any] | None, nproc: int) -> str:
    if any(d is None or d.get("status") != OK for d in multi):
        return f"the {nproc}-rank run did not finish"
    if single is None:
        return "the 1-rank run did not run"
    if single.get("status") != OK:
        failure = single.get("failure") or {}
        detail = f"{failure.get('type', '')}: {failure.get('message', '')}".strip(": ")
        return f"the 1-rank run failed ({detail})" if detail else "the 1-rank run failed"
    return ""


def _series(data: Mapping[str, Any], request: ParityRequest) -> _Series:
    if request.value:
        return _named_series(data, request.value)
    losses = list(data.get("losses", ()))
    labels = [f"loss {i}" for i in range(1, len(losses) + 1)]
    values: list[tuple[float, ...]] = [(float(loss["value"]),) for loss in losses]
    sites = [Site.from_json(loss["site"]) if loss.get("site") else None for loss in losses]
    output = data.get("output")
    if request.ranks == EACH and output:
        labels.append("output")
        values.append(tuple(map(float, output["values"])))
        sites.append(Site.from_json(output["site"]) if output.get("site") else None)
    return _Series(tuple(labels), tuple(values), tuple(sites))


def _named_series(data: Mapping[str, Any], name: str) -> _Series:
    """The values of `--parity-value NAME`, one per optimizer step, at the first step's line."""
    step_site = Site.from_json(data["step_site"]) if data.get("step_site") else None
    named = data.get("named") or {}
    values = tuple(tuple(map(float, v)) for v in named.get("values", ()))
    labels = tuple(f"`{name}` at step {i}" for i in range(1, len(values) + 1))
    problem = str(named.get("problem", ""))
    if not values and not problem:
        problem = f"no optimizer step was counted, so `{name}` was never read"
    return _Series(labels, values, (step_site,) * len(values), problem)


def _nothing(theirs: _Series, request: ParityRequest) -> str:
    """Why the 1-rank run gave nothing to compare; "" when it gave something."""
    if theirs.labels:
        return ""
    if request.value:
        return f"`{request.value}` was never read"
    return "nothing to compare: no loss was passed to backward() and the model returned no output"


def _lengths(ours: Sequence[_Series], theirs: _Series) -> str:
    """Why the runs cannot be compared step by step (they stepped differently); else ""."""
    for rank, series in enumerate(ours):
        if series.labels != theirs.labels:
            return (
                f"the runs differ in length: the 1-rank run gave {_count(theirs)}, "
                f"rank {rank} of the {len(ours)}-rank run {_count(series)}"
            )
    return ""


def _count(series: _Series) -> str:
    losses = sum(1 for label in series.labels if label != "output")
    outputs = len(series.labels) - losses
    return f"{losses} values" + (" and an output" if outputs else "")


def _step(index: int, ours: Sequence[_Series], theirs: _Series, ranks: str, rtol: float, atol: float) -> ParityStep:
    reference = theirs.values[index]
    label, site = theirs.labels[index], ours[0].sites[index] or theirs.sites[index]
    if ranks == MEAN:
        rows = [s.values[index] for s in ours]
        same = all(len(row) == len(reference) for row in rows)
        mean = tuple(sum(col) / len(col) for col in zip(*rows)) if same else ()
        return _judge(label, mean, reference, rtol, atol, site, None)
    judged = [_judge(label, s.values[index], reference, rtol, atol, site, r) for r, s in enumerate(ours)]
    return max(judged, key=lambda s: (not s.ok, s.max_abs_diff))


def _judge(
    label: str,
    values: Sequence[float],
    reference: Sequence[float],
    rtol: float,
    atol: float,
    site: Site | None,
    rank: int | None,
) -> ParityStep:
    first = values[0] if values else None
    if len(values) != len(reference):
        return ParityStep(label, first, reference[0] if reference else None, math.inf, False, site, rank)
    diff = max((abs(a - b) for a, b in zip(values, reference)), default=0.0)
    ok = all(close(a, b, rtol, atol) for a, b in zip(values, reference))
    return ParityStep(label, first, reference[0] if reference else None, diff, ok, site, rank)
