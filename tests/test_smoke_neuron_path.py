"""The real-device path, exercised with a fake `torch_neuronx` on the children's PYTHONPATH."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from neuron_migrate.smoke import report_findings, run_smoke
from neuron_migrate.smoke.runner import SmokeOptions

pytestmark = pytest.mark.slow  # runs scripts under smoke in child processes

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "fixtures" / "_smoke"
FAKE = SCRIPTS / "fake_neuronx"


def env_with(*paths: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, paths), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def qr_line() -> int:
    lines = (SCRIPTS / "fft_linalg.py").read_text().splitlines()
    return next(i for i, text in enumerate(lines, start=1) if "# smoke: qr" in text)


def test_auto_uses_torch_neuronx_and_reports_measured_fallbacks() -> None:
    options = SmokeOptions(device="auto", timeout_s=120.0, base_dir=ROOT, env=env_with(FAKE))
    report = run_smoke(SCRIPTS / "fft_linalg.py", [], options)
    assert (report.status, report.device) == ("ok", "neuron")
    by_op = {f.op: f for f in report.fallbacks}
    # The fake only reports ops after clear_op_tracking(), so this also proves the clear.
    assert set(by_op) == {"aten::linalg_qr", "aten::_fft_r2c"}
    assert all(f.measured and f.source == "torch_neuronx.get_fallback_ops()" for f in by_op.values())
    assert [s.line for s in by_op["aten::linalg_qr"].sites] == [qr_line()]
    findings = [f for f in report_findings(report) if f.code == "NM702"]
    assert ("fixtures/_smoke/fft_linalg.py", qr_line()) in {(f.path, f.start.line) for f in findings}
    assert not any(f.code == "NM701" for f in report_findings(report))
    assert report.measured_executed_ops == ("aten::addmm", "aten::mm")


def test_device_neuron_without_torch_neuronx_is_an_error() -> None:
    report = run_smoke(SCRIPTS / "train.py", [], SmokeOptions(device="neuron", env=env_with()))
    assert (report.status, report.device, report.ok) == ("error", "none", False)
    assert report.failure is not None and "torch_neuronx" in report.failure.message
    assert [f.code for f in report_findings(report)] == ["NM706"]
