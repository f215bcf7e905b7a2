"""`--shard K/N`: a deterministic partition of the files by path, for N parallel CI jobs."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

from neuron_migrate.run.discover import Target


class ShardError(ValueError):
    """A `--shard` value that is not `K/N` with 1 <= K <= N."""


def parse_shard(value: str) -> tuple[int, int]:
    """`"2/4"` -> (2, 4); K counts from 1, as CI matrices usually do."""
    index, sep, count = value.partition("/")
    try:
        k, n = int(index), int(count)
    except ValueError:
        raise ShardError(f"expected K/N such as 1/4, got {value!r}") from None
    if not sep or n < 1 or not 1 <= k <= n:
        raise ShardError(f"expected K/N with 1 <= K <= N, got {value!r}")
    return k, n


def shard_of(display: str, count: int) -> int:
    """The shard (1-based) a display path belongs to; the same on every machine and run."""
    return zlib.crc32(display.encode("utf-8")) % count + 1


def select_shard(targets: Sequence[Target], k: int, n: int) -> list[Target]:
    """The targets of shard `k` of `n`. The N shards are disjoint and together cover every target."""
    return [t for t in targets if shard_of(t.display, n) == k]
