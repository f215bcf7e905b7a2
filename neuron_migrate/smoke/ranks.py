"""Did the ranks train together? Collectives seen, and the ranks' parameter checksums compared.

No torch: reads the ranks' JSON reports (see `child/replicas.py` for what a rank writes).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from neuron_migrate.smoke.report import Collective, Replicas
from neuron_migrate.smoke.sites import MAX_SITES, Site

# Replicas kept in step by collectives are equal up to reduction order; ranks that trained on
# different data differ by about the learning rate times the gradient, far more than this.
RTOL = 1e-6
ATOL = 1e-9


def count_by_op(datas: Sequence[Mapping[str, Any]], key: str) -> dict[str, tuple[int, tuple[Site, ...]]]:
    """Each op of the ranks' `key` entries (`ops`, `collectives`): its total count over the ranks
    and the first few user lines that ran it, sorted by op name."""
    counts: dict[str, int] = {}
    sites: dict[str, dict[Site, None]] = {}
    for data in datas:
        for entry in data.get(key, ()):
            name = str(entry["op"])
            counts[name] = counts.get(name, 0) + int(entry["count"])
            bucket = sites.setdefault(name, {})
            for raw in entry.get("sites", ()):
                bucket.setdefault(Site.from_json(raw), None)
    return {name: (counts[name], tuple(sorted(sites[name]))[:MAX_SITES]) for name in sorted(counts)}


def merge_collectives(datas: Sequence[Mapping[str, Any]]) -> tuple[Collective, ...]:
    """The collectives of every rank, by op, with the first few user lines that ran them."""
    return tuple(Collective(name, count, sites) for name, (count, sites) in count_by_op(datas, "collectives").items())


def compare_replicas(datas: Sequence[Mapping[str, Any]], nproc: int) -> Replicas | None:
    """Compare the ranks' checksums; None for a one-rank run."""
    if nproc < 2:
        return None
    found = [d.get("checksums") for d in datas]
    sums = [s for s in found if s is not None]
    if len(found) < nproc or len(sums) < len(found):
        return Replicas("unchecked", 0, detail="not every rank stepped an optimizer")
    first, *others = sums
    names = [str(c["name"]) for c in first]
    if any([str(c["name"]) for c in other] != names for other in others):
        return Replicas("differ", 0, detail="the ranks train different sets of parameters")
    sharded = sum(1 for c in first if c.get("sharded"))
    for index, entry in enumerate(first):
        if entry.get("sharded"):
            continue
        for rank, other in enumerate(others, start=1):
            if not _same(entry, other[index]):
                detail = f"`{entry['name']}` differs between rank 0 and rank {rank}"
                return Replicas("differ", len(first) - sharded, sharded, detail)
    compared = len(first) - sharded
    detail = "" if compared else "every parameter is sharded"
    return Replicas("agree" if compared else "unchecked", compared, sharded, detail)


def _same(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> bool:
    if theirs.get("sharded"):
        return False
    return all(_close(float(ours[k]), float(theirs[k])) for k in ("sum", "abs"))


def _close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= ATOL + RTOL * max(abs(a), abs(b))
