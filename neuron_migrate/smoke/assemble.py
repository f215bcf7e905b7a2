"""Turn the per-rank JSON of the smoke children into one SmokeReport. No torch."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from neuron_migrate.smoke import compat, xla_imports
from neuron_migrate.smoke.causes import likely_cause
from neuron_migrate.smoke.hints import with_hint
from neuron_migrate.smoke.parity import compare
from neuron_migrate.smoke.rank_parity import ParityRequest, compare_ranks
from neuron_migrate.smoke.ranks import compare_replicas, count_by_op, merge_collectives
from neuron_migrate.smoke.report import (
    EMULATED,
    ERROR,
    FAILED,
    OK,
    TIMEOUT,
    Event,
    Failure,
    Fallback,
    OpRecord,
    SmokeReport,
)
from neuron_migrate.smoke.sites import Site

_SEVERITY = {ERROR: 0, FAILED: 1, TIMEOUT: 2, OK: 3}
MEASURED_SOURCE = "torch_neuronx.get_fallback_ops()"
_PEER_LOST = re.compile(r"Connection (closed|reset) by peer|remote worker", re.IGNORECASE)


@dataclass(frozen=True)
class RankOutcome:
    """One child process: its exit code, its JSON report (None when it wrote none), its log."""

    rank: int
    exit_code: int | None
    data: Mapping[str, Any] | None
    log_tail: str = ""
    report_problem: str = ""  # why its report file could not be used ("": fine, or none written)


@dataclass(frozen=True)
class Launch:
    """All ranks of one run (the main run or the CPU reference run)."""

    ranks: tuple[RankOutcome, ...]
    killed_at_timeout: bool
    wall_time_s: float


@dataclass(frozen=True)
class ReportContext:
    """What the report needs besides the children's data."""

    script: Path
    device: str  # "neuron" or "emulated"
    target_version: str
    nproc: int
    timeout_s: float
    base_dir: Path | None = None


def build_report(
    ctx: ReportContext,
    main: Launch,
    reference: Launch | None,
    single: Launch | None = None,
    request: ParityRequest | None = None,
) -> SmokeReport:
    """Merge the ranks of `main`, add fallbacks from compat data, parity with the CPU run
    `reference` and, for `--parity` (`request`), parity with the 1-rank run `single`."""
    ops_compat = compat.load_ops(ctx.target_version)
    datas = [r.data for r in main.ranks if r.data is not None]
    first: Mapping[str, Any] = datas[0] if datas else {}
    status, failure = _status(main, ctx.timeout_s)
    if failure is not None:
        failure = with_hint(failure, ctx.script, ctx.base_dir)
    ops = _merge_ops(datas, ops_compat)
    report = SmokeReport(
        script=str(ctx.script),
        status=status,
        device=ctx.device,
        target_version=ctx.target_version,
        compat_made_from=compat.made_from(ctx.target_version),
        nproc=ctx.nproc,
        steps=int(first.get("steps", 0)),
        forwards=int(first.get("forwards", 0)),
        backwards=int(first.get("backwards", 0)),
        stop_reason=str(first.get("stop_reason", "")),
        wall_time_s=round(main.wall_time_s, 2),
        ops=ops,
        fallbacks=_fallbacks(ctx, datas, ops, ops_compat),
        events=_merge_events(datas),
        parity=_parity(first, reference) if reference is not None else None,
        failure=failure,
        notes=tuple(sorted({str(n) for d in datas for n in d.get("notes", ())})),
        output_tail=_output_tail(main),
        measured_executed_ops=_measured_names(datas, "executed_ops"),
        collectives=merge_collectives(datas),
        replicas=compare_replicas(datas, ctx.nproc) if status == OK else None,
        step_site=Site.from_json(first["step_site"]) if first.get("step_site") else None,
        xla_imports=xla_imports.merge(datas),
        rank_parity=_rank_parity(main, single, request),
    )
    return relativize(report, ctx.base_dir)


def _status(launch: Launch, timeout_s: float) -> tuple[str, Failure | None]:
    outcomes = [_rank_status(r) for r in launch.ranks]
    if launch.killed_at_timeout and not any(
        r.data is not None and s in (ERROR, FAILED) for r, (s, _) in zip(launch.ranks, outcomes)
    ):
        message = f"killed after {timeout_s:g} s; the script did not stop in time"
        return TIMEOUT, Failure("Timeout", message, "", likely_cause("RunTimeout", message))
    status = min((s for s, _ in outcomes), key=_SEVERITY.__getitem__, default=ERROR)
    candidates = [f for s, f in outcomes if s == status and f is not None]
    # A rank that lost its peer reports a gloo connection error; the peer's own error is the cause.
    failure = next((f for f in candidates if not _PEER_LOST.search(f.message)), None)
    return status, failure or (candidates[0] if candidates else None)


