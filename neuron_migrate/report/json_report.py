"""The report as JSON; the shape is `docs/report-schema.json` (documented in docs/report.md)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from neuron_migrate.report.model import STATUSES, Item, Report

SCHEMA_VERSION = 1


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


def data(report: Report) -> dict[str, Any]:
    """The report as plain JSON data."""
    run = report.run
    return {
        "schema_version": SCHEMA_VERSION,
        "settings": {
            "tool_version": run.tool_version,
            "target_version": run.target_version,
            "selection": run.selection,
            "date": run.date,
            "paths": list(run.paths),
        },
        "status_counts": report.status_counts(),
        "statuses": list(STATUSES),
        "files": [
            {
                "filename": r.path,
                "status": r.status,
                "safe": r.safe,
                "unsafe": r.unsafe,
                "manual": r.manual,
                "total": r.total,
            }
            for r in report.files
        ],
        "totals": report.kind_totals(),
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
        "effort": {
            "estimate": True,
            "unit": "minutes per manual finding",
            "table": dict(report.effort),
            "total_minutes": report.total_minutes,
        },
        "smoke": asdict(report.smoke) if report.smoke is not None else None,
    }


def render(report: Report) -> str:
    return json.dumps(data(report), indent=2, ensure_ascii=False) + "\n"
