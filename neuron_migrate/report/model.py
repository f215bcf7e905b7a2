"""The report's values: per-file status, counts by family and rule, manual work by concept,
packaging and launch findings, the effort estimate, the beta limits hit and the run's settings.

Frozen values and the constants that name them; `plan.py` builds them from `FileResult`s.
Nothing here reads files or the clock (the CLI passes the date in `RunInfo`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from neuron_migrate.model import Finding, Safety

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
# How the work is ordered (`plan.work_order`), said once above the work table in each format.
WORK_ORDER = (
    "What blocks a training run comes first: training files before inference-only ones (whose only work is "
    "inference APIs such as `torch_neuronx.trace` or NxD's `ModelBuilder`), then files that more local files "
    "import (a module imported by 30 scripts is migrated once, early), then blocked (its torch_xla import "
    "stays) before manual, unsafe and auto, then the most minutes first."
)
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
    inference_only: bool = False  # its only migration work is inference APIs: it blocks no training run

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
    tier: str = ""  # the effort tier it is costed by ("": by its concept)
    minutes: int = 0  # the estimate's typical minutes for it (0 when a fix resolves it)

    @property
    def location(self) -> str:
        cell = f"cell {self.cell}:" if self.cell is not None else ""
        return f"{self.path}:{cell}{self.line}"


@dataclass(frozen=True)
class ConceptGroup:
    """The manual findings of one concept (each costed by its concept's row, or by its tier)."""

    concept: str
    label: str
    minutes_each: int | None  # None where the items are costed by tier
    items: tuple[Item, ...]

    @property
    def minutes(self) -> int:
        return sum(item.minutes for item in self.items)


@dataclass(frozen=True)
class EffortRow:
    """One row of the estimate: a concept's manual findings, or an effort tier's findings."""

    key: str  # a concept, or a tier
    label: str
    tier: bool  # a tier row: `fixed` counts its findings a fix resolves (they cost nothing)
    left: int  # findings left to a person
    minutes_each: int
    fixed: int = 0

    @property
    def minutes(self) -> int:
        return self.left * self.minutes_each


@dataclass(frozen=True)
class LibraryConcept:
    """One concept of a library (NxD's mesh, tensor-parallel layers, pipeline...) and its use."""

    key: str
    label: str
    codes: tuple[str, ...]  # the rules that find it
    inference: bool  # an inference API: it blocks no training run
    files: int
    findings: int
    left: int  # findings no fix resolves
    minutes: int = 0  # their typical minutes


@dataclass(frozen=True)
class LibraryFile:
    """One file that depends on the library: the concepts it uses, with their findings."""

    path: str
    uses: tuple[tuple[str, int], ...]  # (concept key, findings), in the library's concept order
    left: int  # findings no fix resolves
    minutes: int  # their typical minutes

    @property
    def findings(self) -> int:
        return sum(count for _, count in self.uses)


@dataclass(frozen=True)
class Library:
    """The files that depend on a library the migration removes, grouped by concept."""

    name: str
    concepts: tuple[LibraryConcept, ...]  # the concepts used, in the library's order
    files: tuple[LibraryFile, ...]  # training files first, then inference-only ones; by path

    def label(self, key: str) -> str:
        return next((c.label for c in self.concepts if c.key == key), key)


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
    estimate_rows: tuple[EffortRow, ...] = ()  # concept rows, then tier rows; they sum to the estimate
    library: Library | None = None  # the files that depend on NxD, by concept

    def status_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for row in self.files:
            counts[row.status] += 1
        return counts

    def kind_totals(self) -> dict[str, int]:
        return {k: sum(getattr(r, k) for r in self.families) for k in KINDS}

    @property
    def total_minutes(self) -> int:
        return sum(row.minutes for row in self.estimate_rows)

    @property
    def estimate(self) -> Effort:
        return effort_range(self.total_minutes)

    @property
    def blocker_count(self) -> int:
        return sum(g.count for g in self.blockers)


def fallback_text(smoke: SmokeSummary) -> str:
    """The fallbacks cell: the ops, or none; and, for a prediction, plainly that the ops the
    compat data does not list may fall back too."""
    shown = ", ".join(smoke.fallbacks)
    unknown = smoke.unknown_ops if smoke.fallbacks_predicted else 0
    if not unknown:
        return shown or "none"
    ops = f"{unknown} op is" if unknown == 1 else f"{unknown} ops are"
    unlisted = (
        f"{ops} not in the compat data, so whether {'it falls' if unknown == 1 else 'they fall'} back is not known"
    )
    return f"{shown}; {unlisted}" if shown else f"none predicted; {unlisted}"


def effort_range(minutes: int) -> Effort:
    low, high = EFFORT_RANGE
    return Effort(minutes, round(minutes * low), round(minutes * high))


def folder_of(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else "."
