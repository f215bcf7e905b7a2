"""SARIF 2.1.0, as GitHub code scanning and other SARIF viewers read it.

Columns count Unicode code points (`run.columnKind`), end columns are exclusive, and paths are
relative to the repository root (`%SRCROOT%`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any
from urllib.parse import quote

from neuron_migrate import __version__
from neuron_migrate.catalogue import RuleSpec
from neuron_migrate.model import FileResult, Finding, Position, Severity
from neuron_migrate.output.base import (
    PLAIN,
    TOOL_NAME,
    TOOL_URL,
    RenderOptions,
    all_findings,
    line_hashes,
    located_message,
    repo_path,
    sources,
)
from neuron_migrate.output.raw_notebook import notebook_texts, raw_findings

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
_PROBLEM_SEVERITY = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "recommendation"}


def _help(spec: RuleSpec) -> dict[str, str]:
    doc = spec.doc
    sections = [
        ("What it does", doc.get("what")),
        ("Why", doc.get("why")),
        ("Fix safety", doc.get("fix_safety")),
        ("Known problems", doc.get("known_problems")),
    ]
    present = [(title, str(body)) for title, body in sections if body]
    text = "\n\n".join(f"{title}: {body}" for title, body in present)
    markdown = "\n\n".join(f"**{title}.** {body}" for title, body in present)
    references = [str(r) for r in doc.get("references", ())]
    if references:
        text += "\n\nReferences: " + " ".join(references)
        markdown += "\n\n**References.** " + " ".join(f"<{r}>" for r in references)
    return {"text": f"{text}\n\nSee {spec.url}", "markdown": f"{markdown}\n\n[{spec.code} ({spec.name})]({spec.url})"}


def _rule_from_spec(spec: RuleSpec) -> dict[str, Any]:
    what = str(spec.doc.get("what") or spec.message)
    return {
        "id": spec.code,
        "name": spec.name,
        "shortDescription": {"text": what},
        "fullDescription": {"text": str(spec.doc.get("why") or what)},
        "help": _help(spec),
        "helpUri": spec.url,
        "defaultConfiguration": {"level": _LEVEL[spec.severity]},
        "properties": {
            "category": spec.category,
            "fix": spec.safety.value,
            "precision": "very-high" if spec.detector == "qualified" else "high",
            "problem.severity": _PROBLEM_SEVERITY[spec.severity],
            "tags": [spec.category, "torch-xla", "torchneuron"],
        },
    }


def _rule_from_finding(finding: Finding) -> dict[str, Any]:
    """Metadata for a code the catalogue lacks (such as a smoke-run finding), from the finding."""
    rule: dict[str, Any] = {
        "id": finding.code,
        "name": finding.name,
        "shortDescription": {"text": finding.name.replace("_", " ")},
        "fullDescription": {"text": finding.message},
        "help": {"text": finding.message, "markdown": finding.message},
        "defaultConfiguration": {"level": _LEVEL[finding.severity]},
        "properties": {
            "category": finding.category,
            "precision": "high",
            "problem.severity": _PROBLEM_SEVERITY[finding.severity],
            "tags": [finding.category, "torch-xla", "torchneuron"],
        },
    }
    if finding.url:
        rule["helpUri"] = finding.url
    return rule


def rules_for(findings: Sequence[Finding], specs: Sequence[RuleSpec]) -> list[dict[str, Any]]:
    """Every catalogue rule plus every other code the findings carry, sorted by code."""
    rules = {spec.code: _rule_from_spec(spec) for spec in specs if not spec.retired}
    for finding in findings:
        if finding.code not in rules:
            rules[finding.code] = _rule_from_finding(finding)
    return [rules[code] for code in sorted(rules)]


def _region(start: Position, end: Position) -> dict[str, int]:
    """A SARIF region; an empty span becomes the rest of the start line."""
    region = {"startLine": start.line, "startColumn": start.column}
    if end > start:
        region.update(endLine=end.line, endColumn=end.column)
    return region


def _artifact(path: str, root: str | None, cwd: str | None) -> dict[str, str]:
    relative = repo_path(path, root, cwd)
    if PurePath(relative).is_absolute():  # outside the repository: an absolute file URI
        return {"uri": PurePath(relative).as_uri()}
    # RFC 3986: a URI is bytes percent-encoded; a name's bytes that are not UTF-8 come back from
    # their surrogate escapes (os.fsdecode), so `b\xff.py` is `b%FF.py`, never a crash
    return {"uri": quote(relative.encode("utf-8", "surrogateescape"), safe="/"), "uriBaseId": SRCROOT}


def _fixes(finding: Finding, artifact: dict[str, str]) -> list[dict[str, Any]]:
    if finding.fix is None or not finding.fix.edits:
        return []  # no fix, or one only a transform's run would spell (the formats that show edits run it)
    replacements = [
        {
            "deletedRegion": {
                "startLine": e.start.line,
                "startColumn": e.start.column,
                "endLine": e.end.line,
                "endColumn": e.end.column,
            },
            "insertedContent": {"text": e.content},
        }
        for e in finding.fix.edits
    ]
    fix: dict[str, Any] = {
        "description": {"text": f"{finding.fix.message} ({finding.fix.applicability.value} fix)"},
        "artifactChanges": [{"artifactLocation": artifact, "replacements": replacements}],
    }
    if finding.fix.requires:  # the fixes to make first (the uses of an import that then goes)
        fix["properties"] = {
            "requires": [
                {"ruleId": r.code, "startLine": r.start.line, "startColumn": r.start.column}
                for r in finding.fix.requires
            ],
            "certain": finding.fix.certain,
        }
    return [fix]


def _result(
    finding: Finding, index: int, fingerprint: str, root: str | None, cwd: str | None, cell: int | None = None
) -> dict[str, Any]:
    """One result; a notebook finding comes placed in the raw file already, `cell` saying which cell."""
    artifact = _artifact(finding.path, root, cwd)
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "ruleIndex": index,
        "level": _LEVEL[finding.severity],
        "message": {"text": located_message(finding)},
        "locations": [
            {"physicalLocation": {"artifactLocation": artifact, "region": _region(finding.start, finding.end)}}
        ],
        "partialFingerprints": {"primaryLocationLineHash": fingerprint},
    }
    fixes = _fixes(finding, artifact)
    if fixes:
        result["fixes"] = fixes
    properties: dict[str, Any] = {"category": finding.category}
    if fixes and finding.fix is not None:
        properties["fixApplicability"] = finding.fix.applicability.value
    if cell is not None:
        properties["cell"] = cell
    result["properties"] = properties
    return result


def _base_ids(root: str | None) -> dict[str, Any]:
    if root is None or not PurePath(root).is_absolute():
        return {SRCROOT: {"description": {"text": "The root of the repository that was checked"}}}
    uri = PurePath(root).as_uri()
    return {SRCROOT: {"uri": uri if uri.endswith("/") else uri + "/"}}


def document(
    results: Sequence[FileResult],
    root: str | None = None,
    cwd: str | None = None,
    rules: Sequence[RuleSpec] = (),
) -> dict[str, Any]:
    """The SARIF log as a dict. `root` and `cwd` are absolute; the results' paths are relative to `cwd`."""
    findings = all_findings(results)
    rule_list = rules_for(findings, rules)
    index = {rule["id"]: i for i, rule in enumerate(rule_list)}
    hashes = line_hashes(findings, sources(results))
    placed = raw_findings(findings, notebook_texts(results))
    sarif_results = [
        _result(raw, index[f.code], f"{digest}:{occurrence}", root, cwd, f.cell)
        for f, raw, (digest, occurrence) in zip(findings, placed, hashes)
    ]
    driver = {
        "name": TOOL_NAME,
        "version": __version__,
        "semanticVersion": __version__,
        "informationUri": TOOL_URL,
        "rules": rule_list,
    }
    run = {
        "tool": {"driver": driver},
        "originalUriBaseIds": _base_ids(root),
        "columnKind": "unicodeCodePoints",
        "results": sarif_results,
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render(results: Sequence[FileResult], options: RenderOptions = PLAIN) -> str:
    document_ = document(results, options.root, options.cwd, options.rules)
    return json.dumps(document_, indent=2, ensure_ascii=False) + "\n"
