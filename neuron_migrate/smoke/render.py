"""Text and JSON renderings of a SmokeReport. Pure functions; no torch."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from neuron_migrate.smoke.compat import citation
from neuron_migrate.smoke.report import EMULATED, OK, Event, Fallback, SmokeReport
from neuron_migrate.smoke.sites import Site

MAX_TEXT_OPS = 60
SCHEMA_VERSION = 1


def render_json(report: SmokeReport) -> str:
    """The whole report as indented JSON with sorted keys."""
    data = dataclasses.asdict(report)
    data["ok"] = report.ok
    data["problems"] = list(report.problems)
    data["schema_version"] = SCHEMA_VERSION
    data["fallbacks_kind"] = "predicted" if report.fallbacks_predicted else "measured"
    data["unknown_ops"] = len(report.unknown_ops)
    for fallback in data["fallbacks"]:
        fallback["source"] = citation(fallback["source"])
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def render_text(report: SmokeReport) -> str:
    """A human-readable summary; the failure's traceback comes first when the run failed."""
    lines: list[str] = []
    if report.failure is not None:
        lines += _failure_lines(report)
    lines += _summary_lines(report)
    lines += _fallback_lines(report)
    lines += _event_lines("float64 use (Neuron computes float64 as float32)", report, "float64")
    lines += _event_lines("device mixing (an error on real `neuron` hardware)", report, "device-mixing")
    lines += _parity_lines(report)
    lines += _rank_parity_lines(report)
    lines += _rank_lines(report)
    lines += _xla_import_lines(report)
    lines += _op_lines(report)
    lines += [f"note: {note}" for note in report.notes]
    if report.ok:
        unknown = len(report.unknown_ops)
        caveat = f" ({unknown} op{'s' if unknown != 1 else ''} of unknown compat status)" if unknown else ""
        lines.append(f"smoke PASSED: {report.script}{caveat}")
    else:
        lines.append(f"smoke FAILED: {report.script}: {'; '.join(report.problems)}")
    return "\n".join(lines) + "\n"


def _where(site: Site | None) -> str:
    return f"{site.path}:{site.line}" if site else "<no user line>"


def _failure_lines(report: SmokeReport) -> list[str]:
    failure = report.failure
    assert failure is not None
    lines = [failure.traceback.rstrip()] if failure.traceback.strip() else []
    lines.append(f"error: {failure.type}: {failure.message}".rstrip())
    if failure.site is not None:
        lines.append(f"  at {_where(failure.site)}: {failure.site.code}")
    if report.nproc > 1:
        lines.append(f"  on rank {failure.rank}")
    lines.append(f"  likely cause: {failure.likely_cause}")
    if report.status != OK and report.output_tail.strip() and not failure.traceback.strip():
        lines += [
            "  output (last lines):",
            *("    " + line for line in report.output_tail.splitlines()[-20:]),
        ]
    return lines + [""]


def _summary_lines(report: SmokeReport) -> list[str]:
    device = "emulated `neuron` (computed on the CPU)" if report.device == EMULATED else report.device
    steps = f"{report.steps} optimizer steps, {report.forwards} forward calls, {report.backwards} backward calls"
    lines = [
        f"script: {report.script}",
        f"status: {report.status}",
        f"device: {device}" + (f", {report.nproc} ranks" if report.nproc > 1 else ""),
        f"run: {steps}, {report.wall_time_s:.1f} s",
    ]
    if report.stop_reason:
        lines.append(f"stop: {report.stop_reason}")
    calls = sum(op.count for op in report.ops)
    unknown = len(report.unknown_ops)
    known = f"; {unknown} of unknown status (not in the compat data)" if unknown else ""
    lines.append(f"ops on `neuron`: {len(report.ops)} distinct, {calls} calls{known}")
    if report.measured_executed_ops:
        executed = ", ".join(report.measured_executed_ops)
        lines.append(f"ops torch_neuronx.get_executed_ops() reports: {executed}")
    return lines


def _fallback_lines(report: SmokeReport) -> list[str]:
    unknown = report.unknown_ops
    if report.fallbacks_predicted:
        made = f", made from {report.compat_made_from}" if report.compat_made_from else ""
        title = f"CPU fallbacks predicted (not measured) from the {report.target_version} compat data{made}"
        if unknown:  # the prediction cannot speak for ops the data does not list
            names = ", ".join(op.op for op in unknown[:8]) + (", ..." if len(unknown) > 8 else "")
            title += f"; {len(unknown)} op{'s' if len(unknown) != 1 else ''} of unknown status ({names})"
    else:
        title = "CPU fallbacks measured by torch_neuronx.get_fallback_ops()"
    if not report.fallbacks:
        return [f"{title}: {'none known' if report.fallbacks_predicted and unknown else 'none'}"]
    lines = [f"{title}:"]
    for fallback in report.fallbacks:
        lines += _fallback_entry(fallback)
    return lines


