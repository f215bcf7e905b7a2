"""End to end: the NxD programs migrated by `--fix --unsafe-fixes`, then run on 1 and 2 ranks.

Each migrated program is a reviewed snapshot (`programs/<name>.fixed.py`, rewritten with
`--update-fixtures`), keeps only the documented findings, imports neither neuronx_distributed nor
torch_xla, and a second fix changes nothing. Run with torchrun on the CPU with gloo (see
`nxd_harness`), its 2-rank losses equal its 1-rank losses, and both equal those of the native port
written by hand (`<name>.native.py`): the codemod wrote what an expert would. The fused QKV
projection cannot be split mechanically: it keeps its findings and gets no fix (NM321's `stride`).
Controls show the checks can fail: the migrated sequence-parallel program with the gradient sum
NM340 deletes put back trains another model on 2 ranks. The same migrated programs also pass
`neuron-migrate smoke --parity` (2 emulated `neuron` ranks against 1), the command users run.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import expect
from nxd_harness import PROGRAMS_DIR, Run, agree, run_on_cpu

from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.settings import Settings


@dataclass(frozen=True)
class Program:
    """An NxD program and what `--fix --unsafe-fixes` must leave of it."""

    name: str
    left: tuple[str, ...] = ()  # the codes of the findings that stay, with multiplicity
    parity_ranks: str = "each"  # smoke --parity-ranks: each (tensor parallel) or mean (data parallel)
    # smoke --parity-value: the variable to compare, where the model's output is this rank's vocabulary
    # shard (NxD's column-parallel head, kept local), which no 1-rank output equals
    parity_value: str = ""

    @property
    def path(self) -> Path:
        return PROGRAMS_DIR / f"{self.name}.py"

    @property
    def runs(self) -> bool:
        return not self.left


PROGRAMS = (
    Program("dp_allreduce", parity_ranks="mean"),
    Program("tp_mlp"),
    Program("vocab_parallel_lm", parity_value="loss"),
    Program("sequence_parallel", parity_value="loss"),
    Program("zero1", parity_ranks="mean"),
    Program("checkpoint_roundtrip"),
    # stride=3 is declined, so the class (and the NxD import) stays: a finding, no half-sharded class.
    Program("fused_qkv", left=("NM321", "NM321", "NM338")),
)
RUNNING = [p for p in PROGRAMS if p.runs]


def migrate(text: str, name: str) -> tuple[str, tuple[str, ...]]:
    result = check_source(text, f"{name}.py", Settings(fix=True, unsafe_fixes=True))
    return result.fixed_source or text, tuple(sorted(f.code for f in result.findings))


def _modules(text: str) -> set[str]:
    tree = ast.parse(text)
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    return {name.split(".")[0] for name in names}


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_fix_leaves_only_the_documented_findings(program: Program, update_fixtures: bool) -> None:
    text, left = migrate(program.path.read_text(encoding="utf-8"), program.name)
    expect(PROGRAMS_DIR / f"{program.name}.fixed.py", text, update_fixtures)
    assert Counter(left) == Counter(program.left)
    assert migrate(text, program.name)[0] == text, "a second fix changes the program"
    if program.runs:
        assert not _modules(text) & {"neuronx_distributed", "torch_xla"}


def test_the_installed_cli_migrates_a_program_in_place(tmp_path: Path) -> None:
    script = tmp_path / "tp_mlp.py"
    shutil.copy(PROGRAMS_DIR / "tp_mlp.py", script)
    command = [str(Path(sys.executable).with_name("neuron-migrate")), "check", "--fix", "--unsafe-fixes", str(script)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert script.read_text(encoding="utf-8") == (PROGRAMS_DIR / "tp_mlp.fixed.py").read_text(encoding="utf-8")


def _runs(text: str, folder: Path) -> tuple[Run, Run]:
    (folder / "one").mkdir()
    (folder / "two").mkdir()
    return run_on_cpu(text, folder / "one", 1), run_on_cpu(text, folder / "two", 2)


@pytest.mark.slow
@pytest.mark.parametrize("program", RUNNING, ids=lambda p: p.name)
def test_migrated_program_trains_as_its_native_port_on_one_and_two_ranks(program: Program, tmp_path: Path) -> None:
    fixed = (PROGRAMS_DIR / f"{program.name}.fixed.py").read_text(encoding="utf-8")
    one, two = _runs(fixed, tmp_path)
    assert one.returncode == 0 and two.returncode == 0, (one.output[-2000:], two.output[-3000:])
    assert agree(one, two), (one.losses, two.losses)
    native = run_on_cpu((PROGRAMS_DIR / f"{program.name}.native.py").read_text(encoding="utf-8"), tmp_path / "one", 1)
    assert agree(one, native), (one.losses, native.losses)


@pytest.mark.slow
def test_the_gradient_sum_kept_trains_another_model(tmp_path: Path) -> None:
    """Control for NM340: summing the SequenceParallel norms' gradients again, as the NxD script did."""
    fixed = (PROGRAMS_DIR / "sequence_parallel.fixed.py").read_text(encoding="utf-8")
    backward = "            loss.backward()\n"
    again = (
        "            for norm in (model.block.norm, model.final_norm):\n"
        "                for grad in (norm.weight.grad, norm.bias.grad):\n"
        '                    dist.all_reduce(grad.to_local(), group=_MESH["tp"].get_group())\n'
    )
    assert backward in fixed
    one, two = _runs(fixed.replace(backward, backward + again), tmp_path)
    assert one.returncode == 0 and two.returncode == 0, two.output[-3000:]
    assert not agree(one, two), (one.losses, two.losses)


@pytest.mark.slow
@pytest.mark.parametrize("program", RUNNING, ids=lambda p: p.name)
def test_migrated_program_passes_smoke_parity(program: Program, tmp_path: Path) -> None:
    """`neuron-migrate smoke --parity`: 2 emulated ranks give the 1-rank losses at every step."""
    script = tmp_path / f"{program.name}.py"
    shutil.copy(PROGRAMS_DIR / f"{program.name}.fixed.py", script)
    smoke = [str(Path(sys.executable).with_name("neuron-migrate")), "smoke", script.name, "--parity", "--nproc", "2"]
    smoke += ["--parity-ranks", program.parity_ranks, "--steps", "6", "--device", "emulate"]
    smoke += ["--parity-value", program.parity_value] if program.parity_value else []
    done = subprocess.run(smoke, capture_output=True, text=True, cwd=tmp_path, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert done.stdout.startswith(f"smoke PASSED: {script.name}")
    assert "parity with 1 rank: ok" in done.stdout
