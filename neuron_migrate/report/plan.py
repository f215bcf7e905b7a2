"""The report built from a check run's results: each file's status, the folder roll-up, counts
by family and rule, manual work and blockers by concept, and the effort estimate."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from neuron_migrate.effort import CONCEPTS, DEFAULT_EFFORT, concept_of
from neuron_migrate.model import FileResult, Finding
from neuron_migrate.report.model import (
    BETA_LIMITS,
    FAMILIES,
    KINDS,
    PACKAGING_PREFIXES,
    STATUSES,
    WORK,
    BlockerGroup,
    ConceptGroup,
    CountRow,
    FileRow,
    FolderRow,
    Item,
    Relation,
    Report,
    RunInfo,
    SmokeSummary,
    kind_of,
)

KindOf = Callable[[Finding], str]


def _item(finding: Finding, kind: KindOf = kind_of) -> Item:
    url = (
        finding.url
        or f"https://github.com/neuron-migrate/neuron-migrate/blob/main/rules/README.md#{finding.code.lower()}"
    )
    return Item(
        finding.path,
        finding.start.line,
        finding.start.column,
        finding.cell,
        finding.code,
        finding.message,
        kind(finding),
        url,
    )


def file_status(result: FileResult, kind: KindOf = kind_of, done: bool = False) -> str:
    """One of STATUSES for a file that was checked and not fixed; `done`: the file is known to
    have used what the selected rules migrate (git history, a baseline, recognised code)."""
    if any(f.blocker for f in result.findings):
        return "blocked"
    kinds = {kind(f) for f in result.findings}
    if "manual" in kinds:
        return "manual"
    if "unsafe" in kinds:
        return "unsafe"
    if kinds:
        return "auto"
    return "done" if done else "clean"


def _counts(
    findings: Sequence[Finding], key_of: dict[str, str], labels: Mapping[str, str], kind: KindOf
) -> tuple[CountRow, ...]:
    table: dict[str, list[int]] = {}
    for finding in findings:
        row = table.setdefault(key_of[finding.code], [0, 0, 0])
        row[KINDS.index(kind(finding))] += 1
    return tuple(CountRow(k, labels.get(k, k), *v) for k, v in sorted(table.items()))


def effort_table(overrides: Sequence[tuple[str, int]] = ()) -> dict[str, int]:
    """DEFAULT_EFFORT with the config's overrides applied."""
    table = dict(DEFAULT_EFFORT)
    table.update(overrides)
    return table


def _smoke_summary(smoke: object) -> SmokeSummary:
    """A SmokeSummary from a `smoke.report.SmokeReport` (read by attribute; no torch import)."""
    events = getattr(smoke, "events", ())
    parity = getattr(smoke, "parity", None)
    return SmokeSummary(
        script=str(getattr(smoke, "script", "")),
        status=str(getattr(smoke, "status", "")),
        device=str(getattr(smoke, "device", "")),
        ranks=int(getattr(smoke, "nproc", 1)),
        steps=int(getattr(smoke, "steps", 0)),
        ops=len(getattr(smoke, "ops", ())),
        fallbacks=tuple(f.op for f in getattr(smoke, "fallbacks", ())),
        fallbacks_predicted=bool(getattr(smoke, "fallbacks_predicted", False)),
        unknown_ops=len(getattr(smoke, "unknown_ops", ())),
        device_mixing=sum(e.count for e in events if e.kind == "device-mixing"),
        float64=sum(e.count for e in events if e.kind == "float64"),
        parity=parity.status if parity is not None else "not run",
        problems=tuple(getattr(smoke, "problems", ())),
    )


def folders(files: Sequence[FileRow]) -> tuple[FolderRow, ...]:
    """Every folder holding a checked file (at any depth), rolled up, in tree order."""
    n = len(STATUSES)
    own: dict[str, list[int]] = {}
    for row in files:  # first each folder's own files, then each sum goes to its ancestors
        acc = own.setdefault(row.folder, [0] * (n + 6))
        acc[0] += 1
        acc[1 + STATUSES.index(row.status)] += 1
        for offset, value in enumerate((row.safe, row.unsafe, row.manual, row.blockers, row.minutes)):
            acc[1 + n + offset] += value
    sums: dict[str, list[int]] = {}
    for folder, acc in own.items():
        parts = folder.split("/") if folder != "." else []
        for depth in range(len(parts) + 1):
            total = sums.setdefault("/".join(parts[:depth]) or ".", [0] * (n + 6))
            for index, value in enumerate(acc):
                total[index] += value
    return tuple(
        FolderRow(key, 0 if key == "." else key.count("/") + 1, acc[0], tuple(acc[1 : 1 + n]), *acc[1 + n :])
        for key, acc in sorted(sums.items(), key=lambda kv: () if kv[0] == "." else tuple(kv[0].split("/")))
    )


