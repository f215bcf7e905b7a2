"""Start-up stays light: `--version` and a plain check never import LibCST; the prefilter is sound."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

from neuron_migrate.analysis.source import decode
from neuron_migrate.engine import pipeline as runner
from neuron_migrate.engine.check import (
    build_ruleset,
    enabled_codes,
    might_match,
    minimal_triggers,
)
from neuron_migrate.settings import Settings

_PROBE = """
import sys
from neuron_migrate.cli import main
try:
    main({args!r})
except SystemExit:
    pass
print("LIBCST" if "libcst" in sys.modules else "NO-LIBCST", file=sys.stderr)
"""


def _imports_libcst(args: list[str], cwd: Path) -> bool:
    probe = _PROBE.format(args=args)
    env_path = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=cwd, capture_output=True, text=True, timeout=60,
        env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
    )
    assert "LIBCST" in done.stderr, done.stderr
    return "NO-LIBCST" not in done.stderr


def test_version_does_not_import_libcst(tmp_path: Path) -> None:
    assert not _imports_libcst(["--version"], tmp_path)


def test_check_without_fix_does_not_import_libcst(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import torch_xla.core.xla_model as xm\nxm.mark_step()\n")
    assert not _imports_libcst(["check", "train.py", "--no-cache"], tmp_path)
    assert not _imports_libcst(["check", "train.py", "--no-cache", "--fix"], tmp_path), "text edits alone need no LibCST"
    (tmp_path / "train.py").write_text("import torch_xla.core.xla_model as xm\ndevice = xm.xla_device()\n")
    assert _imports_libcst(["check", "train.py", "--no-cache", "--fix"], tmp_path), "adding `import torch` uses LibCST"


CASES = [p for p in sorted(FIXTURES.glob("*/*.py")) if not p.name.endswith(".fixed.py")]


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_prefilter_passes_every_case_the_analysis_flags(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the prefilter switched off, whatever the analysis finds, the prefilter lets through."""
    text = decode(case.read_bytes())[0]
    for settings in (Settings(select=(case.parent.name,)), Settings()):
        with monkeypatch.context() as patched:
            patched.setattr(runner, "might_match", lambda text, ruleset: True)
            unfiltered = runner.check_source(text, case.name, settings)
        found = {f.code for f in unfiltered.findings if not f.code.startswith("NM9")}  # NM9xx: the tool's own
        if found:
            ruleset = build_ruleset(enabled_codes(settings), settings.target_version)
            assert might_match(text, ruleset), f"the prefilter would hide {sorted(found)}"


def test_minimal_triggers_drop_only_redundant_ones() -> None:
    assert minimal_triggers({"xla", "torch_xla", "XLA_", "NEURON", "NEURON_CC_FLAGS"}) == ("NEURON", "XLA_", "xla")
    assert minimal_triggers(set()) == ()


@pytest.mark.parametrize(
    ("text", "passes"),
    [
        ("import torch\ny = torch.fft.rfft(x)\n", True),
        ("from torch import fft as f\n", True),
        ("import torch\nplan = fftw_plan(x)  # fft_size\n", False),  # `fft` only inside other words
        ("import torch\nmodel = torch.nn.Linear(2, 2)\n", False),  # `torch` alone is not enough
    ],
)
def test_qualified_names_prefilter_on_their_last_part(text: str, passes: bool) -> None:
    ruleset = build_ruleset(enabled_codes(Settings(select=("NM406",))), "2.14")
    assert might_match(text, ruleset) is passes
