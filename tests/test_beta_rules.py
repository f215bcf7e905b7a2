"""End-to-end behaviour of the beta-limitation rules (NM4xx, NM502-NM507, NM62x, NM63x):
the prefilter, discovery of packaging files and shell scripts, setup.py, the CLI and the listing."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

from neuron_migrate import sources
from neuron_migrate.catalogue import load_catalogue
from neuron_migrate.cli import main
from neuron_migrate.docs import render_rules
from neuron_migrate.engine.formats.textfiles import (
    file_kind,
    might_match_text,
    rules_for,
)
from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.engine.ruleset import build_ruleset, might_match
from neuron_migrate.registry import FILE_DETECTORS
from neuron_migrate.run.discover import discover
from neuron_migrate.settings import Settings

NEW_CODES = (
    *(f"NM4{n:02d}" for n in range(1, 14)),
    *(f"NM50{n}" for n in range(2, 8)),
    *(f"NM62{n}" for n in range(5)),
    *(f"NM63{n}" for n in range(3)),
)
NEW_RULES = [s for s in load_catalogue() if s.code in NEW_CODES]
BY_CODE = {s.code: s for s in load_catalogue()}


def _expected(case: Path) -> Path:
    """`x.py` -> `x.findings`; a file in a case folder, `requirements.txt` -> `requirements.txt.findings`."""
    return case.with_suffix(".findings") if case.parent.parent == FIXTURES else case.with_name(case.name + ".findings")


def _fires(case: Path) -> bool:
    expected = _expected(case)
    return expected.exists() and bool(expected.read_text(encoding="utf-8").strip())


INPUTS = [
    p
    for p in [*FIXTURES.glob("NM*/*.py"), *FIXTURES.glob("NM*/*/*")]
    if p.is_file() and not p.name.endswith((".fixed.py", ".findings", ".fixed"))
]
# NM9xx findings are about the file itself (suppressions, parse errors); they bypass the prefilter.
FIRING = sorted(p for p in INPUTS if _fires(p) and not p.relative_to(FIXTURES).parts[0].startswith("NM9"))


@pytest.mark.parametrize("case", FIRING, ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_prefilter_passes_every_fixture_that_fires(case: Path) -> None:
    """The prefilter skips files with no trigger; it must never skip a file its rule fires on."""
    text = case.read_text(encoding="utf-8")
    code = case.relative_to(FIXTURES).parts[0]
    if BY_CODE[code].detector in FILE_DETECTORS:
        assert might_match_text(text, rules_for(file_kind(case.name) or "", Settings(select=(code,))))
    else:
        assert might_match(text, build_ruleset(frozenset({code})))


def test_prefilter_covers_every_new_rule() -> None:
    fired = {case.relative_to(FIXTURES).parts[0] for case in FIRING}
    assert set(NEW_CODES) <= fired


@pytest.mark.parametrize("rule", NEW_RULES, ids=lambda s: s.code)
def test_every_new_rule_has_fixtures_that_fire_and_an_ok_case(rule) -> None:
    folder = FIXTURES / rule.code
    firing = [p for p in folder.rglob("*.findings") if p.read_text(encoding="utf-8").strip()]
    ok_cases = list(folder.glob("ok_*"))
    assert firing, f"{rule.code} has no fixture that fires"
    assert ok_cases, f"{rule.code} has no ok_ case"
    assert rule.source and "torchneuron-facts §" in rule.source


def test_file_rules_name_a_known_detector_and_triggers() -> None:
    for spec in load_catalogue():
        if spec.detector in FILE_DETECTORS:
            assert spec.triggers, f"{spec.code} needs prefilter triggers"


def test_discovery_finds_packaging_files_and_shell_scripts(tmp_path: Path) -> None:
    for name in (
        "train.py",
        "requirements.txt",
        "requirements/dev.txt",
        "pyproject.toml",
        "setup.cfg",
        "setup.py",
        "run.sh",
        "notes.txt",
        "data.csv",
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x\n", encoding="utf-8")
    found = [t.display for t in discover([tmp_path], Settings(), tmp_path)]
    assert found == [
        "pyproject.toml",
        "requirements.txt",
        "requirements/dev.txt",
        "run.sh",
        "setup.cfg",
        "setup.py",
        "train.py",
    ]


def test_setup_py_gets_python_and_packaging_findings() -> None:
    source = 'import torch_xla.core.xla_model as xm\nfrom setuptools import setup\nxm.mark_step()\nsetup(install_requires=["torch-xla"])\n'
    result = check_source(source, "pkg/setup.py", Settings(select=("NM201", "NM620"), fix=True, unsafe_fixes=True))
    assert [f.code for f in result.findings] == ["NM620"]
    assert [f.code for f in result.fixed] == ["NM201"]
    assert result.findings[0].start.line == 3 and result.findings[0].fix is None


def test_invalid_pyproject_is_reported_not_skipped() -> None:
    result = check_source('[project\ndependencies = ["torch-xla"]\n', "pyproject.toml", Settings())
    assert [f.code for f in result.findings] == ["NM901"]


def test_fix_that_breaks_toml_is_refused() -> None:
    text = '[project]\ndependencies = [\n  "torch-xla",\n  "a"\n]\n'
    fixed = check_source(text, "pyproject.toml", Settings(select=("NM620",), fix=True, unsafe_fixes=True))
    assert fixed.fixed_source == '[project]\ndependencies = [\n  "a"\n]\n'
    broken = '[project]\ndependencies = ["a",\n  "torch-xla"]\n'
    assert (
        check_source(broken, "pyproject.toml", Settings(select=("NM620",), fix=True, unsafe_fixes=True)).fixed_source
        is None
    )


def test_cli_checks_and_fixes_a_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "requirements.txt").write_text(
        "torch==2.14.*\ntorch-xla==2.9\ntorch-neuronx==2.13.*\n", encoding="utf-8"
    )
    (tmp_path / "train.sh").write_text(
        "export PJRT_DEVICE=NEURON\npython -m torch_xla.distributed.xla_dist t.py\n", encoding="utf-8"
    )
    (tmp_path / "model.py").write_text(
        'import torch\nx = torch.zeros(3, dtype=torch.float64, device="neuron")\n', encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    checked = runner.invoke(main, ["check", ".", "--output-format", "json", "--target-version", "2.13"])
    assert checked.exit_code == 1, checked.output
    codes = sorted((item["filename"].rsplit("/", 1)[-1], item["code"]) for item in json.loads(checked.output))
    assert codes == [
        ("model.py", "NM411"),
        ("requirements.txt", "NM620"),
        ("requirements.txt", "NM622"),
        ("requirements.txt", "NM623"),
        ("train.sh", "NM630"),
        ("train.sh", "NM631"),
    ]
    safe_only = runner.invoke(main, ["check", ".", "--fix", "-q"])
    assert "torch-xla" in (tmp_path / "requirements.txt").read_text(encoding="utf-8"), safe_only.output
    runner.invoke(main, ["check", ".", "--fix", "--unsafe-fixes", "-q"])
    assert (tmp_path / "requirements.txt").read_text(encoding="utf-8") == "torch==2.14.*\ntorch-neuronx==2.13.*\n"
    assert "torch.float32" in (tmp_path / "model.py").read_text(encoding="utf-8")
    assert (tmp_path / "train.sh").read_text(encoding="utf-8").startswith("export PJRT_DEVICE")


def test_cli_rejects_a_target_without_data() -> None:
    result = CliRunner().invoke(main, ["check", ".", "--target-version", "2.12"])
    assert result.exit_code == 2 and "2.12" in result.output


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_rules_listing_shows_severity_and_source(fmt: str) -> None:
    listing = render_rules(fmt)
    for spec in NEW_RULES:
        line = (
            next(line for line in listing.splitlines() if spec.code in line and spec.name in line)
            if fmt != "json"
            else None
        )
        readable = sources.public_source(spec.source)  # public titles, never fact-sheet sections (issues 12, 39)
        assert not re.search(r"\bS\d+\b|§|torchneuron-facts", readable), readable
        if fmt == "json":
            row = next(r for r in json.loads(listing) if r["code"] == spec.code)
            assert (row["severity"], row["source"]) == (spec.severity.value, readable)
        elif fmt == "markdown":
            assert spec.severity.value in line and sources.markdown_source(spec.source) in line
        else:
            assert spec.severity.value in line and f"[sources: {readable}]" in " ".join(
                " ".join(listing.split()).split()
            )


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_the_installed_rules_listing_names_every_source_by_its_title(fmt: str, tmp_path: Path) -> None:
    """Issue 39: `[sources: S1, S11]` named internal tags; a user opens titles and URLs."""
    script = Path(sys.executable).with_name("neuron-migrate")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "COLUMNS": "200"}
    done = subprocess.run(
        [str(script), "rules", "--format", fmt], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    shown = done.stdout if fmt == "text" else "\n".join(row["source"] for row in json.loads(done.stdout))
    assert not re.findall(r"\bS\d+\b|§|torchneuron-facts", shown)
    assert "How to use torch.distributed on Neuron" in shown
