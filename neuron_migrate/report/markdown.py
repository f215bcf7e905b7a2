"""The report as Markdown, for pull-request comments and `GITHUB_STEP_SUMMARY` (under 1 MiB):
the plan first (blockers, the work in order, folders, effort), the file list last."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from neuron_migrate.fsio import visible_name
from neuron_migrate.output.base import code_span
from neuron_migrate.output.escape import visible
from neuron_migrate.report.model import (
    STATUS_MEANING,
    STATUSES,
    WORK_ORDER,
    CountRow,
    EffortRow,
    Item,
    Report,
    fallback_text,
)
from neuron_migrate.words import counted

LIMIT = 1024 * 1024 - 1024  # GitHub's step summary limit is 1 MiB; keep room for a separator
BAR = 20  # characters of the progress bars
T = TypeVar("T")


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


def _cut(rows: Sequence[T], limit: int | None) -> tuple[Sequence[T], list[str]]:
    if limit is None or len(rows) <= limit:
        return rows, []
    return rows[:limit], [f"... and {len(rows) - limit} more (see the JSON or HTML report).", ""]


def hours(report: Report) -> str:
    """`3-12 hours (0.5-2 person-days)`: the estimate's range."""
    e = report.estimate
    if not e.minutes:
        return "none (nothing needs a person)"
    (h1, h2), (d1, d2) = e.hours, e.days
    return f"{h1:.1f}-{h2:.1f} hours ({d1:.1f}-{d2:.1f} person-days)"


def _bar(value: int, total: int) -> str:
    filled = round(BAR * value / total) if total else 0
    return "█" * filled + "░" * (BAR - filled)


def _summary(report: Report) -> list[str]:
    counts = report.status_counts()
    totals = report.kind_totals()
    return [
        f"{counted(len(report.files), 'file')}: " + ", ".join(f"{counts[s]} {s}" for s in STATUSES) + ".",
        "",
        (
            f"{counted(sum(totals.values()), 'finding')}: {totals['safe']} fixed by `--fix`, {totals['unsafe']} "
            f"only by `--fix --unsafe-fixes`, {totals['manual']} manual; {counted(report.blocker_count, 'blocker')}. "
            f"Estimated manual effort: **{hours(report)}**."
        ),
        "",
    ]


def _legend(report: Report) -> list[str]:
    counts = report.status_counts()
    return ["### What the statuses mean", ""] + _table(
        ("status", "meaning", "files"), [(s, STATUS_MEANING[s], counts[s]) for s in STATUSES]
    )


def _library(report: Report, limit: int | None) -> list[str]:
    lib = report.library
    if lib is None:
        return []
    out = [
        f"### Depends on {lib.name}",
        "",
        (
            f"{counted(len(lib.files), 'file')} use it. Each concept with the rules that find it; "
            "*manual*: findings no fix resolves; inference APIs block no training run."
        ),
        "",
    ]
    out += _table(
        ("concept", "rules", "files", "findings", "manual", "minutes"),
        [
            (
                c.label + (" (inference)" if c.inference else ""),
                ", ".join(c.codes),
                c.files,
                c.findings,
                c.left,
                c.minutes,
            )
            for c in lib.concepts
        ],
    )
    shown, more = _cut(lib.files, limit)
    rows = [
        (code_span(f.path), ", ".join(f"{lib.label(k)} {n}" for k, n in f.uses), f.findings, f.left, f.minutes)
        for f in shown
    ]
    return out + _table(("file", "concepts (findings)", "findings", "manual", "minutes"), rows) + more


def _effort_rows(rows: tuple[EffortRow, ...]) -> list[str]:
    body = [
        (
            f"{'tier' if r.tier else 'concept'} `{r.key}`",
            r.label,
            r.fixed if r.tier else "",
            r.left,
            r.minutes_each,
            r.minutes,
        )
        for r in rows
    ]
    total = ("**total**", "", sum(r.fixed for r in rows), sum(r.left for r in rows), "", sum(r.minutes for r in rows))
    return _table(
        ("costed by", "what", "fixed (no cost)", "left to a person", "minutes each", "minutes"), [*body, total]
    )


def _relation(report: Report) -> list[str]:
    r = report.relation
    if r is None:
        return []
    return [
        "### How this relates to `check`",
        "",
        (
            f"`check` with the same settings finds **{r.found}** finding{'' if r.found == 1 else 's'} (the sum of "
            f"`check --statistics`) and marks "
            f"{r.fixable} fixable with `--fix` and {r.unsafe_fixable} more with `--unsafe-fixes`, from each finding's "
            f"own fix. Fixing also removes imports once their uses are gone, so: after `check --fix`, "
            f"**{r.left_after_fix}** {'is' if r.left_after_fix == 1 else 'are'} left; after `check --fix --unsafe-fixes`, **{r.left_after_unsafe_fixes}**."
        ),
        "",
    ]


