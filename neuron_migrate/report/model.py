"""The report's data: per-file status, counts by family and rule, manual work by concept,
packaging and launch findings, the effort estimate, the beta limits hit and the run's settings.

Everything here is computed from `FileResult`s; nothing reads files or the clock (the CLI
passes the date in `RunInfo`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from neuron_migrate.model import FileResult, Finding, Safety

STATUSES = ("done", "auto", "unsafe", "manual", "clean")
STATUS_MEANING: Mapping[str, str] = MappingProxyType(
    {
        "done": "no torch_xla left, and the file uses the `neuron` device",
        "auto": "everything left has a safe fix: `--fix` finishes it",
        "unsafe": "the rest needs `--unsafe-fixes` (review the change)",
        "manual": "some findings have no fix: a person must rewrite them",
        "clean": "never used torch_xla",
    }
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

# Concept of each rule, by the longest matching code prefix. The effort table is keyed by these.
_CONCEPT_PREFIXES: Mapping[str, str] = MappingProxyType(
    {
        "NM1": "device",
        "NM105": "dtypes",
        "NM2": "execution",
        "NM204": "distributed",
        "NM207": "profiling",
        "NM208": "checkpoints",
        "NM209": "checkpoints",
        "NM210": "checkpoints",
        "NM211": "internals",
        "NM299": "internals",
        "NM3": "distributed",
        "NM306": "collectives",
        "NM308": "data-loading",
        "NM309": "launch",
        "NM310": "launch",
        "NM311": "fsdp",
        "NM312": "spmd",
        "NM4": "unsupported-api",
        "NM411": "dtypes",
        "NM412": "dtypes",
        "NM413": "dtypes",
        "NM5": "compile",
        "NM60": "environment",
        "NM601": "imports",
        "NM602": "imports",
        "NM62": "packaging",
        "NM624": "fsdp",
        "NM63": "environment",
        "NM631": "launch",
        "NM7": "smoke",
        "NM9": "tool",
    }
)
CONCEPTS: Mapping[str, str] = MappingProxyType(
    {
        "launch": "launch: spawn, process groups, launcher scripts",
        "collectives": "collectives",
        "spmd": "SPMD sharding",
        "fsdp": "FSDP",
        "distributed": "ranks, barriers, optimizer step",
        "data-loading": "data loading",
        "device": "device placement",
        "execution": "execution model",
        "compile": "torch.compile",
        "unsupported-api": "APIs the beta lacks",
        "dtypes": "dtypes (float64, autocast)",
        "profiling": "profiling and metrics",
        "checkpoints": "checkpoints and RNG state",
        "internals": "torch_xla internals",
        "imports": "imports",
        "environment": "environment variables",
        "packaging": "packaging: requirements and pins",
        "smoke": "smoke run findings",
        "tool": "files the tool could not check",
    }
)
# Minutes a person needs per manual finding of each concept: an estimate, overridable in config
# (`[tool.neuron-migrate.report-effort]`). Documented in docs/report.md.
DEFAULT_EFFORT: Mapping[str, int] = MappingProxyType(
    {
        "launch": 30,
        "collectives": 20,
        "spmd": 240,
        "fsdp": 120,
        "distributed": 15,
        "data-loading": 20,
        "device": 10,
        "execution": 15,
        "compile": 15,
        "unsupported-api": 60,
        "dtypes": 15,
        "profiling": 15,
        "checkpoints": 20,
        "internals": 45,
        "imports": 5,
        "environment": 10,
        "packaging": 10,
        "smoke": 30,
        "tool": 10,
    }
)
PACKAGING_PREFIXES = ("NM62", "NM63")
BETA_LIMITS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "unsupported APIs": ("NM401", "NM402", "NM403", "NM404", "NM405", "NM406", "NM407", "NM408", "NM409", "NM410"),
        "float64": ("NM411", "NM412", "NM413", "NM703"),
        "torch.compile flags": ("NM502", "NM503", "NM504", "NM505", "NM506", "NM507"),
    }
)


def concept_of(code: str) -> str:
    """The concept a rule belongs to (see CONCEPTS)."""
    best = max((p for p in _CONCEPT_PREFIXES if code.startswith(p)), key=len, default="")
    return _CONCEPT_PREFIXES.get(best, "tool")


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


@dataclass(frozen=True)
class FileRow:
    path: str
    status: str
    safe: int
    unsafe: int
    manual: int

    @property
    def total(self) -> int:
        return self.safe + self.unsafe + self.manual


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


def file_status(result: FileResult, kind: KindOf = kind_of) -> str:
    """One of STATUSES for a file that was checked and not fixed."""
    kinds = {kind(f) for f in result.findings}
    if "manual" in kinds:
        return "manual"
    if "unsafe" in kinds:
        return "unsafe"
    if kinds:
        return "auto"
    return "done" if "neuron" in (result.source or "") else "clean"


def _file_row(result: FileResult, kind: KindOf) -> FileRow:
    kinds = [kind(f) for f in result.findings]
    return FileRow(
        result.path, file_status(result, kind), kinds.count("safe"), kinds.count("unsafe"), kinds.count("manual")
    )


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


def build(
    results: Sequence[FileResult],
    run: RunInfo,
    smoke: object | None = None,
    kinds: Mapping[tuple[object, ...], str] | None = None,
) -> Report:
    """The report for the results of a check run (nothing fixed).

    `kinds` maps a finding's sort key to what `--fix` really does with it (see
    `report.command.fix_kinds`); without it, each finding's own fix decides.
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
    return Report(
        run=run,
        files=tuple(sorted((_file_row(r, kind) for r in results), key=lambda row: row.path)),
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
    )
