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

    @property
    def ok(self) -> bool:
        """True only when the run succeeded and parity (if asked for) matched."""
        parity_ok = self.parity is None or self.parity.status != "mismatch"
        return self.status == OK and parity_ok

    @property
    def fallbacks_predicted(self) -> bool:
        return self.device == EMULATED
