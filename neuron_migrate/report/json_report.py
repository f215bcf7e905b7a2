"""The report as JSON; the shape is `docs/report-schema.json` (documented in docs/report.md)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from neuron_migrate.report.model import HOURS_PER_DAY, STATUS_MEANING, STATUSES, WORK_ORDER, FileRow, Item, Report

SCHEMA_VERSION = 2


def _item(item: Item) -> dict[str, Any]:
    return {
        "filename": item.path,
        "row": item.line,
        "column": item.column,
        "cell": item.cell,
        "code": item.code,
        "message": item.message,
        "kind": item.kind,
        "guide": item.guide,
        "tier": item.tier or None,
        "minutes": item.minutes,
    }


def _counts(row: Any) -> dict[str, Any]:
    return {
        "key": row.key,
        "label": row.label,
        "safe": row.safe,
        "unsafe": row.unsafe,
        "manual": row.manual,
        "total": row.total,
    }


def _file(row: FileRow) -> dict[str, Any]:
    return {
        "filename": row.path,
        "folder": row.folder,
        "status": row.status,
        "safe": row.safe,
        "unsafe": row.unsafe,
        "manual": row.manual,
        "total": row.total,
        "blockers": row.blockers,
        "imported_by": row.importers,
        "minutes": row.minutes,
        "inference_only": row.inference_only,
    }


def _library(report: Report) -> dict[str, Any] | None:
    lib = report.library
    if lib is None:
        return None
    return {
        "name": lib.name,
        "concepts": [
            {
                "concept": c.key,
                "label": c.label,
                "codes": list(c.codes),
                "inference": c.inference,
                "files": c.files,
                "findings": c.findings,
                "manual": c.left,
                "minutes": c.minutes,
            }
            for c in lib.concepts
        ],
        "files": [
            {
                "filename": f.path,
                "uses": [{"concept": key, "findings": count} for key, count in f.uses],
                "findings": f.findings,
                "manual": f.left,
                "minutes": f.minutes,
            }
            for f in lib.files
        ],
    }


def _comparison(report: Report) -> dict[str, Any] | None:
    c = report.comparison
    if c is None:
        return None
    return {
        "old_date": c.old_date,
        "status_counts": {
            "old": dict(zip(STATUSES, c.old_statuses)),
            "new": dict(zip(STATUSES, c.new_statuses)),
        },
        "findings": {"old": c.old_findings, "new": c.new_findings},
        "blockers": {"old": c.old_blockers, "new": c.new_blockers},
        "newly_done": list(c.newly_done),
        "more_work": [{"filename": f, "old": o, "new": n} for f, o, n in c.worse],
        "rules": [{"code": code, "old": old, "new": new} for code, old, new in c.rules],
    }


def data(report: Report) -> dict[str, Any]:
    """The report as plain JSON data."""
    run = report.run
    estimate = report.estimate
    relation = report.relation
    return {
        "schema_version": SCHEMA_VERSION,
        "settings": {
            "tool_version": run.tool_version,
            "target_version": run.target_version,
            "selection": run.selection,
            "date": run.date,
            "paths": list(run.paths),
            "from": list(run.families),
            "target": run.target,
            "history": run.history,
        },
        "statuses": list(STATUSES),
        "status_meaning": dict(STATUS_MEANING),
        "status_counts": report.status_counts(),
        "check": None if relation is None else asdict(relation),
        "totals": report.kind_totals(),
        "effort": {
            "estimate": True,
            "unit": "minutes per manual finding, by concept or by effort tier",
            "table": dict(report.effort),
            "rows": [
                {
                    "key": r.key,
                    "label": r.label,
                    "basis": "tier" if r.tier else "concept",
                    "fixed": r.fixed,
                    "manual": r.left,
                    "minutes_each": r.minutes_each,
                    "minutes": r.minutes,
                }
                for r in report.estimate_rows
            ],
            "total_minutes": report.total_minutes,
            "range_minutes": [estimate.low, estimate.high],
            "hours": [round(h, 1) for h in estimate.hours],
            "person_days": [round(d, 1) for d in estimate.days],
            "hours_per_day": HOURS_PER_DAY,
        },
        "blockers": {
            "count": report.blocker_count,
            "groups": [
                {
                    "concept": g.concept,
                    "label": g.label,
                    "guide": g.guide,
                    "count": g.count,
                    "first": [_item(i) for i in g.first],
                }
                for g in report.blockers
            ],
        },
        "work_order": WORK_ORDER,
        "work": [_file(r) for r in report.work],
        "library": _library(report),
        "folders": [
            {
                "folder": f.path,
                "depth": f.depth,
                "files": f.files,
                "status_counts": dict(zip(STATUSES, f.statuses)),
                "safe": f.safe,
                "unsafe": f.unsafe,
                "manual": f.manual,
                "blockers": f.blockers,
                "minutes": f.minutes,
            }
            for f in report.folders
        ],
        "comparison": _comparison(report),
        "families": [_counts(r) for r in report.families],
        "rules": [_counts(r) for r in report.rules],
        "manual": [
            {
                "concept": g.concept,
                "label": g.label,
                "minutes_each": g.minutes_each,
                "minutes": g.minutes,
                "items": [_item(i) for i in g.items],
            }
            for g in report.manual
        ],
        "packaging": [_item(i) for i in report.packaging],
        "beta_limits": [{"limit": label, "items": [_item(i) for i in items]} for label, items in report.beta_limits],
        "smoke": asdict(report.smoke) if report.smoke is not None else None,
        "files": [_file(r) for r in report.files],
    }


def render(report: Report) -> str:
    return json.dumps(data(report), indent=1, ensure_ascii=False) + "\n"
