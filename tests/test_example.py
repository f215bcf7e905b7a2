"""The bundled example project: `--fix` removes every torch_xla import and the result compiles."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES

from neuron_migrate.run.discover import discover
from neuron_migrate.run.parallel import run_targets
from neuron_migrate.settings import Settings

pytestmark = pytest.mark.slow  # migrates the example and trains it on the emulated device

EXAMPLE = FIXTURES / "example_project"


def _imports(source: str) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


def _migrate(tmp_path: Path) -> Path:
    target = tmp_path / "example"
    shutil.copytree(EXAMPLE, target)
    run_targets(discover([target], Settings(fix=True), tmp_path), Settings(fix=True))
    return target


def test_safe_fix_removes_every_torch_xla_import(tmp_path: Path) -> None:
    assert any(name.startswith("torch_xla") for name in _imports((EXAMPLE / "train.py").read_text()))
    target = _migrate(tmp_path)
    for path in target.glob("*.py"):
        source = path.read_text()
        compile(source, str(path), "exec")
        assert not [n for n in _imports(source) if n.split(".")[0] == "torch_xla"], path.name
        assert "xm." not in source and "xr." not in source and "pl." not in source


def test_migrated_example_has_no_torch_xla_findings_left(tmp_path: Path) -> None:
    target = _migrate(tmp_path)
    results = run_targets(discover([target], Settings(), tmp_path), Settings())
    python_findings = [f for r in results for f in r.findings if f.path.endswith(".py")]
    assert python_findings == []


def test_fix_is_idempotent_on_the_example(tmp_path: Path) -> None:
    target = _migrate(tmp_path)
    before = {p.name: p.read_bytes() for p in target.iterdir()}
    run_targets(discover([target], Settings(fix=True), tmp_path), Settings(fix=True))
    assert {p.name: p.read_bytes() for p in target.iterdir()} == before


# -- run what we rewrite: the migrated example trains on the emulated `neuron` device ------------
def _smoke(script: Path, nproc: int):
    from neuron_migrate.smoke import SmokeOptions, run_smoke

    options = SmokeOptions(device="emulate", steps=3, timeout_s=120, nproc=nproc, base_dir=script.parent)
    return run_smoke(script, ("--epochs", "1"), options)


def test_migrated_example_trains_on_emulated_neuron(tmp_path: Path) -> None:
    report = _smoke(_migrate(tmp_path) / "train.py", nproc=1)
    assert report.ok, report
    assert report.steps == 3
    assert not [c for c in report.collectives if c.op == "c10d::allreduce_"]  # one rank: nothing to average
    assert report.events == ()  # no float64, no device mixing


def test_migrated_example_trains_with_two_ranks(tmp_path: Path) -> None:
    """torchrun-style: init_process_group("neuron"), DDP, the rank-0 prints and the barrier."""
    report = _smoke(_migrate(tmp_path) / "train.py", nproc=2)
    assert report.ok, report
    # The ranks trained together: DDP's gradient all-reduce ran at `loss.backward()`, and the
    # replicas agree after the steps.
    source = (tmp_path / "example" / "train.py").read_text().splitlines()
    backward = next(i for i, line in enumerate(source, start=1) if line.strip() == "loss.backward()")
    allreduce = next(c for c in report.collectives if c.op == "c10d::allreduce_")
    assert backward in {s.line for s in allreduce.sites}
    # One gradient reduction per step on each rank: DDP's, not DDP's and a helper's again.
    assert allreduce.count == report.steps * 2, allreduce
    assert "_optimizer_step" not in "\n".join(source)
    assert report.replicas is not None and report.replicas.status == "agree"
    assert report.replicas.compared == 4


def test_fix_then_smoke_from_the_cli(tmp_path: Path, monkeypatch) -> None:
    import json

    from click.testing import CliRunner

    from neuron_migrate.cli import main

    target = tmp_path / "example"
    shutil.copytree(EXAMPLE, target)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["--fix", "example", "--smoke", "example/train.py", "--output-format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == []  # nothing left, and the smoke run found nothing
    assert "smoke PASSED" in result.stderr
