"""`smoke` on small library models built from configs (no downloads): they load and train."""

from __future__ import annotations

from pathlib import Path

import pytest

from neuron_migrate.smoke import report_findings, run_smoke
from neuron_migrate.smoke.runner import SmokeOptions

pytest.importorskip("torch")
pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "fixtures" / "_smoke" / "hf_models.py"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["bert", "gpt2", "llama", "resnet"])
def test_a_library_model_loads_and_trains_on_emulated_neuron(kind: str) -> None:
    """The script asserts every buffer survives `from_pretrained` + `.to("neuron")` (BERT's
    non-persistent `position_ids` did not: the `torch.tensor` patch hid the meta-device context)."""
    options = SmokeOptions(device="emulate", timeout_s=240.0, base_dir=ROOT)
    report = run_smoke(SCRIPT, (kind,), options)
    assert report.ok, (report.failure, report.output_tail[-2000:])
    assert (report.steps, report.backwards) == (2, 2)
    assert not [f for f in report_findings(report) if f.severity.value == "error"]
