"""`--stdin-filename NAME`: code from stdin, findings under NAME, fixed code on stdout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from neuron_migrate.cli import main

CODE = "import torch_xla.core.xla_model as xm\n\nxm.mark_step()\ndevice = xm.xla_device(1)\n"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_reports_findings_under_the_given_name() -> None:
    result = CliRunner().invoke(main, ["--stdin-filename", "pkg/train.py", "-q"], input=CODE)
    assert result.exit_code == 1
    assert [line.split(": ")[0] for line in result.stdout.splitlines()] == [
        "pkg/train.py:1:1",
        "pkg/train.py:3:1",
        "pkg/train.py:4:10",
    ]
    assert not Path("pkg").exists()


def test_fix_prints_only_the_code_on_stdout() -> None:
    result = CliRunner().invoke(main, ["--stdin-filename", "train.py", "--fix"], input=CODE)
    assert result.stdout == "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device(1)\n"
    assert "train.py:3:10: NM101" in result.stderr and "Found 3 findings (1 fixed, 2 remaining)." in result.stderr
    assert result.exit_code == 1


def test_fix_echoes_clean_input_byte_for_byte() -> None:
    data = "x = 1\r\ny = 'é'\r\n".encode()
    result = CliRunner().invoke(main, ["--stdin-filename", "a.py", "--fix"], input=data)
    assert result.stdout_bytes == data and result.exit_code == 0


def test_fix_keeps_the_declared_encoding() -> None:
    data = (
        "# -*- coding: latin-1 -*-\nimport torch_xla.core.xla_model as xm\nxm.mark_step()  # café\nprint('é')\n".encode(
            "latin-1"
        )
    )
    result = CliRunner().invoke(main, ["--stdin-filename", "a.py", "--fix", "--select", "NM201"], input=data)
    expected = (  # the statement's comment went with it; the latin-1 text that stays is still latin-1
        "# -*- coding: latin-1 -*-\nimport torch_xla.core.xla_model as xm\nprint('é')\n"
    )
    assert result.stdout_bytes == expected.encode("latin-1")


def test_diff_shows_the_change() -> None:
    result = CliRunner().invoke(main, ["--stdin-filename", "a.py", "--diff"], input=CODE)
    assert "-xm.mark_step()" in result.stdout and result.exit_code == 1


def test_uses_the_config_nearest_to_name(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "neuron-migrate.toml").write_text("select = ['NM201']\n")
    result = CliRunner().invoke(main, ["--stdin-filename", "pkg/train.py", "-q"], input=CODE)
    assert [line.split(": ")[1].split()[0] for line in result.stdout.splitlines()] == ["NM201"]


def test_notebook_from_stdin() -> None:
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {},
                "outputs": [],
                "execution_count": None,
                "source": ["import torch_xla.core.xla_model as xm\n", "xm.mark_step()\n"],
            }
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    text = json.dumps(notebook, indent=1) + "\n"
    result = CliRunner().invoke(main, ["--stdin-filename", "nb.ipynb", "--fix", "--select", "NM201"], input=text)
    assert json.loads(result.stdout)["cells"][0]["source"] == ["import torch_xla.core.xla_model as xm\n"]


def test_undecodable_input_is_reported() -> None:
    result = CliRunner().invoke(main, ["--stdin-filename", "a.py"], input=b"x = '\xff'\n")
    assert result.exit_code == 1 and "a.py:1:1: NM902" in result.stdout


def test_paths_with_stdin_filename_are_refused() -> None:
    result = CliRunner().invoke(main, ["--stdin-filename", "a.py", "other.py"], input="")
    assert result.exit_code == 2 and "--stdin-filename reads stdin" in result.stderr
