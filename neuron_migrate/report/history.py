"""Which files had findings before the migration: from git (`report --since REF`: the file as it
was at REF, checked with today's settings) or from a baseline file (`report --baseline FILE`, as
`check --write-baseline` wrote it). A file that had findings then and has none now is *done*."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from neuron_migrate.model import FileResult


def had_findings_at(ref: str, results: Sequence[FileResult], request: Any, cwd: Path) -> frozenset[str]:
    """Display paths of the files without findings now that had findings at git `ref`.

    Only files changed since `ref` can differ; each is checked as it was at `ref` (its text from
    `git show`), with the settings that govern it today.
    """
    from neuron_migrate.config import plan_runs
    from neuron_migrate.engine.pipeline import check_source
    from neuron_migrate.run import gitdiff

    root = gitdiff.repository_root(cwd)
    commit = gitdiff.resolve_ref(ref, cwd)
    changed = gitdiff.changed_lines(ref, cwd)
    done: set[str] = set()
    for result in results:
        if result.findings or not gitdiff.is_changed(result.path, changed):
            continue
        relative = Path(os.path.relpath(os.path.abspath(result.path), root)).as_posix()
        old = _show(commit, relative, root)
        if old is None:
            continue  # added since `ref`: it was not there to migrate
        (_, settings), *_ = plan_runs((Path(result.path),), request.overrides, request.config_file)
        if check_source(old, result.path, settings).findings:
            done.add(result.path)
    return frozenset(done)


def _show(commit: str, relative: str, root: Path) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "show", f"{commit}:{relative}"],
            cwd=root,
            capture_output=True,
            check=False,
        )
    except FileNotFoundError:
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", errors="replace")


def had_findings_in_baseline(path: Path, results: Sequence[FileResult]) -> frozenset[str]:
    """Display paths of the files without findings now that the baseline file records findings for."""
    from neuron_migrate.run import baseline

    known = baseline.load(path)
    root = path.resolve().parent
    recorded = {key[0] for key, count in known.items() if count > 0}
    return frozenset(
        r.path
        for r in results
        if not r.findings and Path(os.path.relpath(os.path.abspath(r.path), root)).as_posix() in recorded
    )
