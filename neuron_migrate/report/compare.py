"""`report --compare OLD.json`: what changed since an earlier JSON report (files newly done,
findings removed, blockers left). Reports of schema version 1 (before *blocked*) are read too."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from neuron_migrate.report.model import STATUSES, WORK, Comparison, Report

_RANK = {status: index for index, status in enumerate(STATUSES)}  # lower is more work


class CompareError(ValueError):
    """The earlier report cannot be read."""


def load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CompareError(f"{path}: cannot read the earlier report: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise CompareError(f"{path}: the earlier report is not valid JSON: {exc}") from None
    if (
        not isinstance(data, dict)
        or data.get("schema_version") not in (1, 2)
        or not isinstance(data.get("files"), list)
    ):
        raise CompareError(f"{path}: not a `neuron-migrate report --format json` file (schema version 1 or 2)")
    return data


def _statuses(files: Mapping[str, str]) -> tuple[int, ...]:
    return tuple(sum(1 for s in files.values() if s == status) for status in STATUSES)


def compare(old: Mapping[str, Any], report: Report) -> Comparison:
    before = {str(f["filename"]): str(f["status"]) for f in old["files"]}
    after = {row.path: row.status for row in report.files}
    newly_done = tuple(path for path, status in sorted(after.items()) if status == "done" and before.get(path) in WORK)
    worse = tuple(
        (path, before.get(path, "new"), status)
        for path, status in sorted(after.items())
        if status in WORK and (before.get(path) not in WORK or _RANK[status] < _RANK[before[path]])
    )
    old_rules = {str(r["key"]): int(r["total"]) for r in old.get("rules", [])}
    new_rules = {r.key: r.total for r in report.rules}
    rules = tuple(
        (code, old_rules.get(code, 0), new_rules.get(code, 0))
        for code in sorted({*old_rules, *new_rules})
        if old_rules.get(code, 0) != new_rules.get(code, 0)
    )
    old_blockers = int(old.get("blockers", {}).get("count", 0)) if isinstance(old.get("blockers"), dict) else 0
    return Comparison(
        old_date=str(old.get("settings", {}).get("date", "")),
        old_statuses=_statuses(before),
        new_statuses=_statuses(after),
        old_findings=sum(old_rules.values()),
        new_findings=sum(new_rules.values()),
        old_blockers=old_blockers,
        new_blockers=report.blocker_count,
        newly_done=newly_done,
        worse=worse,
        rules=rules,
    )


def with_comparison(report: Report, path: Path) -> Report:
    return replace(report, comparison=compare(load(path), report))
