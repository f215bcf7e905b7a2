"""Smoke results as NM7xx `Finding`s (category "smoke"), for the JSON and SARIF outputs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from neuron_migrate.catalogue import load_catalogue
from neuron_migrate.model import Finding, Position, Severity
from neuron_migrate.smoke.report import ERROR, OK, TIMEOUT, SmokeReport
from neuron_migrate.smoke.sites import Site

CATEGORY = "smoke"
MAX_DETAIL = 60


@dataclass(frozen=True)
class SmokeRule:
    """One NM7xx code: its name (the pattern found) and its severity."""

    code: str
    name: str
    severity: Severity

    @classmethod
    def declared(cls, code: str) -> SmokeRule:
        """The rule as `rules/<code>.toml` declares it (the one place a smoke rule is defined)."""
        spec = next(s for s in load_catalogue() if s.code == code and s.detector == "smoke")
        return cls(spec.code, spec.name, spec.severity)


PREDICTED_FALLBACK = SmokeRule.declared("NM701")
MEASURED_FALLBACK = SmokeRule.declared("NM702")
FLOAT64 = SmokeRule.declared("NM703")
DEVICE_MIXING = SmokeRule.declared("NM704")
PARITY_MISMATCH = SmokeRule.declared("NM705")
SCRIPT_FAILURE = SmokeRule.declared("NM706")
SMOKE_TIMEOUT = SmokeRule.declared("NM707")
INDEPENDENT_RANKS = SmokeRule.declared("NM708")
DEVICE_UNUSED = SmokeRule.declared("NM709")
XLA_IMPORT_CAUGHT = SmokeRule.declared("NM710")
RANK_PARITY_MISMATCH = SmokeRule.declared("NM711")
RULES = (
    PREDICTED_FALLBACK, MEASURED_FALLBACK, FLOAT64, DEVICE_MIXING,
    PARITY_MISMATCH, SCRIPT_FAILURE, SMOKE_TIMEOUT, INDEPENDENT_RANKS,
    DEVICE_UNUSED, XLA_IMPORT_CAUGHT, RANK_PARITY_MISMATCH,
)  # fmt: skip


def report_findings(report: SmokeReport) -> list[Finding]:
    """NM7xx findings pointing at the user's lines, sorted and without duplicates."""
    found = {
        (f.code, f.path, f.start.line, f.message): f
        for f in (
            *_fallbacks(report),
            *_events(report),
            *_parity(report),
            *_rank_parity(report),
            *_failure(report),
            *_independent(report),
            *_device_unused(report),
            *_caught_imports(report),
        )
    }
    return sorted(found.values(), key=lambda f: f.sort_key)


def _finding(rule: SmokeRule, site: Site | None, script: str, message: str) -> Finding:
    if site is None:
        return Finding(
            script,
            rule.code,
            rule.name,
            message,
            rule.severity,
            Position(1, 1),
            Position(1, 1),
            category=CATEGORY,
        )
    start = Position(site.line, site.column)
    end = Position(site.line, site.column + len(site.code))
    return Finding(
        site.path, rule.code, rule.name, message, rule.severity, start, end,
        category=CATEGORY, snippet=site.code,
    )  # fmt: skip


def _sites(sites: tuple[Site, ...]) -> tuple[Site | None, ...]:
    return sites or (None,)


def _fallbacks(report: SmokeReport) -> Iterator[Finding]:
    for fb in report.fallbacks:
        if fb.measured:
            rule, message = (
                MEASURED_FALLBACK,
                f"Move `{fb.op}` off the hot path; it ran as a CPU fallback on `neuron`",
            )
        elif fb.status == "unsupported":
            rule = PREDICTED_FALLBACK
            message = f"Replace `{fb.op}`; compat data {report.target_version} lists it as unsupported on `neuron`"
        else:
            rule = PREDICTED_FALLBACK
            message = f"Move `{fb.op}` off the hot path; compat data {report.target_version} predicts a CPU fallback"
        for site in _sites(fb.sites):
            yield _finding(rule, site, report.script, message)


