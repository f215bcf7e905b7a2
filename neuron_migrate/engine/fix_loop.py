"""`--fix`: apply the allowed fixes round by round, each round on the analysis its plans came
from, until nothing changes; verify the result once.

A fix whose result does not compile is dropped alone: the others are applied, and its finding
stays without a fix, with an NM906 finding beside it. So is the second of two fixes that compile
apart but not together. A structural fix whose transform declines stays unfixed, without a fix.
"""

from __future__ import annotations

import ast
import warnings
from collections import Counter
from dataclasses import dataclass, replace

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.engine import suppress
from neuron_migrate.engine.apply import Applied, apply_once, choose, plan_key, verify
from neuron_migrate.engine.check import Planned, tool_finding
from neuron_migrate.engine.planning import plan, reported
from neuron_migrate.engine.ruleset import Ruleset
from neuron_migrate.model import FileResult, Finding, Safety
from neuron_migrate.settings import Settings

_MAX_ISOLATED = 200  # beyond this many plans in one round, a broken round rejects the file


@dataclass(frozen=True)
class FixRun:
    """A fix run's result, and whether any of its rounds planned an unsafe fix (when none did,
    `--fix --unsafe-fixes` makes the same run)."""

    result: FileResult
    unsafe_planned: bool


def fix_loop(
    text: str, path: str, settings: Settings, ruleset: Ruleset, planned: list[Planned], analysis: Analysis | None
) -> FixRun:
    """Fix `text`, whose first round (`planned`, on `analysis`) is planned already."""
    original, first = text, planned
    reported_first = suppress.reporter(text, path, settings)  # the findings the text as read reports
    fixed: list[Finding] = []
    broken: set[tuple[str, str, str]] = set()  # plans that broke the file, by what they do
    declined: set[tuple[str, str, str]] = set()  # structural fixes whose transform declined
    unsafe = False
    converged = False
    for _ in range(settings.max_fix_iterations):
        unsafe = unsafe or any(p.plan is not None and p.applicability is Safety.UNSAFE for p in planned)
        chosen = choose(planned, settings, suppress.reporter(text, path, settings), broken | declined)
        if not chosen or analysis is None:
            converged = True
            break
        applied = apply_once(analysis, chosen)
        declined.update(plan_key(p) for p in applied.declined)
        if applied.text == text:
            converged = True
            break
        replanned, error, next_analysis = plan(applied.text, path, ruleset)
        if error is not None and error.code == "NM901":  # some fix broke the syntax: drop it alone
            good, bad = _split_breaking(analysis, chosen, path)
            if not bad:
                return FixRun(_rejected(original, path, first, error.message), unsafe)
            broken.update(plan_key(p) for p in bad)
            applied = apply_once(analysis, good) if good else Applied(text, ())
            if applied.text == text:
                converged = True
                break
            replanned, error, next_analysis = plan(applied.text, path, ruleset)
        if error is not None:
            return FixRun(_rejected(original, path, first, error.message), unsafe)
        text = applied.text
        fixed.extend(applied.fixed)
        planned, analysis = replanned, next_analysis
    problem = verify(text, path) if text != original else None
    if problem is not None:
        return FixRun(_rejected(original, path, first, problem), unsafe)
    unfixed = [p for p in planned if plan_key(p) in broken | declined]  # their fixes cannot be made
    gone_fixes = {id(p) for p in unfixed}
    planned = [
        replace(p, plan=None, finding=replace(p.finding, fix=None)) if id(p) in gone_fixes else p for p in planned
    ]
    remaining = [p.finding for p in reported(analysis, planned, settings, ruleset)]
    remaining += [_broken_finding(path, p.finding) for p in unfixed if plan_key(p) in broken]
    if not converged:
        rounds = settings.max_fix_iterations
        remaining.append(tool_finding(path, "NM907", f"Review the fixes; they did not settle after {rounds} rounds"))
    gone = _gone([p.finding for p in first if reported_first(p.finding)], [*fixed, *remaining])
    result = FileResult(
        path,
        tuple(sorted(remaining, key=lambda f: f.sort_key)),
        fixed=tuple(fixed),
        source=original,
        fixed_source=text if text != original else None,
        gone=tuple(gone),
    )
    return FixRun(result, unsafe)


def _gone(first: list[Finding], after: list[Finding]) -> list[Finding]:
    """The findings of the text as read that are neither fixed nor left: matched by code and
    code text, then (code text changed by another fix) by code alone."""
    left = Counter((f.code, f.snippet) for f in after)
    unmatched = []
    for finding in first:
        key = (finding.code, finding.snippet)
        if left[key] > 0:
            left[key] -= 1
        else:
            unmatched.append(finding)
    codes = Counter(code for (code, _), count in left.items() for _ in range(count))
    gone = []
    for finding in unmatched:
        if codes[finding.code] > 0:
            codes[finding.code] -= 1
        else:
            gone.append(finding)
    return gone


def _split_breaking(analysis: Analysis, chosen: list[Planned], path: str) -> tuple[list[Planned], list[Planned]]:
    """The plans that keep the file compiling, and those that break it: alone, or together with
    the plans kept before them (two fixes that are each fine but not together: the second goes)."""
    if len(chosen) > _MAX_ISOLATED:
        return chosen, []
    good: list[Planned] = []
    bad: list[Planned] = []
    for item in chosen:
        alone = apply_once(analysis, [item]).text
        (bad if _syntax_problem(alone, path) is not None else good).append(item)
    if bad or _syntax_problem(apply_once(analysis, good).text, path) is None:
        return good, bad
    kept: list[Planned] = []
    for item in good:
        together = apply_once(analysis, [*kept, item]).text
        (bad if _syntax_problem(together, path) is not None else kept).append(item)
    return kept, bad


def _syntax_problem(text: str, path: str) -> str | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    except (RecursionError, MemoryError):
        return None  # planning reports files nested too deeply
    return None


def _broken_finding(path: str, finding: Finding) -> Finding:
    message = f"Fix this `{finding.code}` finding by hand; its automatic fix produced invalid code"
    return tool_finding(path, "NM906", message, finding.start.line, finding.start.column)


def _rejected(original: str, path: str, first: list[Planned], problem: str) -> FileResult:
    """The fixes broke the file: keep it untouched and say so."""
    message = f"Fix this file by hand; the automatic fixes produced invalid code ({problem})"
    # The fixes were rolled back: `--fix` cannot fix these findings, so they carry no fix.
    findings = [replace(p.finding, fix=None) for p in first]
    findings.append(tool_finding(path, "NM906", message.replace("\n", " ")))
    return FileResult(path, tuple(findings), source=original)
