"""`--statistics`: how many findings each rule has, most frequent first, as Ruff prints them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from neuron_migrate.model import FileResult, Finding
from neuron_migrate.output.base import all_findings, applicable, needs_unsafe


@dataclass(frozen=True)
class RuleCount:
    code: str
    name: str
    count: int
    fixable_count: int  # how many `--fix` (with the given `--unsafe-fixes`) fixes
    unsafe_fixable: bool  # none is fixable, but `--unsafe-fixes` would fix some

    @property
    def fixable(self) -> bool:
        """`--fix` fixes at least one of them."""
        return self.fixable_count > 0


def counts(results: Sequence[FileResult], unsafe_fixes: bool = False) -> list[RuleCount]:
    """One row per rule with remaining findings, by count (descending), then code."""
    by_code: dict[str, list[Finding]] = {}
    for finding in all_findings(results):
        by_code.setdefault(finding.code, []).append(finding)
    table = []
    for code, findings in by_code.items():
        fixable = sum(1 for f in findings if applicable(f, unsafe_fixes))
        unsafe = any(needs_unsafe(f, unsafe_fixes) for f in findings)
        table.append(RuleCount(code, findings[0].name, len(findings), fixable, unsafe and not fixable))
    return sorted(table, key=lambda r: (-r.count, r.code))


def _marker(row: RuleCount) -> str:
    """As Ruff: `[*]` all fixable, `[~]` some; `[-]` only with `--unsafe-fixes`."""
    if row.fixable_count == row.count:
        return "[*] "
    if row.fixable_count:
        return "[~] "
    return "[-] " if row.unsafe_fixable else "    "


def shown_name(name: str) -> str:
    """A rule's name as Ruff's statistics spell names: kebab-case (`xla-mark-step-call`)."""
    return name.replace("_", "-")


def render(results: Sequence[FileResult], unsafe_fixes: bool = False, as_json: bool = False) -> str:
    """`count<TAB>code<TAB>[*] name` lines (or a JSON list of {code, name, count, fixable_count, fixable})."""
    table = counts(results, unsafe_fixes)
    if as_json:
        rows = [
            {
                "code": r.code,
                "name": shown_name(r.name),
                "count": r.count,
                "fixable_count": r.fixable_count,
                "fixable": r.fixable,
            }
            for r in table
        ]
        return json.dumps(rows, indent=2) + "\n"
    if not table:
        return ""
    width = len(str(table[0].count))
    any_marker = any(r.fixable or r.unsafe_fixable for r in table)
    lines = [f"{r.count:>{width}}\t{r.code}\t{_marker(r) if any_marker else ''}{shown_name(r.name)}" for r in table]
    return "\n".join(lines) + "\n"
