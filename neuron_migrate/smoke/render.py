"""Text and JSON renderings of a SmokeReport. Pure functions; no torch."""

from __future__ import annotations

import dataclasses
import json

from neuron_migrate.smoke.compat import citation, citation_parts
from neuron_migrate.smoke.render_parity import parity_lines, rank_parity_lines
from neuron_migrate.smoke.report import EMULATED, FAILED, OK, TIMEOUT, Event, SmokeReport
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
    """The verdict in one line first, then the evidence: the run, its failure, what ran where."""
    lines = [verdict(report), *_summary_lines(report)]
    if report.failure is not None:
        lines += _failure_lines(report)
    lines += _fallback_lines(report)
    lines += _event_lines("float64 use (Neuron computes float64 as float32)", report, "float64")
    lines += _event_lines("device mixing (an error on real `neuron` hardware)", report, "device-mixing")
    lines += parity_lines(report)
    lines += rank_parity_lines(report)
    lines += _rank_lines(report)
    lines += _xla_import_lines(report)
    lines += _op_lines(report)
    lines += [f"note: {note}" for note in report.notes]
    return "\n".join(lines) + "\n"


def verdict(report: SmokeReport) -> str:
    """`smoke PASSED: SCRIPT` or `smoke FAILED: SCRIPT: why`, the one line that judges the run."""
    if not report.ok:
        return f"smoke FAILED: {report.script}: {'; '.join(report.problems)}"
    unknown = len(report.unknown_ops)
    caveat = f" ({plural(unknown, 'op')} of unknown compat status)" if unknown else ""
    return f"smoke PASSED: {report.script}{caveat}"


def plural(count: int, noun: str) -> str:
    """`1 forward call`, `2 forward calls`."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _where(site: Site | None) -> str:
    return f"{site.path}:{site.line}" if site else "<no user line>"


def _summary_lines(report: SmokeReport) -> list[str]:
    device = "emulated `neuron` (computed on the CPU)" if report.device == EMULATED else report.device
    counts = ", ".join(
        plural(n, noun)
        for n, noun in (
            (report.steps, "optimizer step"),
            (report.forwards, "forward call"),
            (report.backwards, "backward call"),
        )
    )
    lines = [
        f"script: {report.script}",
        f"device: {device}" + (f", {report.nproc} ranks" if report.nproc > 1 else ""),
        f"run: {counts}, {report.wall_time_s:.1f} s",
        f"end: {_ending(report)}",
    ]
    unknown = len(report.unknown_ops)
    known = f"; {unknown} not in the compat data" if unknown else ""
    calls = plural(sum(op.count for op in report.ops), "call")
    lines.append(f"ops on `neuron`: {len(report.ops)} distinct, {calls}{known}")
    if report.measured_executed_ops:
        executed = ", ".join(report.measured_executed_ops)
        lines.append(f"ops torch_neuronx.get_executed_ops() reports: {executed}")
    return lines


def _ending(report: SmokeReport) -> str:
    """How the script's run ended, in words (the verdict judges it; this only says what happened)."""
    failure = report.failure
    if report.status == OK:
        return report.stop_reason or "the script finished by itself"
    if report.status == TIMEOUT:
        return f"killed: {failure.message}" if failure else "killed at the time limit"
    kind = "the script failed" if report.status == FAILED else "smoke could not run the script"
    return f"{kind} with `{failure.type}` (below)" if failure else kind


def _failure_lines(report: SmokeReport) -> list[str]:
    failure = report.failure
    assert failure is not None
    lines = ["", f"error: {failure.type}: {failure.message}".rstrip()]
    if failure.site is not None:
        lines.append(f"  at {_where(failure.site)}: {failure.site.code}")
    if report.nproc > 1:
        lines.append(f"  on rank {failure.rank}")
    lines.append(f"  likely cause: {failure.likely_cause}")
    if failure.traceback.strip():
        lines += ["  traceback:", *("    " + line for line in failure.traceback.rstrip().splitlines())]
    elif report.status != OK and report.output_tail.strip():
        lines += ["  output (last lines):", *("    " + line for line in report.output_tail.splitlines()[-20:])]
    return lines + [""]


def _fallback_lines(report: SmokeReport) -> list[str]:
    if not report.fallbacks_predicted:
        head = "CPU fallbacks (measured by torch_neuronx.get_fallback_ops())"
        return [f"{head}: {len(report.fallbacks) or 'none'}", *_fallback_entries(report)]
    lines = [f"CPU fallbacks (predicted, not measured): {len(report.fallbacks) or 'none'}", *_fallback_entries(report)]
    made = f", made from {report.compat_made_from}" if report.compat_made_from else ""
    lines.append(f"  predicted from the {report.target_version} compat data{made}")
    unknown = report.unknown_ops
    if unknown:  # the prediction cannot speak for ops the data does not list
        names = ", ".join(op.op for op in unknown[:8]) + (", ..." if len(unknown) > 8 else "")
        lines.append(f"  not in that data, so not predicted: {plural(len(unknown), 'op')} ({names})")
    return lines


def _fallback_entries(report: SmokeReport) -> list[str]:
    lines = []
    for fallback in report.fallbacks:
        first, *rest = citation_parts(fallback.source)
        lines += [f"  {fallback.op} [{fallback.status}] x{fallback.count}", f"    source: {first}"]
        lines += [f"            {part}" for part in rest]
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
        counted = f"{plural(replicas.compared, 'parameter')} compared, {replicas.sharded} sharded"
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
