"""What `neuron-migrate report` does between the flags and the renderer: check the paths as
`check` does (config, discovery, selection, suppressions, the result cache, `--jobs`, the
progress line), never fix or write, learn what `--fix` would really do, and build the report.
The CLI only prints it."""

from __future__ import annotations

import datetime as _dt
import hashlib
import marshal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from neuron_migrate import __version__
from neuron_migrate.model import FileResult, Finding, Safety
from neuron_migrate.output.base import applicable, needs_unsafe
from neuron_migrate.report.model import Relation, Report, RunInfo
from neuron_migrate.report.plan import build

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
    "no_cache": False,
    "cache_dir": None,
    "shard": None,
    "extend_exclude": (),
    "families": None,
    "target": None,
}
_KINDS_MAGIC = b"NMKINDS1"


def selection_text(options: Mapping[str, Any]) -> str:
    """The selection flags as one line, e.g. `select NM; ignore NM6` (config applies below them)."""
    parts = [
        f"{flag} {','.join(options[key])}"
        for flag, key in (("select", "select"), ("ignore", "ignore"), ("extend-select", "extend_select"))
        if options.get(key)
    ]
    return "; ".join(parts) or "every rule (and the config file's selection)"


def check_paths_exist(paths: Sequence[Path]) -> None:
    """A path that does not exist is a usage error (exit 2), as a typo must not read as "0 files"."""
    from neuron_migrate.run.workflow import UsageError

    missing = [str(p) for p in paths if str(p) != "-" and not p.exists() and not p.is_symlink()]
    if missing:
        raise UsageError(f"no such file or folder: {', '.join(missing)}")


def collect(
    paths: Sequence[Path],
    options: Mapping[str, Any],
    cwd: Path,
    now: _dt.datetime | None = None,
    smoke: object | None = None,
    progress: Callable[[int], Callable[[Any], object] | None] | None = None,
) -> Report:
    """Check `paths` without fixing and build the report.

    `options` may hold `since` (git REF) or `baseline` (FILE): the state before the migration,
    which tells *done* files from *clean* ones. Unlike `check`, they hide no finding.
    """
    from neuron_migrate.config import config_for, plan_runs
    from neuron_migrate.report import facts as facts_module
    from neuron_migrate.report import history
    from neuron_migrate.run import workflow

    check_paths_exist(paths)
    since, baseline = options.get("since"), options.get("baseline")
    merged = {**_CHECK_DEFAULTS, **options, "since": None, "baseline": None}
    if since is not None and not since.strip():
        raise workflow.UsageError("--since needs a git revision, e.g. --since origin/main")
    request = replace(workflow.request_from(paths, merged), write=False)
    learnt: dict[str, Any] = {}  # display path -> (what report_file learnt, stamp): files checked now
    results = workflow.check_paths(request, cwd, progress, worker=report_file, extras=learnt)
    unsafe_default = workflow.run_display(request, cwd)[1]
    kinds, left = _fix_kinds_cached(results, request, cwd, {path: runs for path, ((*runs, _), _) in learnt.items()})
    config = config_for(cwd, request.config_file)
    done: set[str] = set()
    where = ""
    if since:
        done |= history.had_findings_at(since, results, request, cwd)
        where = f"git {since}"
    if baseline is not None:
        done |= history.had_findings_in_baseline(Path(baseline), results)
        where = (where + "; " if where else "") + f"baseline {baseline}"
    known = {path: (facts_module.Facts(*extra[2]), stamp) for path, (extra, stamp) in learnt.items() if extra[2]}
    facts = facts_module.gather(((r.path, r.path) for r in results), request.cache_dir, known)
    done |= {r.path for r in results if not r.findings and facts.get(r.path, facts_module.NOTHING).neuron}
    graph = facts_module.importers(facts, [r.path for r in results if r.findings and r.path in facts])
    settings = plan_runs(request.paths or (Path("."),), request.overrides, request.config_file)[0][1]
    run = RunInfo(
        tool_version=__version__,
        target_version=options.get("target_version") or config.target_version or "2.14",
        selection=selection_text(options),
        date=(now or _dt.datetime.now(_dt.timezone.utc)).strftime("%Y-%m-%d %H:%M UTC"),
        paths=tuple(str(p) for p in paths) or (".",),
        effort=config.report_effort,
        families=tuple(settings.families),
        target=settings.target,
        history=where,
    )
    relation = _relation(results, unsafe_default, *left)
    if smoke is not None:
        from neuron_migrate.smoke.findings import report_findings

        # `smoke` is a SmokeReport, typed object so that start-up skips smoke/ (the ignore below).
        results = _join(results, report_findings(smoke))  # type: ignore[arg-type]
    counts = {path: len(files) for path, files in graph.items()}
    return build(results, run, smoke, kinds, frozenset(done), counts, relation, graph)


