"""`--statistics`: how many findings each rule has, most frequent first, as Ruff prints them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from neuron_migrate.model import FileResult, Finding, Safety
from neuron_migrate.output.base import all_findings, applicable


@dataclass(frozen=True)
class RuleCount:
    code: str
    name: str
    count: int
    fixable: bool  # `--fix` (with the given `--unsafe-fixes`) fixes at least one of them
    unsafe_fixable: bool  # only `--unsafe-fixes` would fix some of them


def counts(results: Sequence[FileResult], unsafe_fixes: bool = False) -> list[RuleCount]:
    """One row per rule with remaining findings, by count (descending), then code."""
    by_code: dict[str, list[Finding]] = {}
    for finding in all_findings(results):
        by_code.setdefault(finding.code, []).append(finding)
    table = []
    for code, findings in by_code.items():
        fixable = any(applicable(f, unsafe_fixes) for f in findings)
        unsafe = not unsafe_fixes and any(f.fix is not None and f.fix.applicability is Safety.UNSAFE for f in findings)
        table.append(RuleCount(code, findings[0].name, len(findings), fixable, unsafe and not fixable))
    return sorted(table, key=lambda r: (-r.count, r.code))


def _marker(row: RuleCount) -> str:
    return "[*] " if row.fixable else "[-] " if row.unsafe_fixable else "    "


def render(results: Sequence[FileResult], unsafe_fixes: bool = False, as_json: bool = False) -> str:
    """`count<TAB>code<TAB>[*] name` lines (or a JSON list of {code, name, count, fixable})."""
    table = counts(results, unsafe_fixes)
    if as_json:
        rows = [{"code": r.code, "name": r.name, "count": r.count, "fixable": r.fixable} for r in table]
        return json.dumps(rows, indent=2) + "\n"
    if not table:
        return ""
    width = len(str(table[0].count))
    any_marker = any(r.fixable or r.unsafe_fixable for r in table)
    lines = [f"{r.count:>{width}}\t{r.code}\t{_marker(r) if any_marker else ''}{r.name}" for r in table]
    return "\n".join(lines) + "\n"
