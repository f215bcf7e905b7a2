"""reviewdog's Diagnostic Format (rdjson), with fixes as `suggestions`.

Unlike SARIF, rdjson counts columns in UTF-8 bytes (1-based, end exclusive), so code-point
columns are converted with each file's text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from neuron_migrate.analysis.source import SourceText
from neuron_migrate.model import FileResult, Finding, Position, Severity
from neuron_migrate.output.base import (
    PLAIN,
    TOOL_NAME,
    TOOL_URL,
    RenderOptions,
    all_findings,
    byte_column,
    line_of,
    located_message,
    sources,
)
from neuron_migrate.output.raw_notebook import notebook_texts, raw_findings

_SEVERITY = {Severity.ERROR: "ERROR", Severity.WARNING: "WARNING", Severity.INFO: "INFO"}


def _position(finding: Finding, position: Position, texts: Mapping[str, SourceText]) -> dict[str, int]:
    line_text = line_of(finding, texts, position.line)
    return {"line": position.line, "column": byte_column(line_text, position.column)}


def _range(finding: Finding, start: Position, end: Position, texts: Mapping[str, SourceText]) -> dict[str, Any]:
    return {"start": _position(finding, start, texts), "end": _position(finding, end, texts)}


def diagnostic(finding: Finding, texts: Mapping[str, SourceText]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "message": located_message(finding),
        "location": {"path": finding.path, "range": _range(finding, finding.start, finding.end, texts)},
        "severity": _SEVERITY[finding.severity],
        "code": {"value": finding.code, **({"url": finding.url} if finding.url else {})},
    }
    if finding.fix is not None and finding.fix.edits:
        out["suggestions"] = [
            {"range": _range(finding, edit.start, edit.end, texts), "text": edit.content} for edit in finding.fix.edits
        ]
    return out


def render(results: Sequence[FileResult], options: RenderOptions = PLAIN) -> str:
    texts = sources(results)
    notebooks = notebook_texts(results)
    texts.update((path, SourceText(text)) for path, text in notebooks.items())
    findings = raw_findings(all_findings(results), notebooks)
    document = {
        "source": {"name": TOOL_NAME, "url": TOOL_URL},
        "diagnostics": [diagnostic(f, texts) for f in findings],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