def report_file(path: Path, display: str, settings: Any, data: bytes) -> tuple[FileResult, Any]:
    """A file's check as `process_file` gives it (never writing), with what the report needs
    next, learnt from the same reading and analysis (`engine/variants.py`): the results of
    `--fix` and `--fix --unsafe-fixes` in memory (None where the check has no fix they could
    apply) and, for a Python file, its facts (`report/facts.py`) as plain tuples."""
    from neuron_migrate.engine.pipeline import process_file, read_source
    from neuron_migrate.engine.variants import variants
    from neuron_migrate.report.facts import fact_nodes, facts_of, facts_of_nodes

    python = display.endswith((".py", ".pyi"))
    raw = data.decode("utf-8", errors="replace") if python else ""  # what facts_of reads
    decoded = read_source(path, display, settings, data)
    if isinstance(decoded, Finding):
        return FileResult(display, (decoded,)), (None, None, _plain(facts_of(raw)) if python else None)
    text = decoded[0]
    try:
        found = variants(text, display, settings)
    except (Exception, SystemExit):  # noqa: BLE001 - one file's bug: each run apart, process_file says what failed (NM908)
        check = process_file(path, display, settings, write=False, data=data)
        fixes = {f.fix.applicability for f in check.findings if f.fix is not None}
        run = lambda unsafe: process_file(  # noqa: E731 - used just below
            path, display, replace(settings, fix=True, unsafe_fixes=unsafe), write=False, data=data
        )
        safe = run(False) if Safety.SAFE in fixes else None
        unsafe = run(True) if fixes & {Safety.SAFE, Safety.UNSAFE} else None
        return check, (safe, unsafe, _plain(facts_of(raw)) if python else None)
    if not python:
        return found.check, (found.safe, found.unsafe, None)
    if found.analysis is not None and raw == text:  # the text facts_of would parse: its tree is at hand
        facts = facts_of_nodes(fact_nodes(found.analysis.tree, raw))
    else:
        facts = facts_of(raw)
    return found.check, (found.safe, found.unsafe, _plain(facts))


def _plain(facts: Any) -> tuple[Any, ...]:
    return (facts.imports, facts.neuron)


def _relation(results: Sequence[FileResult], unsafe_fixes: bool, after_fix: int, after_unsafe: int) -> Relation:
    """The counts `check` prints for the same settings (see `output.text.summary`)."""
    remaining = [f for r in results for f in r.findings]
    safe = sum(1 for f in remaining if applicable(f, unsafe_fixes))
    unsafe = sum(1 for f in remaining if needs_unsafe(f, unsafe_fixes))
    return Relation(len(remaining), safe, unsafe, after_fix, after_unsafe)


def _join(results: Sequence[FileResult], extra: Sequence[Finding]) -> list[FileResult]:
    """The smoke run's findings added to the results of their files (or as new results)."""
    by_path: dict[str, list[Finding]] = {}
    for finding in extra:
        by_path.setdefault(finding.path, []).append(finding)
    joined = [replace(r, findings=(*r.findings, *by_path.pop(r.path))) if r.path in by_path else r for r in results]
    return joined + [FileResult(path, tuple(found)) for path, found in sorted(by_path.items())]


def _kinds_index(request: Any, cwd: Path) -> Path | None:
    """The kinds cache of this configuration, next to the result cache's indexes."""
    if request.cache_dir is None:
        return None
    from neuron_migrate.config import plan_runs
    from neuron_migrate.run import cache

    groups = plan_runs(request.paths or (Path("."),), request.overrides, request.config_file)
    keys = [cache.config_key(settings, cwd, cache.rules_stamp(settings.rule_sources)) for _, settings in groups]
    name = hashlib.blake2b("\n".join(keys).encode(), digest_size=12).hexdigest()
    folder = request.cache_dir if request.cache_dir.is_absolute() else cwd / request.cache_dir
    return folder / f"report-kinds-{name}.idx"


