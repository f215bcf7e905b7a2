"""Run the per-file work over many files, in this process or a process pool."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor

from neuron_migrate.engine.files import Target
from neuron_migrate.engine.runner import process_file
from neuron_migrate.model import FileResult
from neuron_migrate.settings import Settings


def _work(args: tuple[Target, Settings, bool]) -> FileResult:
    target, settings, write = args
    return process_file(target.path, target.display, settings, write=write)


def run_targets(
    targets: Sequence[Target],
    settings: Settings,
    jobs: int = 1,
    write: bool = True,
    on_done: Callable[[FileResult], object] | None = None,
) -> list[FileResult]:
    """Process every target; results come back in the order of `targets`.

    `on_done` is called with each result as it arrives (for a progress bar).
    """
    work = [(t, settings, write) for t in targets]
    jobs = max(1, min(jobs, len(work), os.cpu_count() or 1))
    if jobs == 1:
        return [_report(_work(item), on_done) for item in work]
    chunk = max(1, len(work) // (jobs * 8))
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return [_report(result, on_done) for result in pool.map(_work, work, chunksize=chunk)]


def _report(result: FileResult, on_done: Callable[[FileResult], object] | None) -> FileResult:
    if on_done is not None:
        on_done(result)
    return result
