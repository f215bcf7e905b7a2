"""The CLI's output options end to end: formats, the step summary, statistics, shown fixes,
the repository root for SARIF paths, and files pre-commit may pass that are not Python."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from neuron_migrate.cli import main
from neuron_migrate.output_formats import CHOICES
from neuron_migrate.output_formats import NAMES as FORMATS

TRAIN = "import torch_xla.core.xla_model as xm\ndevice = xm.xla_device()\nxm.mark_step()\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with one package folder; the working directory is the package."""
    (tmp_path / ".git").mkdir()
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "train.py").write_text(TRAIN, encoding="utf-8")
    (package / "clean.py").write_text("print('ok')\n", encoding="utf-8")
    monkeypatch.chdir(package)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return tmp_path


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def test_output_format_choices_are_the_canonical_list() -> None:
    result = run("check", "--help")
    assert f"[{'|'.join(CHOICES)}]" in result.output.replace("\n", "").replace(" ", "")
    assert FORMATS[:2] == ("text", "full") and {"json", "sarif", "github", "gitlab", "junit", "rdjson"} < set(FORMATS)


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_runs_with_the_usual_exit_code(project: Path, fmt: str) -> None:
    result = run("check", "--output-format", fmt, "train.py", "clean.py")
    assert result.exit_code == 1, result.output
    assert "NM101" in result.stdout
    assert run("check", "--output-format", fmt, "--exit-zero", "train.py").exit_code == 0
    assert run("check", "--output-format", fmt, "clean.py").exit_code == 0


def test_sarif_paths_start_at_the_repository_root(project: Path) -> None:
    document = json.loads(run("check", "--output-format", "sarif", "train.py").stdout)
    run_ = document["runs"][0]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run_["results"]}
    assert uris == {"pkg/train.py"}
    assert run_["originalUriBaseIds"]["%SRCROOT%"]["uri"] == project.resolve().as_uri() + "/"
    assert len(run_["tool"]["driver"]["rules"]) >= 40  # the whole catalogue


def test_github_format_appends_the_step_summary(project: Path) -> None:
    summary = project / "summary.md"
    summary.write_text("# Earlier step\n", encoding="utf-8")
    result = run("check", "--output-format", "github", "train.py", env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert result.exit_code == 1
    assert result.stdout.startswith("::error file=pkg/train.py,line=")
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("# Earlier step\n\n## neuron-migrate\n")
    assert "| `pkg/train.py:2:10` | NM101 | error |" in text


def test_step_summary_only_for_the_github_format(project: Path) -> None:
    summary = project / "summary.md"
    run("check", "--output-format", "text", "train.py", env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert not summary.exists()


def test_a_full_step_summary_is_left_alone(project: Path) -> None:
    summary = project / "summary.md"
    summary.write_bytes(b"x" * (1024 * 1024 - 10))
    result = run("check", "--output-format", "github", "train.py", env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert result.exit_code == 1
    assert summary.stat().st_size == 1024 * 1024 - 10
    assert "is full; no step summary written" in result.stderr


def test_statistics_count_findings_per_rule(project: Path) -> None:
    (Path("more.py")).write_text(TRAIN + "xm.mark_step()\n", encoding="utf-8")
    result = run("check", "--statistics", "train.py", "more.py")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "3\tNM201\t[*] xla-mark-step-call",
        "2\tNM101\t[*] xla-device-call",
        "2\tNM601\t[*] xla-import",  # the imports go once their uses are fixed
        "Found 7 findings.",
        "[*] 7 fixable with the `--fix` option.",
    ]
    rows = json.loads(run("check", "--statistics", "--output-format", "json", "train.py").stdout)
    assert rows[0] == {"code": "NM101", "name": "xla-device-call", "count": 1, "fixable_count": 1, "fixable": True}


def test_show_fixes_lists_the_applied_fixes(project: Path) -> None:
    result = run("check", "--fix", "--show-fixes", "train.py")
    assert result.exit_code == 0, result.output
    assert "Fixed 3 findings:\n- train.py:\n    1 × NM101 (xla-device-call)\n" in result.stdout
    assert "xla_device" not in Path("train.py").read_text(encoding="utf-8")


def test_show_fixes_goes_to_stderr_for_machine_formats(project: Path) -> None:
    result = run("check", "--fix", "--show-fixes", "--output-format", "json", "train.py")
    assert json.loads(result.stdout) == []
    assert "Fixed 3 findings:" in result.stderr


def test_explicit_non_python_files_are_skipped(project: Path) -> None:
    Path("README.md").write_text("Uses `import torch_xla` today.\n", encoding="utf-8")
    Path("notes.txt").write_text("torch_xla==2.5\n", encoding="utf-8")
    Path("logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe torch_xla")
    result = run("check", "README.md", "notes.txt", "logo.png", "clean.py")
    assert result.exit_code == 0, result.output
    assert result.stdout == "All checks passed!\n"


def test_explicit_packaging_files_are_checked(project: Path) -> None:
    Path("requirements.txt").write_text("torch_xla==2.5\n", encoding="utf-8")
    result = run("check", "requirements.txt")
    assert result.exit_code == 1
    assert "requirements.txt:1:1: NM620" in result.stdout


def test_python_scripts_without_a_suffix_are_checked(project: Path) -> None:
    script = Path("launch")
    script.write_text("#!/usr/bin/env python3\n" + TRAIN, encoding="utf-8")
    os.chmod(script, 0o755)
    result = run("check", "launch")
    assert result.exit_code == 1
    assert "launch:3:10: NM101" in result.stdout
    assert run("check", "--fix", "launch").exit_code == 0
    assert "xla_device" not in script.read_text(encoding="utf-8")


def test_a_missing_file_is_still_reported(project: Path) -> None:
    result = run("check", "gone.py")
    assert result.exit_code == 2
    assert "gone.py:1:1: NM903" in result.stdout