def _load_kinds(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        data = path.read_bytes()
        payload = data[len(_KINDS_MAGIC) + 16 :]
        if data.startswith(_KINDS_MAGIC) and hashlib.blake2b(payload, digest_size=16).digest() == data[8:24]:
            loaded = marshal.loads(payload)
            return loaded if isinstance(loaded, dict) else {}
    except (OSError, ValueError, EOFError, TypeError):
        pass
    return {}


def _save_kinds(path: Path | None, entries: dict[str, Any]) -> None:
    if path is None:
        return
    from neuron_migrate.engine.writeback import write_atomic

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = marshal.dumps(entries)
        write_atomic(path, _KINDS_MAGIC + hashlib.blake2b(payload, digest_size=16).digest() + payload)
    except OSError:
        return


def _source_digest(result: FileResult) -> str | None:
    if result.source is None:
        return None
    return hashlib.blake2b(result.source.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _fix_kinds_cached(
    results: Sequence[FileResult], request: Any, cwd: Path, runs: Mapping[str, Sequence[Any]] | None = None
) -> tuple[dict[tuple[Any, ...], str], tuple[int, int]]:
    """`fix_kinds` for the files with findings, and the findings left after `--fix` and after
    `--fix --unsafe-fixes`. Only files with findings are fixed in memory (the rest have nothing
    to fix), and what that found is kept per file content in the cache folder. `runs` holds
    the (`--fix`, `--fix --unsafe-fixes`) results the check itself computed, by path (see
    `report_file`); the other files are run here."""
    index = _kinds_index(request, cwd)
    cached = _load_kinds(index)
    kinds: dict[tuple[Any, ...], str] = {}
    left = [0, 0]
    todo: list[FileResult] = []
    fresh: dict[str, Any] = {}
    for result in results:
        if not result.findings:
            continue
        digest = _source_digest(result)
        entry = cached.get(result.path)
        if digest is not None and entry is not None and entry[0] == digest:
            kinds.update(dict(entry[1]))
            left[0] += entry[2]
            left[1] += entry[3]
            fresh[result.path] = entry
        else:
            todo.append(result)
    if todo:
        runs = dict(runs or {})
        rest = [r for r in todo if r.path not in runs and _readable(r)]
        if rest:
            runs.update(_fix_runs(rest, request, cwd))
        safe_run, unsafe_run = [], []
        for result in todo:  # no run where the check has nothing it could apply: the file stays
            safe, unsafe = runs.get(result.path, (None, None))  # NM903/NM904: never read, nothing to run
            safe_run.append(safe if safe is not None else replace(result, fixed=()))
            unsafe_run.append(unsafe if unsafe is not None else safe_run[-1])
        found = fix_kinds(todo, safe_run, unsafe_run)
        left_safe = {r.path: len(r.findings) for r in safe_run}
        left_unsafe = {r.path: len(r.findings) for r in unsafe_run}
        for result in todo:
            mine = tuple((f.sort_key, found[f.sort_key]) for f in result.findings)
            kinds.update(mine)
            entry = (_source_digest(result), mine, left_safe.get(result.path, 0), left_unsafe.get(result.path, 0))
            left[0] += entry[2]
            left[1] += entry[3]
            if entry[0] is not None:
                fresh[result.path] = entry
    if fresh != cached:
        _save_kinds(index, fresh)
    return kinds, (left[0], left[1])


def _readable(result: FileResult) -> bool:
    """Whether the check read the file: one it could not read (NM903) or refused for its size
    (NM904 alone) has no fix to run."""
    return result.source is not None


def _fix_runs(todo: Sequence[FileResult], request: Any, cwd: Path) -> dict[str, Sequence[Any]]:
    """(`--fix`, `--fix --unsafe-fixes`) results of `todo`, whose check the result cache
    answered (so its work is not at hand): checked again by `report_file`, under the same
    settings as the check (those of the folders named, as `check . --fix` applies them)."""
    from neuron_migrate.run import workflow

    learnt: dict[str, Any] = {}
    again = replace(request, cache_dir=None, only=frozenset(r.path for r in todo))
    workflow.check_paths(again, cwd, worker=report_file, extras=learnt)
    return {path: extra[:2] for path, (extra, _) in learnt.items()}


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
