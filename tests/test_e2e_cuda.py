"""CUDA programs (tests/e2e/cuda/) migrated with `--from cuda`.

`--fix --unsafe-fixes` (target `neuron`) must leave no finding, and each program must run under
`smoke` on 1 and 2 emulated ranks. `--target accelerator` must leave only guidance findings, and
each program must then run unchanged with plain `python` on this CPU-only machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from neuron_migrate.run.discover import discover
from neuron_migrate.run.parallel import run_targets
from neuron_migrate.settings import Settings

PROGRAMS = ROOT / "tests" / "e2e" / "cuda"
NAMES = sorted(p.name for p in PROGRAMS.glob("*.py"))
# With --target accelerator these stay, on purpose: the code must keep working on CUDA.
GUIDANCE = {"NM507", "NM806", "NM810"}


def _settings(target: str, fix: bool) -> Settings:
    return Settings(fix=fix, unsafe_fixes=fix, families=("cuda",), target=target)


def _migrate(folder: Path, target: str) -> Path:
    shutil.copytree(PROGRAMS, folder)
    run_targets(discover([folder], _settings(target, True), folder.parent), _settings(target, True))
    return folder


@pytest.fixture(scope="module")
def neuron_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _migrate(tmp_path_factory.mktemp("cuda-e2e") / "neuron", "neuron")


@pytest.fixture(scope="module")
def accelerator_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _migrate(tmp_path_factory.mktemp("cuda-e2e") / "accelerator", "accelerator")


def _code(path: Path) -> str:
    """A program's text after its module docstring (which talks about CUDA on purpose)."""
    return path.read_text().split('"""', 2)[2]


def _remaining(folder: Path, target: str) -> list[str]:
    results = run_targets(discover([folder], _settings(target, False), folder.parent), _settings(target, False))
    return [f"{Path(f.path).name}:{f.start.line} {f.code} {f.message}" for r in results for f in r.findings]


def test_there_are_four_programs_and_each_is_cuda_code() -> None:
    assert NAMES == ["infer_compile.py", "train_amp.py", "train_ddp.py", "train_single.py"]
    for name in NAMES:
        assert "cuda" in (PROGRAMS / name).read_text()


def test_neuron_fix_leaves_no_finding_and_no_cuda(neuron_dir: Path) -> None:
    assert _remaining(neuron_dir, "neuron") == []
    for name in NAMES:
        compile((neuron_dir / name).read_text(), name, "exec")
        source = _code(neuron_dir / name)
        assert "torch.cuda" not in source and ".cuda(" not in source and '"cuda' not in source, name
        assert "nccl" not in source.lower(), name


def test_accelerator_fix_leaves_only_guidance(accelerator_dir: Path) -> None:
    remaining = _remaining(accelerator_dir, "accelerator")
    assert {line.split()[1] for line in remaining} <= GUIDANCE, remaining
    for name in NAMES:
        source = _code(accelerator_dir / name)
        assert "torch.cuda" not in source and ".cuda(" not in source and '"neuron"' not in source, name


def test_a_second_fix_changes_nothing(neuron_dir: Path, accelerator_dir: Path) -> None:
    for folder, target in ((neuron_dir, "neuron"), (accelerator_dir, "accelerator")):
        before = {p.name: p.read_bytes() for p in folder.glob("*.py")}
        run_targets(discover([folder], _settings(target, True), folder.parent), _settings(target, True))
        assert {p.name: p.read_bytes() for p in folder.glob("*.py")} == before


@pytest.mark.slow
@pytest.mark.parametrize("nproc", [1, 2])
@pytest.mark.parametrize("name", NAMES)
def test_neuron_migration_runs_under_smoke(neuron_dir: Path, name: str, nproc: int) -> None:
    pytest.importorskip("torch")
    from neuron_migrate.smoke import SmokeOptions, run_smoke

    options = SmokeOptions(device="emulate", steps=3, timeout_s=240, nproc=nproc, base_dir=neuron_dir)
    report = run_smoke(neuron_dir / name, (), options)
    assert report.status == "ok", report.failure
    assert report.nproc == nproc
    if nproc == 2 and name in ("train_single.py", "train_amp.py"):
        # single-device programs: two ranks train two models, and smoke says so (NM708)
        assert report.independent.startswith("2 ranks trained independently"), report.problems
        assert report.problems == (report.independent,)
    else:
        assert report.ok, report.problems
    if name.startswith("train_"):
        assert report.steps == 3, report
    else:
        assert report.forwards == 3, report
    ops = {op.op for op in report.ops}
    if name == "train_ddp.py":
        assert "c10d::allreduce_" in ops, sorted(ops)  # DDP all-reduces: the ranks train together
    assert report.events == (), report.events  # no float64, no device mixing


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_accelerator_migration_runs_with_plain_python_on_the_cpu(accelerator_dir: Path, name: str) -> None:
    pytest.importorskip("torch")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env["CUDA_VISIBLE_DEVICES"] = ""
    done = subprocess.run(
        [sys.executable, "-W", "ignore", name], check=False, cwd=accelerator_dir, env=env,
        capture_output=True, text=True, timeout=400,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip(), "the program printed nothing"
