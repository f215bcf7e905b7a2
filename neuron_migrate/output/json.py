"""JSON shaped like Ruff's, so tools that read Ruff's JSON read ours."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from neuron_migrate.model import FileResult, Finding, Position
from neuron_migrate.output.base import PLAIN, RenderOptions, all_findings


def _location(position: Position) -> dict[str, int]:
    return {"row": position.line, "column": position.column}


def finding_to_dict(finding: Finding) -> dict[str, Any]:
    fix: dict[str, Any] | None = None
    if finding.fix is not None and finding.fix.edits:  # an applicability only with edits to apply
        fix = {
            "applicability": finding.fix.applicability.value,
            "message": finding.fix.message,
            "edits": [
                {"content": e.content, "location": _location(e.start), "end_location": _location(e.end)}
                for e in finding.fix.edits
            ],
        }
        if finding.fix.requires:  # the fixes to make first (the uses of an import that then goes)
            fix["requires"] = [{"code": r.code, "location": _location(r.start)} for r in finding.fix.requires]
        if finding.fix.requires or not finding.fix.certain:  # False: known only once those are made
            fix["certain"] = finding.fix.certain
    return {
        "cell": finding.cell,
        "code": finding.code,
        "name": finding.name,
        "message": finding.message,
        "severity": finding.severity.value,
        "category": finding.category,
        "filename": finding.path,
        "location": _location(finding.start),
        "end_location": _location(finding.end),
        "fix": fix,
        "noqa_row": finding.start.line,
        "url": finding.url,
    }


def render(results: Sequence[FileResult], options: RenderOptions = PLAIN) -> str:
    return json.dumps([finding_to_dict(f) for f in all_findings(results)], indent=2) + "\n"
