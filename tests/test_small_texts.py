"""Small texts, through the installed CLI: counted nouns agree with their number ("1 file",
"1 finding") in the report's Markdown headline and HTML folder tree, and `explain` wraps its
prose sections."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from neuron_migrate.docs import EXPLAIN_WIDTH

SCRIPT = Path(sys.executable).with_name("neuron-migrate")
ONE_FINDING = 'import torch\nx = torch.ones(2, dtype=torch.float64, device="neuron")\n'


def cli(cwd: Path, *args: str) -> str:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "NO_COLOR": "1"}
    done = subprocess.run(
        [str(SCRIPT), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


@pytest.fixture
def one_file(tmp_path: Path) -> Path:
    (tmp_path / "one.py").write_text(ONE_FINDING, encoding="utf-8")
    return tmp_path


def test_markdown_headline_counts_one_file_and_one_finding(one_file: Path) -> None:
    text = cli(one_file, "report", ".", "--format", "md", "--no-cache", "-q")
    assert "\n1 file: 0 blocked, 0 manual, 1 unsafe" in text
    assert "\n1 finding: 0 fixed by `--fix`, 1 only by `--fix --unsafe-fixes`, 0 manual; 0 blockers." in text
    assert "finds **1** finding (the sum" in text and "after `check --fix`, **1** is left" in text
    assert "1 files" not in text and "1 findings" not in text


def test_html_headline_and_folder_tree_count_one_file(one_file: Path) -> None:
    page = cli(one_file, "report", ".", "--format", "html", "--no-cache", "-q")
    assert '<p class="big">1 file; 1 finding (' in page
    assert '<span class="note">1 file · 1 finding · 0 blockers · 0 min</span>' in page
    assert "1 files" not in page and "1 findings" not in page


def test_explain_wraps_its_prose(one_file: Path) -> None:
    text = cli(one_file, "explain", "NM201")
    why = text.split("\nWhy\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert len(why) > 1 and all(line.startswith("  ") and len(line) <= EXPLAIN_WIDTH for line in why)
    assert " ".join(line.strip() for line in why).startswith("TorchNeuron has no lazy graph to cut")
    prose = text.split("\nExample\n", 1)[0]
    assert max(len(line) for line in prose.splitlines()) <= EXPLAIN_WIDTH
