"""Baselines: record today's findings, report only new ones, survive line moves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from neuron_migrate.cli import main
from neuron_migrate.run.baseline import normalise

OLD = """import torch_xla.core.xla_model as xm


def train(model, batches):
    for batch in batches:
        xm.mark_step()
        xm.save(
            model.state_dict(),
            "model.pt",
        )
"""

MOVED = """import torch_xla.core.xla_model as xm

STEPS = 10


class Trainer:
    def run(self, model, batches):
        for batch in batches:
            model(batch)
            xm.mark_step()
            xm.save(model.state_dict(),
                    "model.pt")
"""


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(OLD)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(*args: str) -> tuple[int, list[str]]:
    result = CliRunner().invoke(main, [*args, "-q"])
    return result.exit_code, [
        line.split(": ")[1].split()[0] + "@" + line.split(":")[1] for line in result.stdout.splitlines()
    ]


def test_write_baseline_records_findings_without_lines(repo: Path) -> None:
    result = CliRunner().invoke(main, ["src", "--write-baseline", "baseline.json"])
    assert result.exit_code == 0
    assert result.stdout == "Wrote 3 findings to the baseline baseline.json.\n"
    data = json.loads((repo / "baseline.json").read_text())
    assert data["format"] == "neuron-migrate-baseline" and data["version"] == 1
    assert [(e["path"], e["code"], e["count"]) for e in data["findings"]] == [
        ("src/train.py", "NM201", 1),
        ("src/train.py", "NM210", 1),
        ("src/train.py", "NM601", 1),
    ]
    assert {e["snippet"] for e in data["findings"]} >= {"xm.mark_step()", 'xm.save(model.state_dict(),"model.pt")'}
    assert all(set(entry) == {"path", "code", "snippet", "count"} for entry in data["findings"])  # no line numbers


def test_baseline_round_trip_survives_line_moves(repo: Path) -> None:
    CliRunner().invoke(main, ["src", "--write-baseline", "baseline.json"])
    assert _run("src", "--baseline", "baseline.json") == (0, [])
    (repo / "src" / "train.py").write_text(MOVED)
    assert _run("src", "--baseline", "baseline.json") == (0, [])


def test_baseline_reports_new_findings_only(repo: Path) -> None:
    CliRunner().invoke(main, ["src", "--write-baseline", "baseline.json"])
    (repo / "src" / "train.py").write_text(MOVED + "\n\ndevice = xm.xla_device()\nxm.mark_step()\n")
    code, found = _run("src", "--baseline", "baseline.json")
    # one mark_step was recorded: the first in file order counts as known, the later one is new
    assert (code, found) == (1, ["NM101@15", "NM201@16"])


def test_baseline_matches_from_another_folder(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    CliRunner().invoke(main, ["src", "--write-baseline", "baseline.json"])
    monkeypatch.chdir(repo / "src")
    assert _run(".", "--baseline", "../baseline.json") == (0, [])


def test_baseline_hidden_findings_are_listed_with_show_suppressed(repo: Path) -> None:
    CliRunner().invoke(main, ["src", "--write-baseline", "baseline.json"])
    result = CliRunner().invoke(main, ["src", "--baseline", "baseline.json", "--show-suppressed"])
    assert "Suppressed 3 findings:" in result.stdout


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{", "the baseline is not valid JSON"),
        ('{"format": "other", "version": 1}', "not a neuron-migrate-baseline file of version 1"),
        ('{"format": "neuron-migrate-baseline", "version": 1, "findings": [{"path": "a"}]}', "entry 1 needs"),
    ],
)
def test_bad_baseline_is_one_line_exit_2(repo: Path, content: str, expected: str) -> None:
    (repo / "baseline.json").write_text(content)
    result = CliRunner().invoke(main, ["src", "--baseline", "baseline.json"])
    assert result.exit_code == 2
    assert result.stderr.startswith("neuron-migrate: error: baseline.json: ") and expected in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_missing_baseline_is_exit_2(repo: Path) -> None:
    result = CliRunner().invoke(main, ["src", "--baseline", "nope.json"])
    assert result.exit_code == 2 and "nope.json: cannot read the baseline" in result.stderr


def test_normalise_ignores_layout_but_not_code() -> None:
    assert normalise("f(\n    a,\n    b,  # why\n)") == normalise("f(a, b)") == "f(a,b)"
    assert normalise("import torch_xla as x") == "import torch_xla as x"
    assert normalise("f(a)") != normalise("g(a)")
    assert normalise("f(a, 'x y')") != normalise("f(a, 'xy')")
    assert normalise("f(a, (b") == "f(a, (b"  # does not tokenize: whitespace collapsed
