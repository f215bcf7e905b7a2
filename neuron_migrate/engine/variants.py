"""One file's check and its two fix runs (`--fix`, `--fix --unsafe-fixes`), from one parse and one
analysis of the text as read: what `report` needs of each file.

Each result equals what `check_source` gives for the same text under the check's settings with
`fix` (and `unsafe_fixes`) set: the fix runs start from the check's first round, which does not
depend on those two settings (only the budget of a fix does, and a file over it is run apart).
The fix runs are real: the report's "after `--fix`" columns are what `--fix` writes. The
`--fix --unsafe-fixes` run is the `--fix` run when no round of it planned an unsafe fix: the
two then choose the same plans in every round.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.engine import suppress
from neuron_migrate.engine.budget import over_budget
from neuron_migrate.engine.fix_loop import fix_loop
from neuron_migrate.engine.formats import notebook
from neuron_migrate.engine.formats.textfiles import file_kind
from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.engine.planning import first_round, reported, ruleset_for
from neuron_migrate.model import FileResult, Safety
from neuron_migrate.settings import Settings


@dataclass(frozen=True)
class Variants:
    """The check of a file and, where they can differ from it, its fix runs in memory."""

    check: FileResult
    safe: FileResult | None  # `--fix`; None when the check has no safe fix (nothing to apply)
    unsafe: FileResult | None  # `--fix --unsafe-fixes`; None when the check has no fix at all
    analysis: Analysis | None  # what the check analysed (None: not parsed, or not Python)


def has_fix(result: FileResult, safety: Safety) -> bool:
    return any(f.fix is not None and f.fix.applicability is safety for f in result.findings)


def variants(text: str, path: str, settings: Settings) -> Variants:
    """`check_source(text, path, settings)` and its `--fix` and `--fix --unsafe-fixes` results."""
    fixing = replace(settings, fix=True, unsafe_fixes=False)
    unsafe = replace(settings, fix=True, unsafe_fixes=True)
    if notebook.is_notebook(path) or file_kind(path) is not None or over_budget(text, fixing=True) is not None:
        check = check_source(text, path, settings)
        return _runs(check, lambda s: check_source(text, path, s), fixing, unsafe, None)
    ruleset = ruleset_for(settings)
    start = first_round(text, path, settings, ruleset)
    if isinstance(start, FileResult):  # nothing to plan on: every run ends here
        return _runs(suppress.finish(start, settings), lambda s: suppress.finish(start, s), fixing, unsafe, None)
    planned, analysis = start
    findings = tuple(p.finding for p in reported(analysis, planned, settings, ruleset))
    check = suppress.finish(FileResult(path, findings, source=text), settings)
    unsafe_planned: list[bool] = []

    def run(chosen: Settings) -> FileResult:
        done = fix_loop(text, path, chosen, ruleset, planned, analysis)
        if chosen is fixing:
            unsafe_planned.append(done.unsafe_planned)
        return suppress.finish(done.result, chosen)

    return _runs(check, run, fixing, unsafe, analysis, unsafe_planned)


def _runs(
    check: FileResult,
    run: Callable[[Settings], FileResult],
    fixing: Settings,
    unsafe: Settings,
    analysis: Analysis | None,
    unsafe_planned: list[bool] | None = None,
) -> Variants:
    safe_fixes = has_fix(check, Safety.SAFE)
    safe = run(fixing) if safe_fixes else None
    if not safe_fixes and not has_fix(check, Safety.UNSAFE):
        return Variants(check, safe, None, analysis)
    if safe is not None and unsafe_planned == [False]:
        return Variants(check, safe, safe, analysis)
    return Variants(check, safe, run(unsafe), analysis)
