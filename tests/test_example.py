"""The bundled example project: `--fix` removes every torch_xla import and the result compiles."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

from conftest import FIXTURES
from neuron_migrate.engine.files import discover
from neuron_migrate.engine.parallel import run_targets
from neuron_migrate.settings import Settings

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