def _fallback_entry(fallback: Fallback) -> list[str]:
    head = f"  {fallback.op} [{fallback.status}] x{fallback.count}"
    lines = [head, f"    source: {citation(fallback.source)}"]
    lines += [f"    {_where(s)}: {s.code}" for s in fallback.sites]
    return lines


def _event_lines(title: str, report: SmokeReport, kind: str) -> list[str]:
    events: list[Event] = [e for e in report.events if e.kind == kind]
    if not events:
        return [f"{title}: none"]
    lines = [f"{title}:"]
    for event in events:
        code = f": {event.site.code}" if event.site else ""
        lines.append(f"  {_where(event.site)} {event.op} x{event.count}{code}")
    return lines


def _parity_lines(report: SmokeReport) -> list[str]:
    parity = report.parity
    if parity is None:
        return []
    head = f"parity vs CPU: {parity.status} ({parity.precision}, rtol={parity.rtol:g}, atol={parity.atol:g})"
    lines = [head]
    if parity.message:
        lines.append(f"  {parity.message}")
    for step in parity.steps:
        mark = "ok" if step.ok else "MISMATCH"
        lines.append(f"  {step.label}: max |diff| {step.max_abs_diff:.3e} {mark} ({_pair(step.value, step.reference)})")
    return lines


def _pair(value: Any, reference: Any, names: tuple[str, str] = ("neuron", "cpu")) -> str:
    def fmt(x: Any) -> str:
        return "-" if x is None else f"{x:.6g}"

    return f"{names[0]} {fmt(value)}, {names[1]} {fmt(reference)}"


def _rank_parity_lines(report: SmokeReport) -> list[str]:
    parity = report.rank_parity
    if parity is None:
        return []
    ranks = f"every one of {parity.nproc} ranks" if parity.ranks == "each" else f"the mean of {parity.nproc} ranks"
    tolerance = f"{parity.precision}, rtol={parity.rtol:g}, atol={parity.atol:g}"
    lines = [f"parity with 1 rank: {parity.status} ({ranks}; {parity.value}; {tolerance})"]
    if parity.message:
        lines.append(f"  {parity.message}")
    for step in parity.steps:
        mark = "ok" if step.ok else "MISMATCH"
        who = f"rank {step.rank}" if step.rank is not None else "mean"
        pair = _pair(step.value, step.reference, (who, "1 rank"))
        lines.append(f"  {step.label}: max |diff| {step.max_abs_diff:.3e} {mark} ({pair})")
    return lines


def _rank_lines(report: SmokeReport) -> list[str]:
    """Collectives and replica agreement; only for a multi-rank run."""
    if report.nproc < 2:
        return []
    if not report.collectives:
        lines = ["collectives between ranks: none"]
    else:
        lines = ["collectives between ranks (count, first lines):"]
        for coll in report.collectives:
            where = ", ".join(_where(s) for s in coll.sites) or "<no user line>"
            lines.append(f"  {coll.op} x{coll.count} at {where}")
    replicas = report.replicas
    if replicas is not None:
        counted = f"{replicas.compared} parameters compared, {replicas.sharded} sharded"
        detail = f"; {replicas.detail}" if replicas.detail else ""
        lines.append(f"replicas after the steps: {replicas.status} ({counted}){detail}")
    return lines


def _xla_import_lines(report: SmokeReport) -> list[str]:
    """The failed torch_xla imports the script caught; only when there are some."""
    caught = report.caught_xla_imports
    if not caught:
        return []
    lines = ["torch_xla looked for and not found (the script ran its fallback):"]
    lines += [f"  {_where(i.site)}: {i.site.code}" for i in caught]
    return lines


def _op_lines(report: SmokeReport) -> list[str]:
    if not report.ops:
        return []
    lines = ["ops executed on `neuron` (count, compat status, first line):"]
    for op in report.ops[:MAX_TEXT_OPS]:
        first = _where(op.sites[0]) if op.sites else ""
        lines.append(f"  {op.op} x{op.count} [{op.status}] {first}".rstrip())
    if len(report.ops) > MAX_TEXT_OPS:
        lines.append(f"  ... {len(report.ops) - MAX_TEXT_OPS} more (see --output-format json)")
    return lines
