"""Every subcommand's exit code, through the installed `neuron-migrate` console script.

A CI step trusts only the exit code, so these run the script a user runs, in a subprocess:
0 on success, 1 on findings (or a failed smoke run), 2 on a usage or input error.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).with_name("neuron-migrate")
XLA = "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\n"
CLEAN = "import torch\n\nx = torch.ones(2)\n"


def run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [str(SCRIPT), *map(str, args)], cwd=cwd, env=env, capture_output=True, check=False, text=True, timeout=300
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "xla.py").write_text(XLA)
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path


def test_the_console_script_is_installed() -> None:
    assert SCRIPT.exists(), f"{SCRIPT} missing: install the package (pip install -e .)"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("check", "clean.py"), 0),
        (("clean.py",), 0),
        (("check", "xla.py"), 1),
        (("xla.py",), 1),
        (("check", "xla.py", "--exit-zero"), 0),
        (("check", "missing.py"), 2),
        (("check", "--select", "NOPE", "xla.py"), 2),
        (("check", "--no-such-option"), 2),
        (("check", "--diff", "xla.py"), 1),
        (("check", "--diff", "clean.py"), 0),
        (("rules",), 0),
        (("explain", "NM101"), 0),
        (("explain", "NM000"), 2),
        (("version",), 0),
        (("--version",), 0),
        (("chek",), 2),
        (("report", "clean.py", "--format", "json"), 0),
    ],
)
def test_exit_code(project: Path, args: tuple[str, ...], code: int) -> None:
    done = run(*args, cwd=project)
    assert done.returncode == code, (done.stdout[-2000:], done.stderr[-2000:])


@pytest.mark.parametrize("name", ["missing.py", "missing_folder", "missing_folder/"])
def test_a_missing_path_says_so_and_exits_2(project: Path, name: str) -> None:
    done = run("check", name, cwd=project)
    assert done.returncode == 2
    (line,) = [x for x in done.stdout.splitlines() if "NM903" in x]
    assert line.endswith("NM903 Check this path; there is no file or folder by this name"), line
    assert "readable" not in done.stdout


def test_fix_exits_0_when_everything_was_fixed(project: Path) -> None:
    assert run("check", "--fix", "xla.py", cwd=project).returncode == 0
    assert run("check", "xla.py", cwd=project).returncode == 0


def test_smoke_without_a_script_is_a_usage_error(project: Path) -> None:
    assert run("smoke", "missing.py", cwd=project).returncode == 2


@pytest.mark.slow
def test_smoke_exit_code_follows_the_verdict(project: Path) -> None:
    pytest.importorskip("torch")
    (project / "fails.py").write_text('raise SystemExit("boom")\n')
    (project / "runs.py").write_text(
        'import torch\n\nx = torch.ones(2, device="neuron")\nprint((x + 1).sum().item())\n'
    )
    failed = run("smoke", "fails.py", cwd=project)
    assert "smoke FAILED" in failed.stdout + failed.stderr
    assert failed.returncode == 1
    passed = run("smoke", "runs.py", cwd=project)
    assert passed.returncode == 0, (passed.stdout[-2000:], passed.stderr[-2000:])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("script", "args", "problem"),
    [
        ("cpu_only.py", (), "the run never used the `neuron` device"),
        ("xla_probe.py", ("neuron",), "the script looked for `torch_xla` at xla_probe.py:"),
    ],
)
def test_smoke_exits_1_on_a_run_that_did_not_use_neuron(
    tmp_path: Path, script: str, args: tuple[str, ...], problem: str
) -> None:
    """A CPU-only run and a caught torch_xla probe pass every other check; only NM709/NM710 fail them."""
    pytest.importorskip("torch")
    (tmp_path / script).write_text((ROOT / "fixtures" / "_smoke" / script).read_text())
    done = run("smoke", script, *args, cwd=tmp_path)
    assert done.returncode == 1, (done.stdout[-2000:], done.stderr[-2000:])
    verdict = done.stdout.splitlines()[0]  # the verdict comes first (issue 39)
    assert verdict.startswith(f"smoke FAILED: {script}:") and problem in verdict, verdict
