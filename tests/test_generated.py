"""Every generated file is fresh, and `neuron-migrate dev generate` is the one command that writes
them all (neuron_migrate/generate/__init__.py lists them)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from neuron_migrate.generate import COMMAND, GENERATED, Generated, begin_marker, end_marker, expected


@pytest.mark.parametrize("entry", GENERATED, ids=lambda e: f"{e.path}#{e.block}" if e.block else e.path)
def test_every_generated_file_is_fresh(entry: Generated) -> None:
    current = (ROOT / entry.path).read_text(encoding="utf-8")
    assert current == expected(entry, current), f"{entry.path} is stale: run `{COMMAND}`"


def test_every_generated_file_says_what_writes_it() -> None:
    for entry in GENERATED:
        head = (ROOT / entry.path).read_text(encoding="utf-8")
        assert COMMAND in (head if entry.block else head.splitlines()[0] + head.splitlines()[1]), entry.path


def _copy(tmp_path: Path, names: tuple[str, ...]) -> Path:
    copy = tmp_path / "project"
    for name in names:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        else:
            shutil.copy2(source, copy / name)
    return copy


def _generate(copy: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(copy)}
    return subprocess.run(
        [sys.executable, "-m", "neuron_migrate", "dev", "generate", *args],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_dev_generate_rewrites_what_is_stale_and_nothing_else(tmp_path: Path) -> None:
    copy = _copy(
        tmp_path, ("neuron_migrate", "rules", "docs", "fixtures", "README.md", "CONTRIBUTING.md", "pyproject.toml")
    )
    readme = (copy / "README.md").read_text(encoding="utf-8")
    block = readme.split(begin_marker("output-formats"))[1].split(end_marker("output-formats"))[0]
    (copy / "README.md").write_text(readme.replace(block, "\n| stale |\n"), encoding="utf-8")
    (copy / "docs" / "sources.md").write_text("edited by hand\n", encoding="utf-8")
    (copy / "rules" / "compat" / "2.14" / "ops.toml").unlink()

    checked = _generate(copy, "--check")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert checked.stdout.splitlines() == [
        "Stale: docs/sources.md",
        "Stale: rules/compat/2.14/ops.toml",
        "Stale: README.md",
    ]
    written = _generate(copy)
    assert written.returncode == 0, written.stderr
    assert [line.removeprefix("Wrote: ") for line in written.stdout.splitlines()] == [
        "docs/sources.md",
        "rules/compat/2.14/ops.toml",
        "README.md",
    ]
    for entry in GENERATED:
        assert (copy / entry.path).read_bytes() == (ROOT / entry.path).read_bytes(), entry.path
    again = _generate(copy, "--check")
    assert again.returncode == 0 and again.stdout == f"All {len(GENERATED)} generated files are up to date.\n"


def test_dev_generate_refuses_a_readme_without_its_markers(tmp_path: Path) -> None:
    copy = _copy(
        tmp_path, ("neuron_migrate", "rules", "docs", "fixtures", "README.md", "CONTRIBUTING.md", "pyproject.toml")
    )
    (copy / "README.md").write_text("# no markers\n", encoding="utf-8")
    (copy / "docs" / "sources.md").write_text("edited by hand\n", encoding="utf-8")
    done = _generate(copy)
    assert done.returncode == 2
    assert "README.md: needs one `<!-- generated: output-formats" in done.stderr
    assert (copy / "docs" / "sources.md").read_text(encoding="utf-8") == "edited by hand\n", "nothing written"


def test_dev_generate_outside_a_checkout_says_so(tmp_path: Path) -> None:
    copy = _copy(tmp_path, ("neuron_migrate",))  # as a wheel installs it: no pyproject.toml, rules/, docs/
    done = _generate(copy)
    assert done.returncode == 2
    assert done.stderr.startswith("neuron-migrate: error: neuron-migrate dev generate writes into a source checkout")
