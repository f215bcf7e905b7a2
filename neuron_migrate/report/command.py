"""What `neuron-migrate report` does between the flags and the renderer: check the paths as
`check` does (config, discovery, selection, suppressions), never fix or write, and build the
report. The CLI only prints it."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from neuron_migrate import __version__
from neuron_migrate.model import FileResult, Finding
from neuron_migrate.report.model import Report, RunInfo, build

# The `check` options `report` does not offer, at the values that make a read-only run.
_CHECK_DEFAULTS: Mapping[str, Any] = {
    "fix": False,
    "diff": False,
    "unsafe_fixes": None,
    "output_format": None,
    "add_noqa": False,
    "stdin_filename": None,
    "baseline": None,
    "write_baseline": None,
    "since": None,
    "no_cache": True,
    "cache_dir": None,
    "shard": None,
    "extend_exclude": (),
}


def selection_text(options: Mapping[str, Any]) -> str:
    """The selection flags as one line, e.g. `select NM; ignore NM6` (config applies below them)."""
    parts = [
        f"{flag} {','.join(options[key])}"
        for flag, key in (("select", "select"), ("ignore", "ignore"), ("extend-select", "extend_select"))
        if options.get(key)
    ]
    return "; ".join(parts) or "every rule (and the config file's selection)"


def collect(
    paths: Sequence[Path],
    options: Mapping[str, Any],
    cwd: Path,
    now: _dt.datetime | None = None,
    smoke: object | None = None,
) -> Report:
    """Check `paths` without fixing and build the report."""
    from neuron_migrate.config import config_for
    from neuron_migrate.run import workflow

    merged = {**_CHECK_DEFAULTS, **options}
    request = replace(workflow.request_from(paths, merged), write=False)
    results = workflow.check_paths(request, cwd)
    kinds = fix_kinds(results, *(workflow.check_paths(_dry_run(request, unsafe), cwd) for unsafe in (False, True)))
    config = config_for(cwd, request.config_file)
    run = RunInfo(
        tool_version=__version__,
        target_version=options.get("target_version") or config.target_version or "2.14",
        selection=selection_text(options),
        date=(now or _dt.datetime.now(_dt.timezone.utc)).strftime("%Y-%m-%d %H:%M UTC"),
        paths=tuple(str(p) for p in paths) or (".",),
        effort=config.report_effort,
    )
    if smoke is not None:
        from neuron_migrate.smoke.findings import report_findings

        # `smoke` is a SmokeReport, typed object so that start-up skips smoke/ (the ignore below).
        results = _join(results, report_findings(smoke))  # type: ignore[arg-type]
    return build(results, run, smoke, kinds)


def _join(results: Sequence[FileResult], extra: Sequence[Finding]) -> list[FileResult]:
    """The smoke run's findings added to the results of their files (or as new results)."""
    by_path: dict[str, list[Finding]] = {}
    for finding in extra:
        by_path.setdefault(finding.path, []).append(finding)
    joined = [replace(r, findings=(*r.findings, *by_path.pop(r.path))) if r.path in by_path else r for r in results]
    return joined + [FileResult(path, tuple(found)) for path, found in sorted(by_path.items())]


def _dry_run(request: Any, unsafe: bool) -> Any:
    """The request as `--diff` (with `--unsafe-fixes` when `unsafe`) would run it: fixes planned
    and applied in memory, nothing written."""
    return replace(request, write=False, overrides=replace(request.overrides, fix=True, unsafe_fixes=unsafe))


def fix_kinds(
    results: Sequence[FileResult], safe_run: Sequence[FileResult], unsafe_run: Sequence[FileResult]
) -> dict[tuple[Any, ...], str]:
    """For each finding (by sort key): `safe` when `--fix` resolves it, `unsafe` when only
    `--fix --unsafe-fixes` does, else `manual`.

    Taken from what the fixes really did, so imports removed once their uses are fixed count
    as fixable. Such a removal is reported at its line in the partly fixed text, so findings
    are matched by code and message, nearest line first.
    """
    fixed_safe = {r.path: list(r.fixed) for r in safe_run}
    fixed_unsafe = {r.path: list(r.fixed) for r in unsafe_run}
    kinds: dict[tuple[Any, ...], str] = {}
    for result in results:
        pools = (("safe", fixed_safe.get(result.path, [])), ("unsafe", fixed_unsafe.get(result.path, [])))
        for finding in sorted(result.findings, key=lambda f: (f.fix is None, f.sort_key)):
            kinds[finding.sort_key] = next((kind for kind, pool in pools if _take(pool, finding)), "manual")
    return kinds


def _take(pool: list[Finding], finding: Finding) -> bool:
    """Remove the best match of `finding` from `pool`; False when there is none."""
    same = [
        f
        for f in pool
        if f.code == finding.code
        and (f.message == finding.message or (finding.snippet and f.snippet == finding.snippet))
    ]  # an import kept "while `"xla"` needs it" is removed with another message once it does not
    if not same:
        return False
    pool.remove(
        min(same, key=lambda f: (abs(f.start.line - finding.start.line), f.start.column != finding.start.column))
    )
    return True