def _blockers(findings: Sequence[Finding], kind: KindOf) -> tuple[BlockerGroup, ...]:
    groups: dict[str, list[Finding]] = {}
    for finding in findings:
        if finding.blocker:
            groups.setdefault(concept_of(finding.code), []).append(finding)
    order = list(CONCEPTS)
    out = []
    for concept in sorted(groups, key=lambda c: order.index(c) if c in order else len(order)):
        found = groups[concept]
        first: dict[str, Finding] = {}
        for finding in found:
            first.setdefault(finding.path, finding)
        items = tuple(_item(f, kind) for f in first.values())
        out.append(BlockerGroup(concept, CONCEPTS.get(concept, concept), items[0].guide, len(found), items))
    return tuple(out)


def build(
    results: Sequence[FileResult],
    run: RunInfo,
    smoke: object | None = None,
    kinds: Mapping[tuple[object, ...], str] | None = None,
    done: frozenset[str] = frozenset(),
    importers: Mapping[str, int] | None = None,
    relation: Relation | None = None,
) -> Report:
    """The report for the results of a check run (nothing fixed).

    `kinds` maps a finding's sort key to what `--fix` really does with it (see
    `report.command.fix_kinds`); without it, each finding's own fix decides. `done`: files known
    to have used what the rules migrate (history, baseline, recognised code). `importers`: how
    many local files import each file, to order the work.
    """
    kind = (lambda f: kinds.get(f.sort_key) or kind_of(f)) if kinds else kind_of
    findings = sorted((f for r in results for f in r.findings), key=lambda f: f.sort_key)
    codes = {f.code for f in findings}
    family_of = {c: c[:3] for c in codes}
    effort = effort_table(run.effort)
    groups: dict[str, list[Item]] = {}
    for finding in findings:
        if kind(finding) == "manual":
            groups.setdefault(concept_of(finding.code), []).append(_item(finding, kind))
    order = list(CONCEPTS)
    manual = tuple(
        ConceptGroup(c, CONCEPTS.get(c, c), effort.get(c, 0), tuple(items))
        for c, items in sorted(groups.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))
    )
    beta = tuple(
        (label, tuple(_item(f, kind) for f in findings if f.code in wanted)) for label, wanted in BETA_LIMITS.items()
    )
    rows = []
    for result in results:
        found = [kind(f) for f in result.findings]
        rows.append(
            FileRow(
                result.path,
                file_status(result, kind, result.path in done),
                found.count("safe"),
                found.count("unsafe"),
                found.count("manual"),
                sum(1 for f in result.findings if f.blocker),
                (importers or {}).get(result.path, 0),
                sum(effort.get(concept_of(f.code), 0) for f in result.findings if kind(f) == "manual"),
            )
        )
    files = tuple(sorted(rows, key=lambda row: row.path))
    rank = {s: i for i, s in enumerate(WORK)}
    work = tuple(
        sorted((r for r in files if r.status in WORK), key=lambda r: (-r.importers, rank[r.status], -r.minutes, r.path))
    )
    return Report(
        run=run,
        files=files,
        families=tuple(
            CountRow(r.key + "xx", r.label, r.safe, r.unsafe, r.manual)
            for r in _counts(findings, family_of, FAMILIES, kind)
        ),
        rules=_counts(findings, {c: c for c in codes}, {f.code: f.name for f in findings}, kind),
        manual=manual,
        packaging=tuple(_item(f, kind) for f in findings if f.code.startswith(PACKAGING_PREFIXES)),
        beta_limits=beta,
        effort=tuple(sorted(effort.items())),
        smoke=_smoke_summary(smoke) if smoke is not None else None,
        folders=folders(files),
        work=work,
        blockers=_blockers(findings, kind),
        relation=relation,
    )
