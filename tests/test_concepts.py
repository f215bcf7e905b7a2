"""One room per concept: `checks/<concept>.py` holds a concept's Python, a rule's TOML names its concept.

A rule's code leads to its module (`rules/NMxxx.toml` -> `concept = "..."` -> `checks/<concept>.py`),
the registry merges the concept modules in one loop, and a rule that data can express needs no
Python at all: the last test adds one in a copy of the project, touching only `rules/` and
`fixtures/` (and the two generated documents), and runs it end to end.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from neuron_migrate import catalogue, checks, registry
from neuron_migrate.catalogue import RuleSpecError, load_catalogue, parse_rule
from neuron_migrate.settings import RuleSources

CHECKS = ROOT / "neuron_migrate" / "checks"
# Detectors and fixes that rules of several concepts name; they live with the concept that owns them.
SHARED = {"replace_string", "env_var", "remove_env_statement", "remove_statement"}


def _concept_module(name: str) -> object:
    return importlib.import_module(f"neuron_migrate.checks.{name}")


def test_every_concept_module_is_a_catalogue_concept_with_its_tables() -> None:
    assert set(checks.CONCEPTS) <= set(catalogue.CONCEPTS)
    for name in checks.CONCEPTS:
        module = _concept_module(name)
        assert hasattr(module.DETECTORS, "items") and hasattr(module.FIXES, "items"), name
    # sharding_helpers, collective_helpers: helper templates, which helpers.py registers (it cannot
    # import sharding.py or collectives.py, which import it)
    shared = {
        *("__init__", "toolkit", "toolkit_calls", "toolkit_layout", "toolkit_cst", "helpers"),
        *("sharding_helpers", "collective_helpers", "gradient_helpers"),
        *("device_types", "messages", "rank_zero", "xla_probes", "rng_state", "backend_labels", "tensor_places"),
        "launch_groups",
    }
    for path in CHECKS.glob("*.py"):
        concept = path.stem.removesuffix("_cst")
        assert path.stem in shared or concept in checks.CONCEPTS, f"{path.name} belongs to no concept"


def test_every_shipped_rule_names_its_concept_on_the_line_after_its_name() -> None:
    for path in sorted((ROOT / "rules").glob("NM*.toml")):
        lines = path.read_text(encoding="utf-8").splitlines()
        index = next(i for i, line in enumerate(lines) if line.startswith("name = "))
        assert lines[index + 1].startswith("concept = "), f"{path.name}: put `concept = ...` right after `name`"
    assert all(spec.concept in catalogue.CONCEPTS for spec in load_catalogue())


def test_an_unknown_concept_is_rejected_naming_the_file() -> None:
    data = {"code": "NM100", "name": "x", "message": "M", "severity": "error", "safety": "safe", "concept": "gpu"}
    with pytest.raises(RuleSpecError, match=r"NM100\.toml: `concept` must be one of devices, "):
        parse_rule(data, "NM100.toml")


def test_a_rules_python_lives_in_the_module_of_its_concept() -> None:
    home: dict[tuple[str, str], str] = {}
    for name in checks.CONCEPTS:
        module = _concept_module(name)
        home.update({("detector", key): name for key in module.DETECTORS})
        home.update({("fix", key): name for key in module.FIXES})
    for spec in load_catalogue():
        used = [("detector", spec.detector), *(("fix", m.fix) for m in spec.maps if m.fix)]
        for kind, key in used:
            if (kind, key) in home and key not in SHARED:
                assert home[kind, key] == spec.concept, f"{spec.code}: {kind} {key} is in checks/{home[kind, key]}.py"


def test_two_concept_modules_defining_one_name_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    launch = _concept_module("launch")
    monkeypatch.setattr(launch, "FIXES", {**launch.FIXES, "sync": launch.FIXES["spawn"]})  # execution's
    with pytest.raises(RuleSpecError, match=r"module neuron_migrate.checks.launch: FIXES name 'sync' is already taken"):
        registry.registry.__wrapped__(RuleSources())


def test_no_checks_module_is_over_450_lines() -> None:
    for path in CHECKS.glob("*.py"):
        assert len(path.read_text(encoding="utf-8").splitlines()) <= 450, path.name


# -- a newcomer's data-only rule, in a copy of the project ----------------------------------------
RULE = """code = "NM314"
name = "xla_process_index"
concept = "ranks"
message = "Replace `{old}()` with `{new}`"
severity = "error"
safety = "unsafe"

[doc]
what = "Checks for `xr.process_index()`."
why = "Under torchrun the process's index is its global rank."
fix_safety = "Unsafe: `dist.get_rank()` needs a process group, where `xr.process_index()` needed none."