def _comparison(report: Report, limit: int | None) -> list[str]:
    c = report.comparison
    if c is None:
        return []
    out = [f"### Progress since {c.old_date or 'the earlier report'}", ""]
    total = max(sum(c.old_statuses), sum(c.new_statuses), 1)
    rows = [
        (s, f"`{_bar(o, total)}` {o}", f"`{_bar(n, total)}` {n}", f"{n - o:+d}")
        for s, o, n in zip(STATUSES, c.old_statuses, c.new_statuses)
    ]
    out += _table(("status", "before", "now", "change"), rows)
    out += [
        (
            f"Findings: {c.old_findings} → {c.new_findings} ({c.new_findings - c.old_findings:+d}); "
            f"blockers: {c.old_blockers} → {c.new_blockers}; {counted(len(c.newly_done), 'file')} newly done."
        ),
        "",
    ]
    done, more = _cut(c.newly_done, limit)
    if done:
        out += ["Newly done: " + ", ".join(code_span(p) for p in done), ""] + more
    worse, more = _cut(c.worse, limit)
    if worse:
        out += _table(("more work in", "before", "now"), [(code_span(f), o, n) for f, o, n in worse]) + more
    return out


def _body(report: Report, limit: int | None) -> str:
    run = report.run
    counts = report.status_counts()
    out = ["## neuron-migrate report", ""] + _summary(report) + _legend(report)
    out += _relation(report) + _comparison(report, limit)
    out += ["### Blockers", ""]
    if not report.blockers:
        out += ["None: no finding keeps a torch_xla import alive.", ""]
    for blockers in report.blockers:
        out += [f"#### {blockers.label} ({blockers.count}) · [guide]({blockers.guide})", ""]
        out += _items(blockers.first, limit)
    out += [
        "### The work, in order",
        "",
        WORK_ORDER,
        "",
    ]
    shown, more = _cut(report.work, limit)
    out += (
        _table(
            ("#", "file", "status", "imported by", "safe", "unsafe", "manual", "blockers", "minutes"),
            [
                (
                    n,
                    code_span(r.path) + (" (inference only)" if r.inference_only else ""),
                    r.status,
                    r.importers,
                    r.safe,
                    r.unsafe,
                    r.manual,
                    r.blockers,
                    r.minutes,
                )
                for n, r in enumerate(shown, 1)
            ],
        )
        + more
    )
    out += _library(report, limit)
    out += ["### By folder", ""]
    folders, more = _cut([f for f in report.folders if f.total or f.count("done")], limit)
    out += (
        _table(
            ("folder", "files", *STATUSES, "findings", "blockers", "minutes"),
            [(code_span(f.path), f.files, *f.statuses, f.total, f.blockers, f.minutes) for f in folders],
        )
        + more
    )
    out += [
        "### Effort estimate",
        "",
        (
            f"An **estimate**: {hours(report)} (typical total {report.total_minutes} minutes; the range is half to "
            "twice that; a person-day is 6 hours). Why: each finding no fix resolves costs its concept's minutes, "
            "or its effort tier's where its rule names one (every NxD finding does): *mechanical* is a local "
            "rewrite, *semi-mechanical* a rewrite a person checks against the model's code, *manual* a port by "
            "hand. A finding `--fix` or `--fix --unsafe-fixes` resolves costs nothing. Override the minutes in "
            "`[tool.neuron-migrate.report-effort]`."
        ),
        "",
    ]
    out += _effort_rows(report.estimate_rows)
    out += ["Table used: " + ", ".join(f"{k} {v}" for k, v in sorted(report.effort)) + ".", ""]
    out += ["### Findings by family", ""] + _counts(report.families, "family")
    out += ["### Findings by rule", ""] + _counts(report.rules, "rule")
    out += ["### Manual work by concept", ""]
    if not report.manual:
        out += ["Nothing: every finding has a fix.", ""]
    for group in report.manual:
        out += [f"#### {group.label} ({len(group.items)})", ""] + _items(group.items, limit)
    out += ["### Packaging and launch scripts", ""]
    out += _items(report.packaging, limit) if report.packaging else ["None found.", ""]
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
            ("from", ", ".join(run.families)),
            ("target", run.target),
            ("selection", run.selection),
            ("done also from", run.history or "recognised `neuron` code only"),
            ("paths", " ".join(run.paths)),
            ("date", run.date),
        ],
    )
    out += ["### Files", ""]
    listed = [r for r in report.files if r.status != "clean"]
    shown, more = _cut(listed, None if limit is None else limit * 4)
    out += (
        _table(
            ("file", "status", "safe", "unsafe", "manual"),
            [(code_span(r.path), r.status, r.safe, r.unsafe, r.manual) for r in shown],
        )
        + more
    )
    if counts["clean"]:
        noun = "clean file is" if counts["clean"] == 1 else "clean files are"
        out += [f"{counts['clean']} {noun} not listed.", ""]
    return "\n".join(map(visible, out)).rstrip("\n") + "\n"  # control characters from names and code escaped


def render(report: Report, limit: int = LIMIT) -> str:
    """All of the report; long lists are cut until it fits in `limit` bytes."""
    for cap in (None, 200, 50, 10, 0):
        text = visible_name(_body(report, cap))  # a message may quote a name that is not UTF-8
        if len(text.encode("utf-8")) <= limit:
            return text
    return text.encode("utf-8")[:limit].decode("utf-8", "ignore")
