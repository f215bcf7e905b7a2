"""Run the per-file work over many files: cached results first, then this process or a pool."""

from __future__ import annotations

import contextlib
import gc
import marshal
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from neuron_migrate.model import FileResult
from neuron_migrate.run import cache_codec as codec
from neuron_migrate.run import signals
from neuron_migrate.run.cache import Stamp, read_stamped
from neuron_migrate.run.discover import Target
from neuron_migrate.settings import Settings

if TYPE_CHECKING:
    from neuron_migrate.run.cache import ResultCache

_CHUNKS_PER_JOB = 16  # chunks per worker, of about equal bytes (see _chunks)
_MAX_CHUNK = 64
_MIN_FILES_PER_JOB = 8  # fewer files are checked sooner than a pool starts
_GC_THRESHOLDS = (100_000, 20, 100)  # default (700, 10, 10); see fewer_collections


OnDone = Callable[[FileResult], object]
# A file's work in place of `process_file` (never writing): (path, display, settings, bytes) ->
# (its result, something more it learnt). A module-level function, so a pool worker can run it.
Worker = Callable[[Path, str, Settings, bytes], tuple[FileResult, object]]


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask, a cgroup-limited container's
    share as the OS reports it), as Ruff picks its thread count; at least 1."""
    counted = getattr(os, "process_cpu_count", None)  # Python 3.13
    if counted is not None:
        return max(1, counted() or 1)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def run_targets(
    targets: Sequence[Target],
    settings: Settings,
    jobs: int = 1,
    write: bool = True,
    on_done: OnDone | None = None,
    cache: ResultCache | None = None,
    worker: Worker | None = None,
    extras: dict[str, object] | None = None,
) -> list[FileResult]:
    """Process every target; results come back in the order of `targets`.

    Results the cache holds for unchanged files are used as they are; the rest are computed
    and stored. `on_done` is called with each result as it arrives (for a progress bar).
    `worker` computes the files that were read, and what more it returns for each goes into
    `extras` by display path, with the stamp of the bytes read (the cache stores only the result).
    """
    with fewer_collections():  # decoding cached results allocates many objects and no garbage
        found = [cache.lookup(t.path, t.display) if cache is not None else None for t in targets]
    for result in found:
        if result is not None and on_done is not None:
            on_done(result)
    todo = [i for i, result in enumerate(found) if result is None]
    computed = _compute([targets[i] for i in todo], settings, jobs, write, on_done, worker)
    for i, (result, stamp, extra) in zip(todo, computed):
        found[i] = result
        if extras is not None and extra is not None:
            extras[targets[i].display] = (extra, stamp)
        if cache is not None:
            cache.store(targets[i].display, stamp, result)
    if cache is not None:
        cache.save()
    return [result for result in found if result is not None]


_Done = tuple[FileResult, Stamp | None, object]


def _compute(
    targets: list[Target],
    settings: Settings,
    jobs: int,
    write: bool,
    on_done: OnDone | None,
    worker: Worker | None = None,
) -> list[_Done]:
    if not targets:
        return []
    work = [(t, settings, write, worker) for t in targets]
    jobs = max(1, min(jobs, len(work) // _MIN_FILES_PER_JOB, usable_cores()))
    with fewer_collections():
        _warm_up(settings)  # a forked pool inherits the indexed rules
        gc.freeze()  # the rules and the program live to the end: no collection rescans them
        if jobs == 1:
            return [_report(_work(item), on_done) for item in work]
        from concurrent.futures import ProcessPoolExecutor

        chunks = _chunks([t.path for t in targets], jobs)
        computed: list[_Done | None] = [None] * len(work)
        pool = ProcessPoolExecutor(max_workers=jobs, initializer=_start_worker, initargs=(settings, os.getpid()))
        try:
            # Futures, not `pool.map`: an ended map cancels its futures, which the pool's thread
            # then fails to mark broken (InvalidStateError, a traceback on stderr).
            futures = [pool.submit(_packed_chunk, [work[i] for i in chunk]) for chunk in chunks]
            for chunk, future in zip(chunks, futures):
                for i, (packed, stamp, extra) in zip(chunk, future.result()):
                    computed[i] = _report((_unpack(packed), stamp, _unpack_extra(extra)), on_done)
        except BaseException:  # SIGTERM, SIGHUP, Ctrl-C, a worker's error: no worker outlives the run
            signals.end_workers()
            raise
        finally:
            pool.shutdown()
        return [item for item in computed if item is not None]


def _chunks(paths: list[Path], jobs: int) -> list[list[int]]:
    """Indexes of `paths` in chunks of about equal bytes, largest files first.

    Large files go out first and alone, so no worker is left with one at the end; small files
    travel many to a chunk, so the pool is not flooded with tiny tasks.
    """
    sizes = [_size(path) for path in paths]
    budget = max(1, sum(sizes) // (jobs * _CHUNKS_PER_JOB))
    chunks: list[list[int]] = []
    current: list[int] = []
    total = 0
    for index in sorted(range(len(paths)), key=lambda i: -sizes[i]):
        current.append(index)
        total += sizes[index]
        if total >= budget or len(current) >= _MAX_CHUNK:
            chunks.append(current)
            current, total = [], 0
    return chunks + ([current] if current else [])


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _report(item: _Done, on_done: OnDone | None) -> _Done:
    if on_done is not None:
        on_done(item[0])
    return item


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Run the garbage collector less often while checking, then restore its thresholds.

    Results pile up as files are checked, and with the default thresholds full collections keep
    rescanning them, so the time per file would grow with the number of files. Reading cached
    results allocates many objects and no garbage, which sets collections off for nothing, and
    rescanning the results while the report is rendered would cost more than rendering it; so
    the CLI keeps these thresholds until it has printed the report.
    """
    before = gc.get_threshold()
    gc.set_threshold(*_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def _start_worker(settings: Settings, parent: int) -> None:
    signals.start_worker(parent)
    gc.set_threshold(*_GC_THRESHOLDS)
    _warm_up(settings)


def _warm_up(settings: Settings) -> None:
    """Load and index the enabled rules once per process."""
    from neuron_migrate.engine.ruleset import build_ruleset, enabled_codes

    build_ruleset(enabled_codes(settings), settings.target_version, settings.rule_sources, settings.target)


_Item = tuple[Target, Settings, bool, Worker | None]


def _work(item: _Item) -> _Done:
    """One file's result, the stamp of the bytes it was computed from (None if unread), and what
    more the worker learnt (None without one)."""
    from neuron_migrate.engine.pipeline import process_file

    target, settings, write, worker = item
    read = read_stamped(target.path, settings.max_file_bytes)
    if read is None:  # missing, unreadable, too large or not a file: say so, cache nothing
        return process_file(target.path, target.display, settings, write=write), None, None
    data, stamp = read
    if worker is not None:
        result, extra = worker(target.path, target.display, settings, data)
        return result, stamp, extra
    return process_file(target.path, target.display, settings, write=write, data=data), stamp, None


def _packed_chunk(items: list[_Item]) -> list[tuple[bytes | FileResult, Stamp | None, object]]:
    """`_work` in a pool worker: results travel compactly encoded (see `codec`)."""
    packed: list[tuple[bytes | FileResult, Stamp | None, object]] = []
    with signals.unwinding():
        for item in items:
            result, stamp, extra = _work(item)
            try:
                packed.append((codec.dumps(result), stamp, _pack_extra(extra)))
            except TypeError:
                packed.append((result, stamp, extra))
    return packed


def _unpack(packed: bytes | FileResult) -> FileResult:
    return codec.loads(packed) if isinstance(packed, bytes) else packed


def _pack_extra(extra: object) -> object:
    return None if extra is None else ("codec", marshal.dumps(codec.encode(extra)))


def _unpack_extra(packed: object) -> object:
    if isinstance(packed, tuple) and len(packed) == 2 and packed[0] == "codec":
        return codec.decode(marshal.loads(packed[1]))
    return packed
