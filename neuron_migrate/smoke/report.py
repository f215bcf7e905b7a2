"""What a smoke run found: frozen values the renderers and `report_findings` read. No torch."""

from __future__ import annotations

from dataclasses import dataclass

from neuron_migrate.smoke.sites import Site

# Report status values. Only OK means the run succeeded (exit code 0).
OK = "ok"
FAILED = "failed"  # the user's script raised or exited non-zero
TIMEOUT = "timeout"
ERROR = "error"  # the smoke run itself could not run the script (no device, bad setup)

EMULATED = "emulated"
NEURON = "neuron"


@dataclass(frozen=True)
class OpRecord:
    """One ATen op executed on `neuron`: how often, from which user lines, and its compat status."""

    op: str
    count: int
    status: str  # native | cpu-fallback | unsupported | unknown
    sites: tuple[Site, ...] = ()


@dataclass(frozen=True)
class Fallback:
    """An op that runs on the CPU instead of `neuron`: measured on hardware or predicted."""

    op: str
    measured: bool  # True: torch_neuronx.get_fallback_ops(); False: predicted from compat data
    status: str  # cpu-fallback | unsupported (predicted), cpu-fallback (measured)
    source: str  # compat citation, or "torch_neuronx.get_fallback_ops()"
    count: int = 0  # calls seen by the recorder (0 when it did not see the op)
    sites: tuple[Site, ...] = ()


@dataclass(frozen=True)
class Event:
    """A problem seen while the script ran: `float64` or `device-mixing`."""

    kind: str
    op: str
    detail: str
    count: int
    site: Site | None = None


@dataclass(frozen=True)
class ParityStep:
    """One compared value: a loss passed to `backward()` or the final outputs."""

    label: str  # "loss 1", "loss 2", ..., "output"
    value: float | None  # neuron run (first element for outputs)
    reference: float | None  # CPU reference run
    max_abs_diff: float
    ok: bool
    site: Site | None = None
    rank: int | None = None  # `--parity`: the rank farthest from the 1-rank run (None: their mean)


@dataclass(frozen=True)
class Parity:
    """The result of `--compare-cpu`."""

    status: str  # ok | mismatch | skipped
    precision: str  # "bf16/fp16" or "fp32"
    rtol: float
    atol: float
    steps: tuple[ParityStep, ...] = ()
    message: str = ""


@dataclass(frozen=True)
class RankParity:
    """The result of `--parity`: the N-rank run against the 1-rank run of the same script."""

    status: str  # ok | mismatch | unproved (nothing could be compared: a failure)
    nproc: int
    ranks: str  # "each": every rank must match; "mean": the mean over the ranks must
    value: str  # what was compared, in words
    precision: str  # "bf16/fp16" or "fp32"
    rtol: float
    atol: float
    steps: tuple[ParityStep, ...] = ()
    message: str = ""

    @property
    def problem(self) -> str:
        """Why the N-rank run is not proved equal to the 1-rank run; "" when it is."""
        if self.status == "ok":
            return ""
        if self.status == "unproved":
            return f"parity of {self.nproc} ranks with 1 rank is not proved: {self.message}"
        first = next((s for s in self.steps if not s.ok), None)
        if first is None:
            return f"{self.nproc} ranks disagree with 1 rank: {self.message}"
        where = f" on rank {first.rank}" if first.rank is not None else " in the mean over the ranks"
        return (
            f"{self.nproc} ranks disagree with 1 rank: {first.label} differs by {first.max_abs_diff:.2e}{where}"
            f" (rtol={self.rtol:g}, atol={self.atol:g})"
        )


@dataclass(frozen=True)
class Collective:
    """A c10d collective that moved tensors between ranks, and the user lines that ran it."""

    op: str  # "c10d::allreduce_"
    count: int  # calls, summed over the ranks
    sites: tuple[Site, ...] = ()


@dataclass(frozen=True)
class Replicas:
    """Whether the ranks' trained parameters agree at the end of a multi-rank run."""

    status: str  # agree | differ | unchecked
    compared: int  # parameters compared across the ranks
    sharded: int = 0  # sharded parameters: one copy in total, nothing to compare
    detail: str = ""  # the first parameter that differs, or why nothing was compared


@dataclass(frozen=True)
class XlaImport:
    """A lookup of a torch_xla module, from a user line, that found nothing (the import failed)."""

    module: str  # "torch_xla": the first package the import machinery looks up
    site: Site


