"""The report built from a check run's results: each file's status, the folder roll-up, counts
by family and rule, manual work and blockers by concept, and the effort estimate."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from neuron_migrate.effort import CONCEPTS, DEFAULT_EFFORT, TIER_EFFORT, TIER_MEANING, concept_of, tier_for
from neuron_migrate.model import FileResult, Finding
from neuron_migrate.report.library import build_library, inference_files, inference_only
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
    EffortRow,
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
CostOf = Callable[[Finding], int]


def _item(finding: Finding, kind: KindOf = kind_of, cost: CostOf = lambda f: 0) -> Item:
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
        tier_for(finding.code, finding.tier),
        cost(finding),
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
    """DEFAULT_EFFORT and TIER_EFFORT with the config's overrides applied."""
    table = {**DEFAULT_EFFORT, **TIER_EFFORT}
    table.update(overrides)
    return table


def coster(effort: Mapping[str, int], kind: KindOf) -> CostOf:
    """A finding's typical minutes: nothing when a fix resolves it, else its tier's minutes (where
    its rule names a tier) or its concept's."""

    def cost(finding: Finding) -> int:
        if kind(finding) != "manual":
            return 0
        return effort.get(tier_for(finding.code, finding.tier) or concept_of(finding.code), 0)

    return cost


def estimate_rows(findings: Sequence[Finding], effort: Mapping[str, int], kind: KindOf) -> tuple[EffortRow, ...]:
    """The estimate's rows: each concept's manual findings (untiered), then each effort tier's
    findings (fixed ones included, at no cost). Their minutes sum to the estimate."""
    concepts: dict[str, int] = {}
    tiers: dict[str, list[int]] = {}  # tier -> [fixed, left]
    for finding in findings:
        manual = kind(finding) == "manual"
        tier = tier_for(finding.code, finding.tier)
        if tier:
            tiers.setdefault(tier, [0, 0])[manual] += 1
        elif manual:
            concept = concept_of(finding.code)
            concepts[concept] = concepts.get(concept, 0) + 1
    order = list(CONCEPTS)
    rows = [
        EffortRow(c, CONCEPTS.get(c, c), False, n, effort.get(c, 0))
        for c, n in sorted(concepts.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))
    ]
    rows += [
        EffortRow(t, TIER_MEANING[t], True, tiers[t][1], effort.get(t, 0), tiers[t][0])
        for t in TIER_EFFORT
        if t in tiers
    ]
    return tuple(rows)


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
    depths: dict[str, int] = {}
    for folder, acc in own.items():
        for depth, key in enumerate(_ancestors(folder)):
            depths[key] = depth
            total = sums.setdefault(key, [0] * (n + 6))
            for index, value in enumerate(acc):
                total[index] += value
    return tuple(
        FolderRow(key, depths[key], acc[0], tuple(acc[1 : 1 + n]), *acc[1 + n :])
        for key, acc in sorted(sums.items(), key=lambda kv: () if kv[0] == "." else tuple(kv[0].split("/")))
    )


def _ancestors(folder: str) -> list[str]:
    """`.` and every folder from the top down to `folder`; an absolute path keeps its `/`
    (`/a/b`: `.`, `/a`, `/a/b`)."""
    if folder == ".":
        return ["."]
    parts = folder.split("/")
    first = 2 if folder.startswith("/") else 1
    return [".", *("/".join(parts[:depth]) for depth in range(first, len(parts) + 1))]


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
    imported_by: Mapping[str, frozenset[str]] | None = None,
) -> Report:
    """The report for the results of a check run (nothing fixed).

    `kinds` maps a finding's sort key to what `--fix` really does with it (see
    `report.command.fix_kinds`); without it, each finding's own fix decides. `done`: files known
    to have used what the rules migrate (history, baseline, recognised code). `importers`: how
    many local files import each file, to order the work; `imported_by`: which ones, to tell
    the files only inference programs reach.
    """
    kind = (lambda f: kinds.get(f.sort_key) or kind_of(f)) if kinds else kind_of
    findings = sorted((f for r in results for f in r.findings), key=lambda f: f.sort_key)
    codes = {f.code for f in findings}
    family_of = {c: c[:3] for c in codes}
    effort = effort_table(run.effort)
    cost = coster(effort, kind)
    groups: dict[str, list[Item]] = {}
    for finding in findings:
        if kind(finding) == "manual":
            groups.setdefault(concept_of(finding.code), []).append(_item(finding, kind, cost))
    order = list(CONCEPTS)
    manual = tuple(
        ConceptGroup(c, CONCEPTS.get(c, c), None if any(i.tier for i in items) else effort.get(c, 0), tuple(items))
        for c, items in sorted(groups.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))
    )
    beta = tuple(
        (label, tuple(_item(f, kind) for f in findings if f.code in wanted)) for label, wanted in BETA_LIMITS.items()
    )
    inference = inference_files({r.path: inference_only(r.findings) for r in results}, imported_by or {})
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
                sum(cost(f) for f in result.findings),
                result.path in inference,
            )
        )
    files = tuple(sorted(rows, key=lambda row: row.path))
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
        work=work_order(files),
        blockers=_blockers(findings, kind),
        relation=relation,
        estimate_rows=estimate_rows(findings, effort, kind),
        library=build_library(findings, lambda f: kind(f) == "manual", cost, inference),
    )


def work_order(files: Sequence[FileRow]) -> tuple[FileRow, ...]:
    """The files with work left, what blocks a training run first (see WORK_ORDER)."""
    rank = {s: i for i, s in enumerate(WORK)}
    return tuple(
        sorted(
            (r for r in files if r.status in WORK),
            key=lambda r: (r.inference_only, -r.importers, rank[r.status], -r.minutes, r.path),
        )
    )
