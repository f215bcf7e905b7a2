"""GitHub Actions workflow commands (`::error file=...::message`) and the step summary.

GitHub shows only about 10 errors, 10 warnings and 10 notices per step, so annotations come most
severe first. `summary()` renders every finding as Markdown for `$GITHUB_STEP_SUMMARY`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from neuron_migrate.fsio import visible_name
from neuron_migrate.model import FileResult, Finding, Severity
from neuron_migrate.output.base import (
    PLAIN,
    RenderOptions,
    all_findings,
    applicable,
    code_span,
    located_message,
    printable_path,
    repo_path,
)
from neuron_migrate.output.raw_notebook import notebook_texts, raw_findings
from neuron_migrate.words import counted

SUMMARY_LIMIT = 1024 * 1024  # GitHub rejects a step summary over 1 MiB
_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    """Escape a command's message, as `@actions/core` does; other control characters (ESC, BEL:
    terminal escapes in a file name) and bytes that are not UTF-8 are shown as `\\x1b`, not sent raw."""
    escaped = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return printable_path(visible_name(escaped))


def escape_property(text: str) -> str:
    """Escape a command property value: also `:` and `,`, which delimit properties."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def priority(finding: Finding) -> tuple[object, ...]:
    """Errors first, then warnings, then notices; within each, by path and position."""
    return (finding.severity.rank, *finding.sort_key)


def annotation(finding: Finding, path: str) -> str:
    """One `::error ...::message` line for a finding; `path` is relative to the repository root."""
    props = [("file", path), ("line", str(finding.start.line))]
    end_line = max(finding.end.line, finding.start.line)
    props.append(("endLine", str(end_line)))
    if end_line == finding.start.line:  # GitHub honours columns only on one-line annotations
        props.append(("col", str(finding.start.column)))
        props.append(("endColumn", str(max(finding.end.column, finding.start.column))))
    props.append(("title", f"{finding.code} ({finding.name})"))
    rendered = ",".join(f"{key}={escape_property(value)}" for key, value in props)
    return f"::{_COMMAND[finding.severity]} {rendered}::{escape_data(located_message(finding))}"


def render(results: Sequence[FileResult], options: RenderOptions = PLAIN) -> str:
    """Every finding as an annotation, most important first."""
    placed = raw_findings(all_findings(results), notebook_texts(results))
    findings = sorted(placed, key=priority)
    return "".join(annotation(f, repo_path(f.path, options.root, options.cwd)) + "\n" for f in findings)


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _counts_table(findings: Sequence[Finding]) -> list[str]:
    counts = Counter((f.code, f.name) for f in findings)
    rows = ["| Rule | Name | Count |", "|---|---|---:|"]
    rows += [f"| {code} | `{name}` | {n} |" for (code, name), n in sorted(counts.items())]
    return rows


def _headline(findings: Sequence[Finding], files: int) -> str:
    if not findings:
        return f"All checks passed! ({files} {'file' if files == 1 else 'files'} checked)"
    severities = Counter(f.severity for f in findings)
    parts = [
        counted(severities[s], word)
        for s, word in ((Severity.ERROR, "error"), (Severity.WARNING, "warning"), (Severity.INFO, "notice"))
        if severities[s]
    ]
    fixable = sum(1 for f in findings if applicable(f, unsafe_fixes=False))
    noun = "finding" if len(findings) == 1 else "findings"
    line = (
        f"Found **{len(findings)}** {noun} in {len({f.path for f in findings})} of {counted(files, 'file')} "
        f"({', '.join(parts)})."
    )
    return line + (f" {fixable} fixable with `neuron-migrate --fix`." if fixable else "")


def summary(
    results: Sequence[FileResult], root: str | None = None, cwd: str | None = None, limit: int = SUMMARY_LIMIT
) -> str:
    """A Markdown summary of all findings, at most `limit` UTF-8 bytes (rows cut with a note).

    Notebook findings are placed in the raw file, as the annotations are, so the two agree.
    """
    findings = sorted(raw_findings(all_findings(results), notebook_texts(results)), key=priority)
    head = ["## neuron-migrate", "", _headline(findings, len(results)), ""]
    if findings:
        head += [*_counts_table(findings), "", "| Location | Rule | Severity | Message |", "|---|---|---|---|"]
    parts = ["\n".join(head) + "\n"]
    size = len(parts[0].encode("utf-8"))
    for shown, finding in enumerate(findings):
        path = repo_path(finding.path, root, cwd)
        where = f"{path}:{finding.start.line}:{finding.start.column}"
        message = _cell(printable_path(visible_name(located_message(finding))))
        row = f"| {_cell(code_span(where))} | {finding.code} | {finding.severity.value} | {message} |\n"
        row_size = len(row.encode("utf-8"))
        later = len(findings) - shown - 1
        reserve = len(_note(later, limit).encode("utf-8")) if later else 0
        if size + row_size + reserve > limit:
            return _fit("".join(parts) + _note(later + 1, limit), limit)
        parts.append(row)
        size += row_size
    return _fit("".join(parts), limit)


def _note(hidden: int, limit: int) -> str:
    noun = "finding is" if hidden == 1 else "findings are"
    return f"\n_{hidden} more {noun} not shown: the summary is limited to {limit // 1024} KiB._\n"


def _fit(text: str, limit: int) -> str:
    """`text`, or as much of it as fits in `limit` bytes when even the heading is too long."""
    data = text.encode("utf-8")
    return text if len(data) <= limit else data[: max(limit, 0)].decode("utf-8", errors="ignore")
