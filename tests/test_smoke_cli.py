"""The `smoke` click command: options, the missing-torch message, and the torch-free import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from neuron_migrate.smoke import runner
from neuron_migrate.smoke.command import smoke_command

ROOT = Path(__file__).resolve().parent.parent
TRAIN = ROOT / "fixtures" / "_smoke" / "train.py"


def hide_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    real = runner.find_spec
    monkeypatch.setattr(runner, "find_spec", lambda name: None if name == "torch" else real(name))


def test_without_torch_smoke_fails_with_one_install_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hide_torch(monkeypatch)
    result = CliRunner().invoke(smoke_command, [str(TRAIN)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [f"neuron-migrate: error: {runner.INSTALL_HINT}"]
    assert "install torch" in runner.INSTALL_HINT
    assert "pip install 'neuron-migrate[smoke]'" in result.stderr


def test_without_torch_run_smoke_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    hide_torch(monkeypatch)
    with pytest.raises(runner.SmokeUnavailable, match=r"pip install 'neuron-migrate\[smoke\]'"):
        runner.run_smoke(TRAIN, [], runner.SmokeOptions())


def test_importing_the_smoke_entry_points_does_not_import_torch() -> None:
    code = (
        "import sys\n"
        "import neuron_migrate.smoke, neuron_migrate.smoke.command, neuron_migrate.smoke.runner\n"
        "from neuron_migrate.smoke import report_findings, render_text, render_json, run_smoke\n"
        "from neuron_migrate.smoke import compat\n"
        "compat.load_ops('2.14')\n"
        "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('torch'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--device", "gpu"],
        ["--target-version", "2.12"],
        ["--steps", "0"],
        ["--nproc", "0"],
        ["--output-format", "xml"],
    ],
)
def test_bad_options_are_usage_errors(args: list[str]) -> None:
    result = CliRunner().invoke(smoke_command, [*args, str(TRAIN)])
    assert result.exit_code == 2


def test_missing_script_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(smoke_command, [str(tmp_path / "nope.py")])
    assert result.exit_code == 2 and "does not exist" in result.output


def test_help_lists_the_contract_options() -> None:
    result = CliRunner().invoke(smoke_command, ["--help"])
    assert result.exit_code == 0
    for option in (
        "--device",
        "--steps",
        "--timeout",
        "--nproc",
        "--compare-cpu",
        "--output-format",
        "--target-version",
    ):
        assert option in result.output
    assert smoke_command.name == "smoke"


def test_parity_flags_are_checked_before_anything_runs(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("neuron-migrate")
    (tmp_path / "train.py").write_text("raise SystemExit('must not run')\n")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [str(script), "smoke", "train.py", *args]
        return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)

    alone = run("--parity-value", "loss", "--rtol", "0.1")
    assert alone.returncode == 2 and "--parity-value, --rtol only applies with `--parity`" in alone.stderr
    one = run("--parity", "--nproc", "1")
    assert one.returncode == 2 and "`--parity` compares N ranks with 1: pass `--nproc N` with N >= 2" in one.stderr
    bad = run("--parity", "--parity-value", "loss[0]")
    assert bad.returncode == 2 and "'loss[0]' is not a variable name" in bad.stderr
    assert alone.stdout == one.stdout == bad.stdout == ""
