"""GitLab Code Quality (a subset of the Code Climate issue format), for `artifacts:reports:codequality`.

Paths are relative to the repository root; columns count code points (Code Climate counts
characters), 1-based, with the end column exclusive as everywhere in neuron-migrate.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from neuron_migrate.model import FileResult, Finding, Severity
from neuron_migrate.output.base import (
    PLAIN,
    RenderOptions,
    all_findings,
    line_hashes,
    located_message,
    repo_path,
    sources,
)
from neuron_migrate.output.raw_notebook import notebook_texts, raw_findings

_SEVERITY = {Severity.ERROR: "critical", Severity.WARNING: "major", Severity.INFO: "minor"}


def fingerprint(path: str, code: str, line_hash: str, occurrence: int) -> str:
    """Stable across line moves (no line number) and unique within a report (the occurrence)."""
    return hashlib.sha256(f"{path}\0{code}\0{line_hash}\0{occurrence}".encode("utf-8", "surrogateescape")).hexdigest()[
        :32
    ]


def issue(finding: Finding, path: str, print_id: str) -> dict[str, Any]:
    return {
        "type": "issue",
        "check_name": finding.code,
        "description": f"{finding.code} {located_message(finding)}",
        "categories": ["Bug Risk"] if finding.category == "tool" else ["Compatibility"],
        "severity": _SEVERITY[finding.severity],
        "fingerprint": print_id,
        "location": {
            "path": path,
            "positions": {
                "begin": {"line": finding.start.line, "column": finding.start.column},
                "end": {"line": finding.end.line, "column": finding.end.column},
            },
        },
    }


def render(results: Sequence[FileResult], options: RenderOptions = PLAIN) -> str:
    findings = all_findings(results)
    hashes = line_hashes(findings, sources(results))
    issues = []
    placed = raw_findings(findings, notebook_texts(results))
    for finding, (digest, occurrence) in zip(placed, hashes):
        path = repo_path(finding.path, options.root, options.cwd)
        issues.append(issue(finding, path, fingerprint(path, finding.code, digest, occurrence)))
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"
