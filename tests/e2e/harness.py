"""Migrate the e2e programs and run them under `smoke`: shared by test_e2e.py and table.py.

Each program in `programs/` is a torch_xla script written from scratch after a common public
pattern, with its data made in code. `PROGRAMS` says which findings are documented to stay
after `--fix --unsafe-fixes`, and whether the migrated script runs and is distributed.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.model import FileResult
from neuron_migrate.settings import Settings

HERE = Path(__file__).resolve().parent
PROGRAMS_DIR = HERE / "programs"
ROOT = HERE.parent.parent


@dataclass(frozen=True)
class Program:
    """What a program is expected to leave and do after `--fix --unsafe-fixes`."""

    name: str
    # Codes of the findings that stay manual, with multiplicity.
    left: tuple[str, ...] = ()
    # On 2 ranks it must show collectives and agreeing replicas.
    distributed: bool = False
    # False where the documented manual findings block the migrated program.
    runs: bool = True
    why_left: str = ""
    # Why the 2-rank run cannot pass yet (that test is a strict xfail).
    pending_2rank: str = ""
    # `<name>.ported.py` is the manual port the findings describe; the smoke runs use it.
    ported: bool = False
    # Why the program cannot be migrated yet: the fix it needs has not landed. Its fix and run
    # tests are strict xfails until then; flip it (and update the `.fixed.py`) when it lands.
    pending: str = ""

    @property
    def path(self) -> Path:
        return PROGRAMS_DIR / f"{self.name}.py"

    @property
    def fixed_path(self) -> Path:
        return PROGRAMS_DIR / f"{self.name}.fixed.py"

    @property
    def ported_path(self) -> Path:
        return PROGRAMS_DIR / f"{self.name}.ported.py"


PROGRAMS: tuple[Program, ...] = (
    Program("mnist_mlp"),
    Program("spawn_dp", distributed=True),
    Program("torchrun_ddp", distributed=True),
    Program("resnet_loader"),
    Program("decoder_lm"),
    Program("hf_finetune", distributed=True),
    Program("xla_fsdp", distributed=True),
    Program("eager_mode"),
    Program("collectives", distributed=True),
    Program(
        "spmd",
        left=("NM312", "NM312", "NM312", "NM103", "NM601", "NM601"),
        runs=False,
        distributed=True,
        ported=True,
        why_left="GSPMD sharding has no mechanical mapping; NM312 gives the DeviceMesh/DTensor port",
    ),
    # Issue 23's constructs: each must end with no torch_xla call left and run.
    Program("summary_metrics"),
    Program("profiler_trace"),
    Program("pjrt_group", distributed=True),
    Program("probe_import"),
    Program("amp_recipe", distributed=True),
    Program("fsdp_lambda", distributed=True),
    Program("zero1", distributed=True),
    Program("groups_allreduce", distributed=True),
    # Issue 37's: references, a tuple-returning probe, an init one call deep, an RNG dict round trip.
    Program("references_probe", distributed=True),
)


def by_name(name: str) -> Program:
    return next(p for p in PROGRAMS if p.name == name)


def migrate(program: Program, *, fix: bool, unsafe: bool) -> FileResult:
    """Check (and fix) the program with every rule on, as `neuron-migrate --fix [--unsafe-fixes]`."""
    text = program.path.read_text(encoding="utf-8")
    return check_source(text, program.path.name, Settings(select=("NM",), fix=fix, unsafe_fixes=unsafe))


def fixed_text(program: Program) -> str:
    result = migrate(program, fix=True, unsafe=True)
    return result.fixed_source if result.fixed_source is not None else program.path.read_text(encoding="utf-8")


def codes(result: FileResult) -> Counter[str]:
    return Counter(f.code for f in result.findings)


def collectives(report: Any) -> dict[str, int]:
    """The c10d collectives a smoke report saw, with their counts."""
    seen = getattr(report, "collectives", ())  # smoke's own list, where it has one
    if seen:
        return {c.op: c.count for c in seen}
    return {op.op: op.count for op in report.ops if op.op.startswith("c10d::") and "barrier" not in op.op}


def problems(program: Program, report: Any, nproc: int) -> list[str]:
    """Why a migrated program's smoke run is not what the e2e suite expects; [] when it is.

    Every run must succeed and reach an optimizer step. On 2 ranks a distributed program must
    exchange tensors and end with agreeing replicas (FSDP's sharded parameters have one copy,
    nothing to compare); a single-device program trains one copy per rank, which smoke must
    report (NM708) rather than pass.
    """
    found = [] if report.status == "ok" else [f"status {report.status}: {report.failure}"]
    if report.steps < 1:
        found.append("no optimizer step")
    independent = getattr(report, "independent", None)  # NM708, where smoke checks it
    found += [p for p in report.problems if p != independent and not p.startswith("the run ended")]
    if nproc < 2:
        return found
    if program.distributed:
        if not collectives(report):
            found.append("no collective exchanged a tensor between the ranks")
        replicas = getattr(report, "replicas", None)
        all_sharded = replicas is not None and replicas.status == "unchecked" and replicas.sharded > 0
        if replicas is not None and replicas.status != "agree" and not all_sharded:
            found.append(f"replicas {replicas.status}: {replicas.detail}")
        if independent:
            found.append(independent)
    elif independent == "" and report.status == "ok":
        found.append("smoke did not report the independently trained ranks (NM708)")
    return found


def run_fixed(program: Program, folder: Path, nproc: int, steps: int = 2, env: dict[str, str] | None = None) -> Any:
    """Write the migrated program into `folder` and run it under `smoke` on `nproc` emulated ranks.

    The ranks' `TMPDIR` is `folder` (unless `env` sets one), so what a program makes with
    `tempfile.mkdtemp` (hf_finetune's output, fsdp_lambda's checkpoints, profiler_trace's
    traces) lands in the test's own folder, which pytest removes, and never in /tmp.
    """
    from neuron_migrate.smoke import run_smoke
    from neuron_migrate.smoke.runner import SmokeOptions

    script = folder / program.path.name
    text = program.ported_path.read_text(encoding="utf-8") if program.ported else fixed_text(program)
    script.write_text(text, encoding="utf-8")
    child_env = dict(os.environ if env is None else env)
    if env is None or "TMPDIR" not in env:
        child_env["TMPDIR"] = str(folder)
    options = SmokeOptions(device="emulate", timeout_s=180.0, nproc=nproc, steps=steps, base_dir=folder, env=child_env)
    return run_smoke(script, (), options)
