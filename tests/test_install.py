"""The package as a user gets it: `python -m build` makes the sdist and builds the wheel from
that sdist; the wheel, installed into a fresh virtualenv, runs `explain` and `check` from the
data it ships (never from this checkout).

Offline: the build runs without isolation (hatchling is in the test extra) and the new venv
reaches the dependencies already installed here through a `.pth` file, so no index is needed.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT
from packaging.requirements import Requirement

from neuron_migrate import __version__, docs

pytestmark = pytest.mark.slow  # builds an sdist and a wheel, and makes a virtualenv

TRAIN = "import torch_xla.core.xla_model as xm\ndevice = xm.xla_device()\nxm.mark_step()\n"
TRAIN_FIXED = 'import torch\ndevice = torch.device("neuron")\n'


def example_files() -> set[str]:
    """What `explain` and rules/README.md read, relative to fixtures/: each rule's basic case
    (a .py pair, or the files of basic/ without their .findings) and its accel_basic pair."""
    found = set()
    for folder in FIXTURES.iterdir():
        names = ("basic.py", "basic.fixed.py", "accel_basic.py", "accel_basic.fixed.py")
        found |= {f"{folder.name}/{name}" for name in names if (folder / name).is_file()}
        if (folder / "basic").is_dir():
            found |= {f"{folder.name}/basic/{p.name}" for p in (folder / "basic").iterdir() if p.suffix != ".findings"}
    return found


def dependency_dirs(name: str, seen: set[str] | None = None) -> set[str]:
    """The folders that hold `name`'s installed dependencies, recursively (markers applied)."""
    seen = set() if seen is None else seen
    dirs = set()
    for text in importlib.metadata.requires(name) or []:
        req = Requirement(text)
        if req.name in seen or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue
        seen.add(req.name)
        dirs.add(str(importlib.metadata.distribution(req.name).locate_file("")))
        dirs |= dependency_dirs(req.name, seen)
    return dirs


def run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["NO_COLOR"] = "1"
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, check=False, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`python -m build`: the sdist, then the wheel built from the unpacked sdist."""
    dist = tmp_path_factory.mktemp("dist")
    done = run(sys.executable, "-m", "build", "--no-isolation", "--outdir", dist, ROOT, cwd=dist)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Building wheel from sdist" in done.stderr + done.stdout, done.stderr
    return dist


@pytest.fixture(scope="module")
def venv(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with the built wheel installed, its dependencies taken from here."""
    env = tmp_path_factory.mktemp("venv") / "env"
    done = run(sys.executable, "-m", "venv", "--without-pip", env, cwd=env.parent)
    assert done.returncode == 0, done.stderr
    python = env / "bin" / "python"
    purelib = run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=env.parent)
    Path(purelib.stdout.strip(), "_deps.pth").write_text("\n".join(sorted(dependency_dirs("neuron-migrate"))) + "\n")
    (wheel,) = built.glob("*.whl")
    done = run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", wheel, cwd=built)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return env


def test_sdist_and_wheel_hold_the_package_rules_and_only_the_examples(built: Path) -> None:
    (sdist,) = built.glob("*.tar.gz")
    (wheel,) = built.glob("*.whl")
    top = f"neuron_migrate-{__version__}/"
    with tarfile.open(sdist) as archive:
        in_sdist = [m.name.removeprefix(top) for m in archive.getmembers() if m.isfile()]
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = archive.namelist()
    expected = example_files()
    assert {n.removeprefix("fixtures/") for n in in_sdist if n.startswith("fixtures/")} == expected
    assert {n.removeprefix("neuron_migrate/examples/") for n in in_wheel if "/examples/" in n} == expected
    assert "neuron_migrate/rules/NM101.toml" in in_wheel and "rules/NM101.toml" in in_sdist
    assert "neuron_migrate/rules/parsed.json" in in_wheel and "rules/parsed.json" not in in_sdist  # made by the hook
    assert any(n.startswith("neuron_migrate/rules/compat/") for n in in_wheel)
    assert "neuron_migrate/cli/__init__.py" in in_wheel and "neuron_migrate/cli/__init__.py" in in_sdist
    assert not [n for n in in_wheel if n.startswith("neuron_migrate/fixtures/") or "__pycache__" in n]


def test_installed_wheel_explains_and_checks(venv: Path, tmp_path: Path) -> None:
    script = venv / "bin" / "neuron-migrate"
    where = run(venv / "bin" / "python", "-c", "import neuron_migrate; print(neuron_migrate.__file__)", cwd=tmp_path)
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout + where.stderr

    shipped = run(
        venv / "bin" / "python",
        "-c",
        "from neuron_migrate import parsed_rules; from neuron_migrate.data import rules_dir; "
        "f = rules_dir(); print(len(parsed_rules.load(f, sorted(f.glob('NM*.toml'))) or ()))",
        cwd=tmp_path,
    )
    assert shipped.stdout.strip() == str(len(list((ROOT / "rules").glob("NM*.toml")))), shipped.stdout + shipped.stderr

    explained = run(script, "explain", "NM101", cwd=tmp_path)
    assert explained.returncode == 0, explained.stderr
    assert explained.stdout.rstrip("\n") == docs.explain("NM101").rstrip("\n")
    assert "Example\n" in explained.stdout and "Use instead\n" in explained.stdout

    markdown = run(script, "rules", "--format", "markdown", cwd=tmp_path)
    assert markdown.returncode == 0, markdown.stderr
    assert markdown.stdout == (ROOT / "rules" / "README.md").read_text(encoding="utf-8")

    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    checked = run(script, "check", "train.py", cwd=tmp_path)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "train.py:2:" in checked.stdout and "NM101" in checked.stdout
    fixed = run(script, "check", "--fix", "train.py", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == TRAIN_FIXED
    assert run(script, "explain", "NM000", cwd=tmp_path).returncode == 2
