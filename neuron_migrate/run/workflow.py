"""One `check` run: config per path, discovery, the engine, then the run-wide filters.

`--since` and `--baseline` filter what is reported across the whole run; suppressions and
per-file-ignores are applied per file inside the engine (`engine/suppress.py`). Printing and
exit codes stay in `cli/`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neuron_migrate.config import (
    ConfigChoice,
    ConfigError,
    Overrides,
    config_for,
    output_format,
    plan_runs,
)
from neuron_migrate.config_values import anchor_glob, check_selectors
from neuron_migrate.model import FileResult
from neuron_migrate.run.cache import CACHE_DIR_NAME, open_cache
from neuron_migrate.run.discover import Target, discover, display_path, resolve
from neuron_migrate.run.parallel import Worker, run_targets, usable_cores
from neuron_migrate.run.shard import select_shard

if TYPE_CHECKING:
    from neuron_migrate.run import gitdiff


class UsageError(ValueError):
    """Flags that cannot be combined."""


def __getattr__(name: str) -> Any:
    """`USER_ERRORS`: the errors the CLI reports as one line with exit code 2, never as a
    traceback. Built on first use (an `except` clause reads it only when something was raised),
    as `baseline` and `gitdiff` are imported only by runs that use them."""
    if name == "USER_ERRORS":
        from neuron_migrate.run import baseline, gitdiff

        return (ConfigError, gitdiff.GitError, baseline.BaselineError, UsageError)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


ProgressFactory = Callable[[int], Callable[[FileResult], object] | None]


@dataclass(frozen=True)
class Request:
    """What the command line asked for, beyond the per-file Settings."""

    paths: tuple[Path, ...]
    overrides: Overrides
    config_file: ConfigChoice | None = None  # `--config`: a file, `KEY = VALUE` pairs
    jobs: int = 1
    write: bool = True  # write fixes back (False for --diff)
    since: str | None = None
    baseline: Path | None = None
    cache_dir: Path | None = None  # None: no result cache
    shard: tuple[int, int] | None = None  # (K, N): only shard K of N
    only: frozenset[str] | None = None  # only the files of these display paths (`report`'s second look)


def _codes(values: Sequence[str], flag: str) -> tuple[str, ...]:
    return check_selectors((code for value in values for code in value.split(",") if code.strip()), flag)


def overrides_from(options: Mapping[str, Any]) -> Overrides:
    """The CLI flags as config overrides; flags that were not given stay None or empty."""
    return Overrides(
        select=_codes(options["select"], "--select") or None,
        ignore=_codes(options["ignore"], "--ignore"),
        extend_select=_codes(options["extend_select"], "--extend-select"),
        exclude=tuple(options["exclude"]) or None,
        extend_exclude=tuple(options.get("extend_exclude") or ()),
        respect_gitignore=options.get("respect_gitignore"),
        target_version=options["target_version"],
        unsafe_fixes=options["unsafe_fixes"],
        output_format=options["output_format"],
        fix=bool(options["fix"] or options["diff"]),
        add_noqa=bool(options["add_noqa"]),
        families=options.get("families"),
        target=options.get("target"),
    )


def request_from(paths: Sequence[Path], options: Mapping[str, Any]) -> Request:
    """Validate flag combinations and bundle the request."""
    if options["add_noqa"] and (options["fix"] or options["diff"]):
        raise UsageError("--add-noqa cannot be combined with --fix or --diff")
    if options["add_noqa"] and options["stdin_filename"]:
        raise UsageError("--add-noqa cannot be combined with --stdin-filename")
    if options["baseline"] and options["write_baseline"]:
        raise UsageError("--baseline and --write-baseline cannot be combined")
    if options["since"] is not None and not options["since"].strip():
        raise UsageError("--since needs a git revision, e.g. --since origin/main")
    if options["stdin_filename"] and any(str(p) != "-" for p in paths):
        raise UsageError("--stdin-filename reads stdin; pass no PATHS (or `-`)")
    for flag in ("exclude", "extend_exclude"):
        for glob in options.get(flag) or ():
            anchor_glob(glob, Path("."), f"--{flag.replace('_', '-')}")  # ConfigError for an unusable glob
    return Request(
        paths=tuple(paths),
        overrides=overrides_from(options),
        config_file=options["config_file"],
        jobs=options["jobs"] or usable_cores(),
        write=not options["diff"],
        since=options["since"],
        baseline=options["baseline"],
        cache_dir=_cache_dir(options),
        shard=options.get("shard"),
    )


def _cache_dir(options: Mapping[str, Any]) -> Path | None:
    """The result cache folder: `--cache-dir` as given, else the default one unless it is a
    link out of the project (then no cache, with a warning)."""
    if options.get("no_cache", True):
        return None
    if options.get("cache_dir"):
        return Path(options["cache_dir"])
    from neuron_migrate.run.cache import default_folder_refusal

    refused = default_folder_refusal(Path(CACHE_DIR_NAME), Path.cwd())
    if refused is not None:
        import sys

        sys.stderr.write(f"neuron-migrate: warning: {refused}\n")
        return None
    return Path(CACHE_DIR_NAME)


def run_display(request: Request, cwd: Path) -> tuple[str, bool]:
    """(output format, unsafe fixes) for the report: the flags, else the config found from the
    current folder (as in Ruff, run-wide options come from there), else the defaults."""
    config = config_for(cwd, request.config_file)
    unsafe = request.overrides.unsafe_fixes
    return output_format(config, request.overrides), bool(config.unsafe_fixes if unsafe is None else unsafe)


def _batches(request: Request, cwd: Path) -> list[tuple[list[Target], Any]]:
    """Targets grouped by the Settings that govern them; a file is checked once."""
    seen: set[str] = set()
    batches = []
    groups = plan_runs(request.paths or (Path("."),), request.overrides, request.config_file)
    if len(groups) == 1:  # one discovery already lists each file once
        return [(discover(groups[0][0], groups[0][1], cwd), groups[0][1])]
    for paths, settings in groups:
        targets = []
        for target in discover(paths, settings, cwd):
            key = str(resolve(target.path)) if target.path.exists() else str(target.path)
            if key not in seen:
                seen.add(key)
                targets.append(target)
        batches.append((targets, settings))
    return batches


def files(request: Request, cwd: Path) -> list[str]:
    """`--show-files`: the display paths a check of the request would read, sorted."""
    return sorted(target.display for targets, _ in _batches(request, cwd) for target in targets)


def settings_for(request: Request) -> list[tuple[Path | None, tuple[Path, ...], Any]]:
    """`--show-settings`: (config file, paths, merged Settings, its enabled codes resolved) for
    each group of PATHS."""
    from dataclasses import replace

    from neuron_migrate.config import config_for as _config_for
    from neuron_migrate.engine.ruleset import enabled_codes

    groups = plan_runs(request.paths or (Path("."),), request.overrides, request.config_file)
    return [
        (_config_for(paths[0], request.config_file).path, paths, replace(settings, enabled=enabled_codes(settings)))
        for paths, settings in groups
    ]


def check_paths(
    request: Request,
    cwd: Path,
    progress: ProgressFactory | None = None,
    worker: Worker | None = None,
    extras: dict[str, object] | None = None,
) -> list[FileResult]:
    """Check (and maybe fix) every file under the request's paths, then apply run-wide filters.
    `worker` and `extras`: see `run_targets` (a file's work in place of `process_file`)."""
    started_ns = time.time_ns()
    known = _load_baseline(request.baseline) if request.baseline else None
    batches = _batches(request, cwd)
    if request.write:  # temporary files a killed run left next to the files it was fixing
        from neuron_migrate.engine.writeback import sweep

        for folder in sorted({t.path.parent for targets, _ in batches for t in targets}):
            sweep(folder, started_ns)
    changes = None
    if request.since:
        from neuron_migrate.run import gitdiff

        changes = gitdiff.changed_lines(request.since, cwd)
        batches = [([t for t in targets if gitdiff.is_changed(str(t.path), changes)], s) for targets, s in batches]
    if request.shard is not None:
        batches = [(select_shard(targets, *request.shard), s) for targets, s in batches]
    if request.only is not None:
        batches = [([t for t in targets if t.display in request.only], s) for targets, s in batches]
    on_done = progress(sum(len(t) for t, _ in batches)) if progress else None
    results: list[FileResult] = []
    for targets, settings in batches:
        missing = [t for t in targets if not os.path.lexists(t.path)]
        for target in missing:
            results.append(_missing(target))
            if on_done is not None:
                on_done(results[-1])
        targets = [t for t in targets if t not in missing] if missing else targets
        cache = open_cache(request.cache_dir, settings, cwd) if request.cache_dir is not None else None
        results.extend(
            run_targets(
                targets,
                settings,
                jobs=request.jobs,
                write=request.write,
                on_done=on_done,
                cache=cache,
                worker=worker,
                extras=extras,
            )
        )
    results.sort(key=lambda r: r.path)
    return _filter(results, request, cwd, changes, known)


def _missing(target: Target) -> FileResult:
    """A path named on the command line that does not exist: neither a file nor a folder."""
    from neuron_migrate.engine.check import tool_finding

    message = "Check this path; there is no file or folder by this name"
    return FileResult(target.display, (tool_finding(target.display, "NM903", message),))


def _load_baseline(path: Path) -> Any:
    from neuron_migrate.run import (
        baseline,  # imported only by runs that name a baseline
    )

    return baseline.load(path)


def _filter(
    results: list[FileResult], request: Request, cwd: Path, changes: gitdiff.Changes | None, known: Any
) -> list[FileResult]:
    if not (request.since or request.baseline):
        return results
    from neuron_migrate.run import baseline, gitdiff

    if request.since and changes is not None:
        if request.write and any(r.changed for r in results):
            changes = gitdiff.changed_lines(request.since, cwd)  # fixes moved lines; diff again
        results = gitdiff.keep_changed(results, changes)
    if request.baseline and known is not None:
        results = baseline.apply(results, known, request.baseline.resolve().parent)
    return results


def check_stdin(data: bytes | None, name: str, request: Request, cwd: Path) -> tuple[FileResult, bytes]:
    """Check code read from stdin as if it were the file NAME; returns the result and the
    bytes to print with --fix (the fixed code, or the input unchanged). `data` is None when
    stdin held more than the size limit (an NM904 finding)."""
    from neuron_migrate.analysis.source import (  # imported here: a plain check run skips them
        DecodeError,
        decode,
        encode,
    )
    from neuron_migrate.engine.check import tool_finding
    from neuron_migrate.engine.pipeline import check_source
    from neuron_migrate.run import baseline, gitdiff

    (_, settings), *_ = plan_runs((Path(name),), request.overrides, request.config_file)
    display = display_path(Path(name), cwd)
    if data is None:
        limit = settings.max_file_bytes // 2**20
        return FileResult(
            display, (tool_finding(display, "NM904", f"Split this code; stdin holds more than {limit} MiB"),)
        ), b""
    try:
        text, how = decode(data)
    except DecodeError as exc:
        return FileResult(
            display, (tool_finding(display, "NM902", f"Save this file in the encoding it declares; {exc}"),)
        ), data
    result = check_source(text, display, settings)
    output = encode(result.fixed_source or "", how) if result.changed else data
    known = baseline.load(request.baseline) if request.baseline else None
    changes = gitdiff.changed_lines(request.since, cwd) if request.since else None
    (result,) = _filter(
        [result],
        Request(request.paths, request.overrides, write=False, since=request.since, baseline=request.baseline),
        cwd,
        changes,
        known,
    )
    return result, output