[[map]]
old = "torch_xla.runtime.process_index"
new_call = "{dist}.get_rank()"
"""
BASIC = "# The process index under PJRT.\nimport torch_xla.runtime as xr\n\nrank = xr.process_index()\n"
OK = "# A function of the user's own with the same name.\ndef process_index():\n    return 0\n\n\nrank = process_index()\n"
FIXED = "# The process index under PJRT.\nimport torch_xla.runtime as xr\nimport torch.distributed as dist\n\nrank = dist.get_rank()\n"
FINDINGS = "4:8 NM314 [unsafe] Replace `xr.process_index()` with `dist.get_rank()`\n"
COPIED = ("neuron_migrate", "rules", "fixtures", "tests", "docs", "README.md", "CONTRIBUTING.md", "pyproject.toml")


def _tree(root: Path) -> dict[str, bytes]:
    skip = ("__pycache__", ".pytest_cache")
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and not any(part in skip for part in p.parts)
    }


def _run(copy: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(copy)}
    return subprocess.run(
        [sys.executable, *args], cwd=copy, env=env, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.slow
def test_a_data_only_rule_touches_only_rules_and_fixtures_and_works_end_to_end(tmp_path: Path) -> None:
    copy = tmp_path / "project"
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        else:
            shutil.copy2(source, copy / name)
    before = _tree(copy)
    # What the newcomer writes: the rule's data and two fixture cases ...
    (copy / "rules" / "NM314.toml").write_text(RULE, encoding="utf-8")
    (copy / "fixtures" / "NM314").mkdir()
    (copy / "fixtures" / "NM314" / "basic.py").write_text(BASIC, encoding="utf-8")
    (copy / "fixtures" / "NM314" / "ok_own_function.py").write_text(OK, encoding="utf-8")
    # ... then generates the expected outputs (and reads them: they are the spec) and the docs.
    update = _run(
        copy,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "tests/test_fixtures.py",
        "-k",
        "NM314",
        "--update-fixtures",
    )
    assert update.returncode == 0, update.stdout + update.stderr
    assert (copy / "fixtures" / "NM314" / "basic.fixed.py").read_text(encoding="utf-8") == FIXED
    assert (copy / "fixtures" / "NM314" / "basic.findings").read_text(encoding="utf-8") == FINDINGS
    generated = _run(copy, "-m", "neuron_migrate", "dev", "generate")
    assert generated.returncode == 0, generated.stderr
    assert generated.stdout == "Wrote: rules/README.md\nWrote: docs/migration-guide.md\nWrote: CONTRIBUTING.md\n"

    changed = {path for path, data in _tree(copy).items() if before.get(path) != data}
    assert changed == {
        "rules/NM314.toml",
        "rules/README.md",
        "docs/migration-guide.md",
        "CONTRIBUTING.md",  # the table of concepts: NM314 joins `ranks`
        *(f"fixtures/NM314/{n}" for n in ("basic.py", "basic.fixed.py", "basic.findings", "ok_own_function.py")),
        "fixtures/NM314/ok_own_function.findings",
    }
    guide = (copy / "docs" / "migration-guide.md").read_text(encoding="utf-8")
    ranks = guide.split("## Ranks, printing and saving", 1)[1].split("\n## ", 1)[0]
    assert "[NM314](../rules/README.md#nm314) `xla_process_index`" in ranks  # its chapter, from `concept`

    # The project's own checks pass in the copy: fixtures, catalogue, generated docs, guide chapters.
    tests = ["tests/test_fixtures.py", "tests/test_catalogue.py", "tests/test_guide.py", "tests/test_concepts.py"]
    tests += ["tests/test_generated.py"]
    suite = _run(copy, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-m", "not slow", *tests)
    assert suite.returncode == 0, suite.stdout[-3000:] + suite.stderr[-3000:]

    explain = _run(copy, "-m", "neuron_migrate", "explain", "NM314")
    assert explain.returncode == 0, explain.stderr
    assert "rank = xr.process_index()" in explain.stdout and "rank = dist.get_rank()" in explain.stdout
    script = tmp_path / "train.py"
    script.write_text(BASIC, encoding="utf-8")
    checked = _run(copy, "-m", "neuron_migrate", str(script), "--select", "NM314", "--no-cache")
    assert checked.returncode == 1
    assert "train.py:4:8: NM314 [-] Replace `xr.process_index()` with `dist.get_rank()`" in checked.stdout
    fixed = _run(
        copy, "-m", "neuron_migrate", str(script), "--select", "NM314", "--fix", "--unsafe-fixes", "--no-cache"
    )
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert script.read_text(encoding="utf-8") == FIXED
