"""The output formats are one table: adding a format is a row in `output_formats.py` and a
module under `output/`, with the snapshot and the README's list generated. The last test adds
one (Pylint's parseable format) to a copy of the project, as CONTRIBUTING's worked example does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from neuron_migrate.output_formats import NAMES, OUTPUT_FORMATS, Escaping, output_format

ROW = """    OutputFormat("pylint", "pylint", ".txt", Escaping.TERMINAL, False, False, False,
                 "Pylint's parseable format: `path:line: [CODE] message`"),
"""
MODULE = '''"""Pylint's parseable format: `path:line: [CODE] message`, one line per finding."""

from __future__ import annotations

from collections.abc import Sequence

from neuron_migrate.model import FileResult
from neuron_migrate.output.base import PLAIN, RenderOptions, all_findings


def render(results: Sequence[FileResult], options: RenderOptions = PLAIN) -> str:
    return "".join(f"{f.path}:{f.start.line}: [{f.code}] {f.message}\\n" for f in all_findings(results))
'''
COPIED = ("neuron_migrate", "rules", "fixtures", "tests", "docs", "README.md", "CONTRIBUTING.md", "pyproject.toml")


def test_the_table_names_each_format_once_with_its_module() -> None:
    assert len(set(NAMES)) == len(NAMES)
    for row in OUTPUT_FORMATS:
        assert (ROOT / "neuron_migrate" / "output" / f"{row.module}.py").is_file(), row.name
        assert row.suffix.startswith(".") and row.summary and not row.summary.endswith(".")
    assert output_format("sarif").describes_rules and output_format("junit").escaping is Escaping.MARKUP


def _tree(root: Path) -> dict[str, bytes]:
    skip = ("__pycache__", ".pytest_cache")
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and not any(part in skip for part in p.parts)
    }


def _run(copy: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(copy)}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd or copy, env=env, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.slow
def test_a_new_format_is_one_row_and_one_module(tmp_path: Path) -> None:
    copy = tmp_path / "project"
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        else:
            shutil.copy2(source, copy / name)
    before = _tree(copy)
    # The two hand-written files: the row, and the renderer.
    table = copy / "neuron_migrate" / "output_formats.py"
    text = table.read_text(encoding="utf-8")
    assert text.count(")  # fmt: skip") == 1
    table.write_text(text.replace(")  # fmt: skip", ROW + ")  # fmt: skip"), encoding="utf-8")
    (copy / "neuron_migrate" / "output" / "pylint.py").write_text(MODULE, encoding="utf-8")
    # Then what is generated: the snapshot (read it: it is the spec) and the README's list.
    update = _run(
        copy, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_output_snapshots.py", "--update-fixtures"
    )
    assert update.returncode == 0, update.stdout[-3000:] + update.stderr[-3000:]
    generated = _run(copy, "-m", "neuron_migrate", "dev", "generate")
    assert generated.stdout == "Wrote: README.md\n", generated.stdout + generated.stderr

    changed = {path for path, data in _tree(copy).items() if before.get(path) != data}
    assert changed == {
        "neuron_migrate/output_formats.py",
        "neuron_migrate/output/pylint.py",
        "tests/snapshots/pylint.txt",
        "README.md",
    }
    snapshot = (copy / "tests" / "snapshots" / "pylint.txt").read_text(encoding="utf-8")
    assert snapshot.startswith("broken.py:1: [NM901] Fix the syntax error") and "src/train.py:7: [NM201]" in snapshot
    assert "| `pylint` | Pylint's parseable format" in (copy / "README.md").read_text(encoding="utf-8")

    # The project's own tests of formats, CLI and config take the new row with no edit.
    tests = ["tests/test_output_snapshots.py", "tests/test_output_formats.py", "tests/test_cli_output.py"]
    tests += ["tests/test_config.py", "tests/test_generated.py", "tests/test_format_table.py"]
    suite = _run(copy, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-m", "not slow", *tests)
    assert suite.returncode == 0, suite.stdout[-3000:] + suite.stderr[-3000:]

    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text("import torch_xla.core.xla_model as xm\ndevice = xm.xla_device()\n")
    (work / "pyproject.toml").write_text('[tool.neuron-migrate]\noutput-format = "pylint"\n')
    checked = _run(copy, "-m", "neuron_migrate", "check", "train.py", "--no-cache", cwd=work)
    assert checked.returncode == 1, checked.stderr
    assert checked.stdout.splitlines() == [
        "train.py:1: [NM601] Remove the `torch_xla.core.xla_model` import; TorchNeuron does not use torch_xla",
        'train.py:2: [NM101] Replace `xm.xla_device()` with `torch.device("neuron")`',
    ]
    listed = _run(copy, "-m", "neuron_migrate", "check", "--help", cwd=work)
    assert "rdjson|pylint]" in listed.stdout.replace("\n", "").replace(" ", "")
