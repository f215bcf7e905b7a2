"""Start-up stays light: `--version` and a plain check never import LibCST; the prefilter is sound."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

from neuron_migrate.analysis.source import decode
from neuron_migrate.engine import planning as runner
from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.engine.ruleset import (
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
        [sys.executable, "-c", probe],
        cwd=cwd,
        capture_output=True,
        check=False,
        text=True,
        timeout=60,
        env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
    )
    assert "LIBCST" in done.stderr, done.stderr
    return "NO-LIBCST" not in done.stderr


def test_version_does_not_import_libcst(tmp_path: Path) -> None:
    assert not _imports_libcst(["--version"], tmp_path)


def test_only_a_structural_fix_made_or_shown_imports_libcst(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import torch_xla.core.xla_model as xm\ndevice = xm.xla_device()\n")
    assert not _imports_libcst(["check", "train.py", "--no-cache"], tmp_path)
    assert not _imports_libcst(["check", "train.py", "--no-cache", "--fix"], tmp_path), (
        "text edits and the imports they need take no LibCST"
    )
    (tmp_path / "train.py").write_text("import torch_xla.core.xla_model as xm\nxm.master_print('step')\n")
    assert not _imports_libcst(["check", "train.py", "--no-cache"], tmp_path), "a plain check counts it fixable"
    assert not _imports_libcst(["check", "train.py", "--no-cache", "--output-format", "concise"], tmp_path)
    assert _imports_libcst(["check", "train.py", "--no-cache", "--output-format", "json"], tmp_path), "its edit shown"
    assert _imports_libcst(["check", "train.py", "--no-cache", "--fix"], tmp_path), "its transform made"


_WARM_PROBE = """
import sys
from neuron_migrate.cli import main
try:
    main({args!r})
except SystemExit:
    pass
print(" ".join(sorted(sys.modules)), file=sys.stderr)
"""
# What a run answered entirely from the cache must not import: the rules (catalogue, compat
# data, registry) and their checks, the analysis, LibCST, the TOML parser (no config file
# here), and the modules of options not given.
# (The stdlib `ast` is loaded anyway: click imports `inspect`, which imports it.)
_NOT_ON_THE_WARM_PATH = (
    "libcst", "tomllib", "neuron_migrate.catalogue", "neuron_migrate.compat", "neuron_migrate.registry",
    "neuron_migrate.checks", "neuron_migrate.analysis.analyze", "neuron_migrate.analysis.names", "neuron_migrate.engine.check", "neuron_migrate.engine.ruleset", "neuron_migrate.engine.pipeline",
    "neuron_migrate.engine.formats.textfiles", "neuron_migrate.run.baseline", "neuron_migrate.run.gitdiff",
    "subprocess", "difflib", "tempfile", "json",
)  # fmt: skip


def _modules(args: list[str], cwd: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", _WARM_PROBE.format(args=args)], cwd=cwd, capture_output=True, text=True, timeout=60, check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    return set(done.stderr.split())


def test_a_warm_run_imports_no_rules_checks_or_parsers(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import torch_xla.core.xla_model as xm\nxm.mark_step()\n")
    (tmp_path / "clean.py").write_text("import torch\n")
    cold = _modules(["check", ".", "--exit-zero"], tmp_path)
    assert "neuron_migrate.registry" in cold and "neuron_migrate.analysis.analyze" in cold, (
        "the cold run checks the files"
    )
    warm = _modules(["check", ".", "--exit-zero"], tmp_path)
    assert "neuron_migrate.run.cache" in warm
    assert sorted(m for m in _NOT_ON_THE_WARM_PATH if m in warm) == []


def test_version_imports_no_rules(tmp_path: Path) -> None:
    loaded = _modules(["--version"], tmp_path)
    assert sorted(m for m in _NOT_ON_THE_WARM_PATH if m in loaded) == []
    assert sorted(m for m in ("neuron_migrate.output", "neuron_migrate.model", "hashlib") if m in loaded) == []


def test_lazy_subcommands_are_listed_and_run(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from neuron_migrate.cli import main

    listed = CliRunner().invoke(main, ["--help"])
    assert "smoke" in listed.output
    done = CliRunner().invoke(main, ["smoke", "--help"])
    assert done.exit_code == 0, done.output
    assert "Usage: main smoke" in done.output or "smoke [OPTIONS] SCRIPT" in done.output


CASES = [p for p in sorted(FIXTURES.glob("*/*.py")) if not p.name.endswith(".fixed.py")]


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_prefilter_passes_every_case_the_analysis_flags(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the prefilter switched off, whatever the analysis finds, the prefilter lets through."""
    text = decode(case.read_bytes())[0]
    for settings in (Settings(select=(case.parent.name,)), Settings()):
        with monkeypatch.context() as patched:
            patched.setattr(runner, "might_match", lambda text, ruleset: True)
            unfiltered = check_source(text, case.name, settings)
        found = {f.code for f in unfiltered.findings if not f.code.startswith("NM9")}  # NM9xx: the tool's own
        if found:
            ruleset = build_ruleset(enabled_codes(settings), settings.target_version)
            assert might_match(text, ruleset), f"the prefilter would hide {sorted(found)}"


def test_minimal_triggers_drop_only_redundant_ones() -> None:
    assert minimal_triggers({"xla", "torch_xla", "XLA_", "NEURON", "NEURON_CC_FLAGS"}) == ("xla", "XLA_", "NEURON")
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
