"""The report's data: per-file status, counts by family and rule, manual work by concept,
packaging and launch findings, the effort estimate, the beta limits hit and the run's settings.

Everything here is computed from `FileResult`s; nothing reads files or the clock (the CLI
passes the date in `RunInfo`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from neuron_migrate.effort import CONCEPTS, DEFAULT_EFFORT, concept_of
from neuron_migrate.model import FileResult, Finding, Safety

STATUSES = ("blocked", "manual", "unsafe", "auto", "done", "clean")
STATUS_MEANING: Mapping[str, str] = MappingProxyType(
    {
        "blocked": "a blocker (an API with no TorchNeuron counterpart) keeps a torch_xla import alive",
        "manual": "some findings have no fix: a person must rewrite them",
        "unsafe": "the rest needs `--unsafe-fixes` (review the change)",
        "auto": "everything left has a safe fix: `--fix` finishes it",
        "done": "used torch_xla (or the selected CUDA APIs) and has none left: seen in git history or the "
        "baseline, or the file holds `neuron` code the tool recognises",
        "clean": "never used torch_xla (or the selected CUDA APIs)",
    }
)
WORK = ("blocked", "manual", "unsafe", "auto")  # statuses with something left to do
KINDS = ("safe", "unsafe", "manual")

FAMILIES: Mapping[str, str] = MappingProxyType(
    {
        "NM1": "device placement",
        "NM2": "execution model",
        "NM3": "distributed",
        "NM4": "APIs and dtypes the beta lacks",
        "NM5": "torch.compile",
        "NM6": "imports, environment, packaging, shell",
        "NM7": "smoke run",
        "NM9": "the tool itself",
    }
)

# The estimate is a range: a manual finding takes from LOW to HIGH times its table value.
EFFORT_RANGE = (0.5, 2.0)
HOURS_PER_DAY = 6  # focused hours in a person-day
PACKAGING_PREFIXES = ("NM62", "NM63")
BETA_LIMITS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "unsupported APIs": ("NM401", "NM402", "NM403", "NM404", "NM405", "NM406", "NM407", "NM408", "NM409", "NM410"),
        "float64": ("NM411", "NM412", "NM413", "NM703"),
        "torch.compile flags": ("NM502", "NM503", "NM504", "NM505", "NM506", "NM507"),
    }
)


def kind_of(finding: Finding) -> str:
    """safe (a safe fix), unsafe (needs --unsafe-fixes) or manual (no fix)."""
    if finding.fix is None:
        return "manual"
    return "safe" if finding.fix.applicability is Safety.SAFE else "unsafe"


@dataclass(frozen=True)
class RunInfo:
    """The run's settings, shown in the report."""

    tool_version: str
    target_version: str
    selection: str  # e.g. "select NM; ignore NM6"
    date: str  # ISO 8601, UTC
    paths: tuple[str, ...] = (".",)
    effort: tuple[tuple[str, int], ...] = ()  # overrides of DEFAULT_EFFORT from config
    families: tuple[str, ...] = ("xla",)  # --from
    target: str = "neuron"  # --target
    history: str = ""  # where *done* comes from besides recognised code: "git REF (commit)", "baseline FILE"


@dataclass(frozen=True)
class FileRow:
    path: str
    status: str
    safe: int
    unsafe: int
    manual: int
    blockers: int = 0
    importers: int = 0  # local files that import this one
    minutes: int = 0  # the estimate's typical value for its manual findings

    @property
    def total(self) -> int:
        return self.safe + self.unsafe + self.manual

    @property
    def folder(self) -> str:
        return folder_of(self.path)


@dataclass(frozen=True)
class FolderRow:
    """Everything under one folder (its subfolders included)."""

    path: str  # "." for the top
    depth: int
    files: int
    statuses: tuple[int, ...]  # in STATUSES order
    safe: int
    unsafe: int
    manual: int
    blockers: int
    minutes: int

    @property
    def total(self) -> int:
        return self.safe + self.unsafe + self.manual

    def count(self, status: str) -> int:
        return self.statuses[STATUSES.index(status)]


@dataclass(frozen=True)
class CountRow:
    """Findings of one family or rule, by kind."""

    key: str
    label: str
    safe: int
    unsafe: int
    manual: int

    @property
    def total(self) -> int:
        return self.safe + self.unsafe + self.manual


@dataclass(frozen=True)
class Item:
    """One finding listed in the report."""

    path: str
    line: int
    column: int
    cell: int | None
    code: str
    message: str
    kind: str
    guide: str  # the rule's documentation section

    @property
    def location(self) -> str:
        cell = f"cell {self.cell}:" if self.cell is not None else ""
        return f"{self.path}:{cell}{self.line}"


