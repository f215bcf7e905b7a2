"""Frozen values shared by every layer. Imports nothing of ours."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Safety(str, Enum):
    """How a rule's fix may be applied."""

    SAFE = "safe"  # keeps behaviour; applied by --fix
    UNSAFE = "unsafe"  # may change behaviour; needs --unsafe-fixes
    MANUAL = "manual"  # no edit; the finding says what to do

    @property
    def rank(self) -> int:
        return {"safe": 0, "unsafe": 1, "manual": 2}[self.value]


class Severity(str, Enum):
    """How bad a finding is for a TorchNeuron workload."""

    ERROR = "error"  # will fail on TorchNeuron
    WARNING = "warning"  # runs, but falls back to the CPU, loses precision or changes meaning
    INFO = "info"  # cleanup and advice

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "info": 2}[self.value]


@dataclass(frozen=True, order=True)
class Position:
    """A place in a file: 1-based line, 1-based column counted in code points."""

    line: int
    column: int


@dataclass(frozen=True)
class TextEdit:
    """Replace the text from `start` up to (not including) `end` with `content`."""

    start: Position
    end: Position
    content: str


@dataclass(frozen=True, order=True)
class Requirement:
    """Another finding of the same file, by its code and start, whose fix a fix waits on."""

    code: str
    start: Position


@dataclass(frozen=True)
class Fix:
    """An edit set that resolves one finding.

    A fix with `requires` applies only once those findings' fixes are made (the deletion of a
    torch_xla import whose uses they rewrite); `--fix` makes it in a later round. `certain` is
    False where whether it then applies cannot be known before they are made (`[~]`).
    """

    applicability: Safety  # SAFE or UNSAFE, never MANUAL
    message: str
    edits: tuple[TextEdit, ...]
    requires: tuple[Requirement, ...] = ()
    certain: bool = True


@dataclass(frozen=True)
class Finding:
    """One problem at one place, with an optional fix."""

    path: str
    code: str
    name: str
    message: str
    severity: Severity
    start: Position
    end: Position
    fix: Fix | None = None
    category: str = "migration"  # "migration", "tool" (NM9xx) or "smoke" (NM7xx)
    url: str | None = None
    cell: int | None = None  # notebook cell (1-based) when the file is a notebook
    snippet: str = ""  # the source text the finding points at, for baselines and fingerprints
    # A genuine blocker: the API has no TorchNeuron counterpart a tool can write (SPMD sharding,
    # neuronx_distributed, xser, StableHLO export, Pallas), so its torch_xla import stays.
    blocker: bool = False
    # The effort tier of the API matched (`catalogue.TIERS`: mechanical, semi-mechanical, manual),
    # from the rule or its `[[map]]` entry; "" for rules that name none. The report costs by it.
    tier: str = ""

    @property
    def sort_key(self) -> tuple[str, int, int, int, str]:
        """(path, notebook cell or 0, line, column, code): the order every report uses."""
        return (self.path, self.cell or 0, self.start.line, self.start.column, self.code)


@dataclass(frozen=True)
class FileResult:
    """What checking (and maybe fixing) one file produced."""

    path: str
    findings: tuple[Finding, ...] = ()
    fixed: tuple[Finding, ...] = ()  # findings whose fixes were applied
    source: str | None = None  # the text as read (None when it could not be read)
    fixed_source: str | None = None  # the text after fixes; None when nothing changed
    suppressed: tuple[Finding, ...] = field(default=())
    # Findings of the text as read that `--fix` neither fixed nor left: their code went with
    # other fixes (a manual finding in a block whose statements all went).
    gone: tuple[Finding, ...] = ()

    @property
    def changed(self) -> bool:
        return self.fixed_source is not None and self.fixed_source != self.source