def _events(report: SmokeReport) -> Iterator[Finding]:
    for event in report.events:
        if event.kind == "float64":
            message = f"Use float32 instead of float64 in `{event.op}`; Neuron computes float64 as float32"
            yield _finding(FLOAT64, event.site, report.script, message)
        elif event.kind == "device-mixing":
            message = f"Move the CPU tensor to the `neuron` device; `{event.op}` mixes a neuron and a CPU tensor"
            yield _finding(DEVICE_MIXING, event.site, report.script, message)


def _parity(report: SmokeReport) -> Iterator[Finding]:
    parity = report.parity
    if parity is None or parity.status != "mismatch":
        return
    if parity.message:
        yield _finding(
            PARITY_MISMATCH,
            None,
            report.script,
            f"Check the numerics on `neuron`; {parity.message}",
        )
    for step in parity.steps:
        if not step.ok:
            message = (
                f"Check the numerics on `neuron`: {step.label} differs from the CPU run by {step.max_abs_diff:.1e}"
            )
            yield _finding(PARITY_MISMATCH, step.site, report.script, message)


def _rank_parity(report: SmokeReport) -> Iterator[Finding]:
    parity = report.rank_parity
    if parity is None or parity.status == OK:
        return
    wrong = [step for step in parity.steps if not step.ok]
    if not wrong:
        message = f"Make `--parity` comparable on 1 and {parity.nproc} ranks; {_detail(parity.message)}"
        yield _finding(RANK_PARITY_MISMATCH, report.step_site, report.script, message)
    for step in wrong:
        who = f"rank {step.rank}" if step.rank is not None else "the ranks' mean"
        message = (
            f"Fix the parallel plan; `--parity`: {step.label} on {who} differs from 1 rank by {step.max_abs_diff:.1e}"
        )
        yield _finding(RANK_PARITY_MISMATCH, step.site, report.script, message)


def _failure(report: SmokeReport) -> Iterator[Finding]:
    failure = report.failure
    if failure is None or report.status == OK:
        return
    if report.status == TIMEOUT:
        message = f"Stop the loop or raise `--timeout`; the script was {_detail(failure.message)} here"
        yield _finding(SMOKE_TIMEOUT, failure.site, report.script, message)
        return
    if report.status == ERROR and failure.site is None:
        message = f"Fix the smoke setup; {_detail(failure.message)}"
    else:
        message = f"Fix the `{failure.type}` raised here: {_detail(failure.message)}"
    yield _finding(SCRIPT_FAILURE, failure.site, report.script, message)


def _independent(report: SmokeReport) -> Iterator[Finding]:
    why = report.independent
    if not why:
        return
    message = f"Keep the ranks in step with DDP, FSDP or collectives; {why}"
    yield _finding(INDEPENDENT_RANKS, report.step_site, report.script, message)


def _device_unused(report: SmokeReport) -> Iterator[Finding]:
    if not report.device_unused:
        return
    what = "trained" if report.steps or report.backwards else "ran inference"
    message = f"Move the model and its inputs to `neuron`; the run {what} without a single op on the device"
    yield _finding(DEVICE_UNUSED, report.step_site, report.script, message)


def _caught_imports(report: SmokeReport) -> Iterator[Finding]:
    for found in report.caught_xla_imports:
        message = (
            f"Remove the `{found.module}` import probe; `{found.module}` is absent, so the script ran its fallback"
        )
        yield _finding(XLA_IMPORT_CAUGHT, found.site, report.script, message)


def _detail(text: str) -> str:
    first = (text.strip().splitlines() or [""])[0].rstrip(". ")
    return first if len(first) <= MAX_DETAIL else first[: MAX_DETAIL - 3].rstrip() + "..."
