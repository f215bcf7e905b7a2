"""Concise text: `path:row:col: CODE [*] message`, then a summary."""

from __future__ import annotations

from collections.abc import Sequence

from neuron_migrate.model import FileResult, Finding
from neuron_migrate.output.base import (
    PLAIN,
    RenderOptions,
    all_findings,
    all_fixed,
    all_gone,
    applicable,
    maybe_applicable,
    needs_unsafe,
    printable_path,
)
from neuron_migrate.output.color import paint


def marker(finding: Finding, unsafe_fixes: bool) -> str:
    """`[*]` for a fix `--fix` applies, `[-]` for one that needs `--unsafe-fixes`, `[~]` for one
    `--fix` may apply once the fixes it waits on are made (known only then)."""
    if applicable(finding, unsafe_fixes):
        return "[*] "
    if maybe_applicable(finding, unsafe_fixes):
        return "[~] "
    return "[-] " if needs_unsafe(finding, unsafe_fixes) else ""


def line(finding: Finding, unsafe_fixes: bool = False, color: bool = False) -> str:
    """`path:row:col: CODE [*] message`; with `color`, as Ruff paints it (bold path, red code)."""
    path = paint(printable_path(finding.path), color, bold=True)
    sep = paint(":", color, fg="cyan")
    cell = f"cell {finding.cell}{sep}" if finding.cell is not None else ""
    where = f"{path}{sep}{cell}{finding.start.line}{sep}{finding.start.column}{sep}"
    tag = marker(finding, unsafe_fixes)
    code = paint(finding.code, color, fg="red", bold=True)
    return f"{where} {code} {paint(tag, color, fg='cyan') if tag else ''}{finding.message}"


def summary(results: Sequence[FileResult], unsafe_fixes: bool = False) -> list[str]:
    """The closing lines: found, fixed, remaining, and what more `--fix` / `--unsafe-fixes` would do."""
    remaining = all_findings(results)
    fixed = all_fixed(results)
    gone = all_gone(results)
    total = len(remaining) + len(fixed) + len(gone)
    if total == 0:
        return ["All checks passed!"]
    noun = "finding" if total == 1 else "findings"
    went = f"{len(gone)} gone with the code other fixes removed, " if gone else ""
    done = f" ({len(fixed)} fixed, {went}{len(remaining)} remaining)" if fixed or gone else ""
    lines = [f"Found {total} {noun}{done}."]
    safe = sum(1 for f in remaining if applicable(f, unsafe_fixes))
    unsafe = sum(1 for f in remaining if needs_unsafe(f, unsafe_fixes))
    if safe:
        lines.append(f"[*] {safe} fixable with the `--fix` option.")
    maybe = sum(1 for f in remaining if maybe_applicable(f, unsafe_fixes))
    if maybe:
        lines.append(f"[~] {maybe} more may be fixable with the `--fix` option, once the fixes they wait on are made.")
    if unsafe:
        lines.append(f"[-] {unsafe} more fixable with the `--unsafe-fixes` option.")
    return lines


def render(results: Sequence[FileResult], options: RenderOptions = PLAIN) -> str:
    out = [line(f, options.unsafe_fixes, options.color) for f in all_findings(results)]
    if not options.quiet:
        out.extend(summary(results, options.unsafe_fixes))
    return "\n".join(out) + ("\n" if out else "")