def _rank_status(outcome: RankOutcome) -> tuple[str, Failure | None]:
    data = outcome.data
    if data is None and outcome.report_problem:
        message = f"rank {outcome.rank} wrote a report smoke cannot use: it {outcome.report_problem}"
        return ERROR, Failure(
            "BadReport", message, outcome.log_tail, likely_cause("BadReport", message), rank=outcome.rank
        )
    if data is None:
        message = f"rank {outcome.rank} exited with code {outcome.exit_code} without a report"
        return FAILED, Failure(
            "Exit",
            message,
            outcome.log_tail,
            likely_cause("Exit", message),
            rank=outcome.rank,
        )
    status = str(data.get("status", ERROR))
    raw = data.get("failure")
    if not raw:
        return status, None
    site = Site.from_json(raw["site"]) if raw.get("site") else None
    cause = likely_cause(str(raw.get("type", "")), str(raw.get("message", "")))
    failure = Failure(
        str(raw.get("type", "")), str(raw.get("message", "")), str(raw.get("traceback", "")),
        cause, site, outcome.rank,
    )  # fmt: skip
    return status, failure


def _merge_ops(datas: Sequence[Mapping[str, Any]], ops_compat: Mapping[str, compat.OpCompat]) -> tuple[OpRecord, ...]:
    """The ops of every rank, by name, with their status and the first few user lines."""
    return tuple(
        OpRecord(name, count, compat.status_of(ops_compat, name), sites)
        for name, (count, sites) in count_by_op(datas, "ops").items()
    )


def _fallbacks(
    ctx: ReportContext,
    datas: Sequence[Mapping[str, Any]],
    ops: Sequence[OpRecord],
    ops_compat: Mapping[str, compat.OpCompat],
) -> tuple[Fallback, ...]:
    if ctx.device == EMULATED:
        return tuple(
            Fallback(
                op.op,
                False,
                op.status,
                ops_compat[compat.base_op_name(op.op)].source,
                op.count,
                op.sites,
            )
            for op in ops
            if op.status in compat.FALLBACK_STATUSES
        )
    measured = _measured_names(datas, "fallback_ops")
    by_name = {compat.base_op_name(op.op): op for op in ops}
    return tuple(_measured(name, by_name.get(name)) for name in measured)


def _measured_names(datas: Sequence[Mapping[str, Any]], key: str) -> tuple[str, ...]:
    """Base names torch_neuronx reported under `key` on any rank (empty when emulated)."""
    names = {compat.base_op_name(op) for d in datas for op in (d.get("measured") or {}).get(key, ())}
    return tuple(sorted(names))


def _measured(name: str, seen: OpRecord | None) -> Fallback:
    if seen is None:
        return Fallback(name, True, "cpu-fallback", MEASURED_SOURCE)
    return Fallback(name, True, "cpu-fallback", MEASURED_SOURCE, seen.count, seen.sites)


def _merge_events(datas: Sequence[Mapping[str, Any]]) -> tuple[Event, ...]:
    merged: dict[tuple[str, str, Site | None], Event] = {}
    for data in datas:
        for raw in data.get("events", ()):
            site = Site.from_json(raw["site"]) if raw.get("site") else None
            key = (str(raw["kind"]), str(raw["op"]), site)
            count = int(raw["count"]) + (merged[key].count if key in merged else 0)
            merged[key] = Event(key[0], key[1], str(raw["detail"]), count, site)
    return tuple(merged[k] for k in sorted(merged, key=lambda k: (k[0], k[2] or Site("", 0), k[1])))


def _parity(first: Mapping[str, Any], reference: Launch) -> Any:
    ref = next((r.data for r in reference.ranks if r.data is not None), None)
    return compare(first, ref)


def _rank_parity(main: Launch, single: Launch | None, request: ParityRequest | None) -> Any:
    if request is None:
        return None
    alone = single.ranks[0].data if single is not None and single.ranks else None
    return compare_ranks([r.data for r in main.ranks], alone, request)


def _output_tail(launch: Launch) -> str:
    failing = [r for r in launch.ranks if r.exit_code not in (0, None)]
    chosen = failing[0] if failing else (launch.ranks[0] if launch.ranks else None)
    return chosen.log_tail if chosen else ""


def relativize(report: SmokeReport, base: Path | None) -> SmokeReport:
    """Rewrite absolute paths under `base` as relative POSIX paths (stable output)."""
    if base is None:
        return report

    def rel(path: str) -> str:
        try:
            return Path(os.path.relpath(path, base)).as_posix() if Path(path).is_relative_to(base) else path
        except ValueError:
            return path

    def site(s: Site | None) -> Site | None:
        return replace(s, path=rel(s.path)) if s is not None else None

    def sites(items: tuple[Site, ...]) -> tuple[Site, ...]:
        return tuple(replace(s, path=rel(s.path)) for s in items)

    return replace(
        report,
        script=rel(report.script),
        ops=tuple(replace(o, sites=sites(o.sites)) for o in report.ops),
        fallbacks=tuple(replace(f, sites=sites(f.sites)) for f in report.fallbacks),
        events=tuple(replace(e, site=site(e.site)) for e in report.events),
        collectives=tuple(replace(c, sites=sites(c.sites)) for c in report.collectives),
        step_site=site(report.step_site),
        xla_imports=tuple(replace(i, site=replace(i.site, path=rel(i.site.path))) for i in report.xla_imports),
        failure=replace(report.failure, site=site(report.failure.site)) if report.failure else None,
        parity=replace(
            report.parity,
            steps=tuple(replace(s, site=site(s.site)) for s in report.parity.steps),
        )
        if report.parity
        else None,
        rank_parity=replace(
            report.rank_parity,
            steps=tuple(replace(s, site=site(s.site)) for s in report.rank_parity.steps),
        )
        if report.rank_parity
        else None,
    )