@dataclass(frozen=True)
class Failure:
    """Why the run did not succeed, mapped to the user's line when there is one."""

    type: str
    message: str
    traceback: str
    likely_cause: str
    site: Site | None = None
    rank: int = 0


@dataclass(frozen=True)
class SmokeReport:
    """Everything one `neuron-migrate smoke` invocation found."""

    script: str
    status: str
    device: str  # "neuron", "emulated", or "none" when no device could be used
    target_version: str
    nproc: int
    steps: int
    forwards: int
    backwards: int
    stop_reason: str
    wall_time_s: float
    ops: tuple[OpRecord, ...] = ()
    fallbacks: tuple[Fallback, ...] = ()
    events: tuple[Event, ...] = ()
    parity: Parity | None = None
    failure: Failure | None = None
    notes: tuple[str, ...] = ()
    output_tail: str = ""
    measured_executed_ops: tuple[str, ...] = ()  # torch_neuronx.get_executed_ops() on hardware
    collectives: tuple[Collective, ...] = ()
    replicas: Replicas | None = None  # None for a one-rank run
    step_site: Site | None = None  # the first optimizer step of the script
    xla_imports: tuple[XlaImport, ...] = ()  # the user's failed torch_xla imports, on any rank
    compat_made_from: str = ""  # what the compat data the predictions come from was made from
    rank_parity: RankParity | None = None  # `--parity`: this N-rank run against a 1-rank run

    @property
    def unknown_ops(self) -> tuple[OpRecord, ...]:
        """Ops the compat data does not list: whether they run natively is not known."""
        return tuple(op for op in self.ops if op.status == "unknown")

    @property
    def device_unused(self) -> bool:
        """True when a successful training or inference run issued no op on `neuron`."""
        ran = self.steps or self.forwards or self.backwards
        return self.status == OK and bool(ran) and not self.ops and not self.measured_executed_ops

    @property
    def caught_xla_imports(self) -> tuple[XlaImport, ...]:
        """The failed torch_xla imports the script survived (caught), not the one it died of."""
        died_at = self.failure.site if self.failure is not None and self.status != OK else None
        if died_at is None:
            return self.xla_imports
        return tuple(i for i in self.xla_imports if (i.site.path, i.site.line) != (died_at.path, died_at.line))

    @property
    def independent(self) -> str:
        """Why the ranks of a successful multi-rank training run did not train together.

        "" when they did, and for inference runs (nothing trained; ranks that each serve their
        own inputs need not communicate).
        """
        if self.nproc < 2 or self.status != OK or not (self.steps or self.backwards):
            return ""
        if not self.collectives:
            return f"{self.nproc} ranks trained independently: no collective exchanged a tensor"
        if self.replicas is not None and self.replicas.status == "differ":
            return f"{self.nproc} ranks trained independently: {self.replicas.detail}"
        return ""

    @property
    def problems(self) -> tuple[str, ...]:
        """Why the smoke test fails; empty when it passes."""
        found = [] if self.status == OK else [self._ending_problem()]
        mixing = sum(1 for e in self.events if e.kind == "device-mixing")
        if mixing:
            places = "1 place" if mixing == 1 else f"{mixing} places"
            found.append(f"device mixing at {places}, an error on real `neuron` hardware")
        if self.parity is not None and self.parity.status == "mismatch":
            found.append("the numbers differ from the CPU run")
        if self.rank_parity is not None and self.rank_parity.problem:
            found.append(self.rank_parity.problem)
        if self.independent:
            found.append(self.independent)
        if self.device_unused:
            found.append(f"the run never used the `{NEURON}` device: no op ran on it")
        found += [
            f"the script looked for `{i.module}` at {i.site.path}:{i.site.line}, found none and ran its fallback"
            for i in self.caught_xla_imports
        ]
        return tuple(found)

    def _ending_problem(self) -> str:
        """Why a run that did not end well failed, in one clause."""
        failure = self.failure
        if failure is None:
            return f"the run ended with status `{self.status}`"
        if self.status == TIMEOUT:
            return f"the run timed out ({failure.message})"
        if self.status == ERROR:
            return f"smoke could not run the script: {failure.message}"
        if failure.type in ("Exit", "SystemExit"):
            return failure.message
        where = f" at {failure.site.path}:{failure.site.line}" if failure.site is not None else ""
        return f"the script raised `{failure.type}`{where}"

    @property
    def ok(self) -> bool:
        """True only when the run succeeded, mixed no devices and matched the CPU run if asked."""
        return not self.problems

    @property
    def fallbacks_predicted(self) -> bool:
        return self.device == EMULATED