@dataclass(frozen=True)
class ConceptGroup:
    concept: str
    label: str
    minutes_each: int
    items: tuple[Item, ...]

    @property
    def minutes(self) -> int:
        return self.minutes_each * len(self.items)


@dataclass(frozen=True)
class BlockerGroup:
    """The blockers of one concept: how many, the guide, and the first occurrence in each file."""

    concept: str
    label: str
    guide: str
    count: int
    first: tuple[Item, ...]  # the first blocker of this concept in each file, by path


@dataclass(frozen=True)
class Effort:
    """The estimate, in minutes: typical, and the range around it."""

    minutes: int
    low: int
    high: int

    @property
    def hours(self) -> tuple[float, float]:
        return self.low / 60, self.high / 60

    @property
    def days(self) -> tuple[float, float]:
        return self.low / 60 / HOURS_PER_DAY, self.high / 60 / HOURS_PER_DAY


@dataclass(frozen=True)
class Relation:
    """How the report's counts relate to `check` for the same settings."""

    found: int  # `check`: "Found N findings"
    fixable: int  # `check`: "[*] N fixable with the `--fix` option" (each finding's own fix)
    unsafe_fixable: int  # `check`: "[-] N more fixable with the `--unsafe-fixes` option"
    left_after_fix: int  # findings `check` still reports after `--fix`
    left_after_unsafe_fixes: int  # ... after `--fix --unsafe-fixes`


@dataclass(frozen=True)
class SmokeSummary:
    """The smoke run's results, as far as the report shows them."""

    script: str
    status: str
    device: str
    ranks: int
    steps: int
    ops: int
    fallbacks: tuple[str, ...]
    fallbacks_predicted: bool
    unknown_ops: int  # ops the compat data does not list (their fallback status is not known)
    device_mixing: int
    float64: int
    parity: str  # ok | mismatch | skipped | not run
    problems: tuple[str, ...]


@dataclass(frozen=True)
class Comparison:
    """What changed since an earlier report (`report --compare OLD.json`)."""

    old_date: str
    old_statuses: tuple[int, ...]  # in STATUSES order
    new_statuses: tuple[int, ...]
    old_findings: int
    new_findings: int
    old_blockers: int
    new_blockers: int
    newly_done: tuple[str, ...]  # files that were not done or clean before and are now
    worse: tuple[tuple[str, str, str], ...]  # (file, old status, new status) that got worse or are new work
    rules: tuple[tuple[str, int, int], ...]  # (code, old count, new count) where they differ


@dataclass(frozen=True)
class Report:
    run: RunInfo
    files: tuple[FileRow, ...]
    families: tuple[CountRow, ...]
    rules: tuple[CountRow, ...]
    manual: tuple[ConceptGroup, ...]
    packaging: tuple[Item, ...]
    beta_limits: tuple[tuple[str, tuple[Item, ...]], ...]
    effort: tuple[tuple[str, int], ...]  # the table used: concept -> minutes per finding
    smoke: SmokeSummary | None = None
    folders: tuple[FolderRow, ...] = ()
    work: tuple[FileRow, ...] = ()  # files with something left, in the order to migrate them
    blockers: tuple[BlockerGroup, ...] = ()
    relation: Relation | None = None
    comparison: Comparison | None = field(default=None, compare=False)

    def status_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for row in self.files:
            counts[row.status] += 1
        return counts

    def kind_totals(self) -> dict[str, int]:
        return {k: sum(getattr(r, k) for r in self.families) for k in KINDS}

    @property
    def total_minutes(self) -> int:
        return sum(group.minutes for group in self.manual)

    @property
    def estimate(self) -> Effort:
        return effort_range(self.total_minutes)

    @property
    def blocker_count(self) -> int:
        return sum(g.count for g in self.blockers)


KindOf = Callable[[Finding], str]


def folder_of(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else "."


def effort_range(minutes: int) -> Effort:
    low, high = EFFORT_RANGE
    return Effort(minutes, round(minutes * low), round(minutes * high))


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


def fallback_text(smoke: SmokeSummary) -> str:
    """The fallbacks cell: the ops, or none; with how many ops the compat data could not judge."""
    shown = ", ".join(smoke.fallbacks) or ("none known" if smoke.unknown_ops and smoke.fallbacks_predicted else "none")
    if smoke.unknown_ops and smoke.fallbacks_predicted:
        shown += f" ({smoke.unknown_ops} op{'s' if smoke.unknown_ops != 1 else ''} of unknown status)"
    return shown


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
