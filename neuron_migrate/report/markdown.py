"""The report as Markdown, for pull-request comments and `GITHUB_STEP_SUMMARY` (under 1 MiB)."""

from __future__ import annotations

from collections.abc import Sequence

from neuron_migrate.fsio import visible_name
from neuron_migrate.output.base import code_span
from neuron_migrate.report.model import STATUS_MEANING, STATUSES, CountRow, Item, Report, fallback_text

LIMIT = 1024 * 1024 - 1024  # GitHub's step summary limit is 1 MiB; keep room for a separator


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(str(c)) for c in row) + " |" for row in rows]
    return [*lines, ""]


def _counts(rows: Sequence[CountRow], first: str) -> list[str]:
    return _table(
        (first, "area" if first == "family" else "name", "safe", "unsafe", "manual", "total"),
        [(code_span(r.key), r.label, r.safe, r.unsafe, r.manual, r.total) for r in rows],
    )


def _items(items: Sequence[Item], limit: int | None) -> list[str]:
    shown = items if limit is None else items[:limit]
    lines = [f"- {code_span(i.location)} {i.code} {_cell(i.message)} ([guide]({i.guide}))" for i in shown]
    if len(shown) < len(items):
        lines.append(f"- ... and {len(items) - len(shown)} more (see the JSON or HTML report)")
    return [*lines, ""]


def _body(report: Report, limit: int | None) -> str:
    run = report.run
    counts = report.status_counts()
    totals = report.kind_totals()
    out = [
        "## neuron-migrate report",
        "",
        f"{len(report.files)} files: " + ", ".join(f"{counts[s]} {s}" for s in STATUSES) + ".",
        "",
        (
            f"{sum(totals.values())} findings: {totals['safe']} with a safe fix, {totals['unsafe']} need "
            f"`--unsafe-fixes`, {totals['manual']} manual."
        ),
        "",
        "### Files",
        "",
    ]
    out += _table(("status", "meaning", "files"), [(s, STATUS_MEANING[s], counts[s]) for s in STATUSES])
    files = report.files if limit is None else report.files[: limit * 4]
    out += _table(
        ("file", "status", "safe", "unsafe", "manual"),
        [(code_span(r.path), r.status, r.safe, r.unsafe, r.manual) for r in files],
    )
    if len(files) < len(report.files):
        out += [f"... and {len(report.files) - len(files)} more files.", ""]
    out += ["### Findings by family", ""] + _counts(report.families, "family")
    out += ["### Findings by rule", ""] + _counts(report.rules, "rule")
    out += ["### Manual work by concept", ""]
    if not report.manual:
        out += ["Nothing: every finding has a fix.", ""]
    for group in report.manual:
        out += [f"#### {group.label} ({len(group.items)})", ""] + _items(group.items, limit)
    out += ["### Packaging and launch scripts", ""]
    out += _items(report.packaging, limit) if report.packaging else ["None found.", ""]
    out += [
        "### Effort estimate",
        "",
        "An **estimate**: minutes per manual finding, by concept (override in `[tool.neuron-migrate.report-effort]`).",
        "",
    ]
    minutes = dict(report.effort)
    out += _table(
        ("concept", "findings", "minutes each", "minutes"),
        [(g.concept, len(g.items), g.minutes_each, g.minutes) for g in report.manual],
    )
    out += [f"Total: about **{report.total_minutes} minutes** ({report.total_minutes / 60:.1f} hours).", ""]
    out += ["Table used: " + ", ".join(f"{k} {v}" for k, v in sorted(minutes.items())) + ".", ""]
    out += ["### Beta limits hit", ""]
    for label, items in report.beta_limits:
        out += [f"#### {label} ({len(items)})", ""] + (_items(items, limit) if items else ["None.", ""])
    if report.smoke is not None:
        s = report.smoke
        out += ["### Smoke run", ""]
        out += _table(
            ("script", "status", "device", "ranks", "steps", "ops", "fallbacks", "device mixing", "float64", "parity"),
            [
                (
                    code_span(s.script),
                    s.status,
                    s.device,
                    s.ranks,
                    s.steps,
                    s.ops,
                    fallback_text(s),
                    s.device_mixing,
                    s.float64,
                    s.parity,
                )
            ],
        )
        out += [f"- {p}" for p in s.problems] + ([""] if s.problems else [])
    out += ["### Settings", ""]
    out += _table(
        ("setting", "value"),
        [
            ("neuron-migrate", run.tool_version),
            ("target version", run.target_version),
            ("selection", run.selection),
            ("paths", " ".join(run.paths)),
            ("date", run.date),
        ],
    )
    return "\n".join(out).rstrip("\n") + "\n"


def render(report: Report, limit: int = LIMIT) -> str:
    """All of the report; long lists are cut until it fits in `limit` bytes."""
    for cap in (None, 200, 50, 10, 0):
        text = visible_name(_body(report, cap))  # a message may quote a name that is not UTF-8
        if len(text.encode("utf-8")) <= limit:
            return text
    return text.encode("utf-8")[:limit].decode("utf-8", "ignore")
