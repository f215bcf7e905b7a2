"""End-to-end CLI tests: exit codes, --fix, --diff, JSON, selection, and bad input."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from neuron_migrate.cli import main

XLA_SCRIPT = "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\nxm.mark_step()\n"
CLEAN_SCRIPT = "import torch\n\ndevice = torch.device('neuron')\n"


def run(args: list[str], cwd: Path, stdin: str | None = None) -> tuple[int, str]:
    runner = CliRunner()
    old = Path.cwd()
    os.chdir(cwd)
    try:
        result = runner.invoke(main, args, input=stdin, catch_exceptions=False)
    finally:
        os.chdir(old)
    return result.exit_code, result.output


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(XLA_SCRIPT)
    (tmp_path / "clean.py").write_text(CLEAN_SCRIPT)
    return tmp_path


def test_check_reports_findings_and_exits_1(project: Path) -> None:
    code, out = run([], project)
    assert code == 1
    assert "train.py:3:10: NM101 [*] Replace `xm.xla_device()`" in out
    assert "train.py:4:1: NM201 [*] Remove `xm.mark_step()`" in out
    assert "Found 3 findings." in out
    assert "fixable with the `--fix` option" in out


def test_clean_tree_exits_0(tmp_path: Path) -> None:
    (tmp_path / "clean.py").write_text(CLEAN_SCRIPT)
    code, out = run(["check", "."], tmp_path)
    assert code == 0
    assert "All checks passed!" in out


def test_fix_without_check_rewrites_and_exits_0(project: Path) -> None:
    code, out = run(["--fix", "."], project)
    assert code == 0, out
    fixed = (project / "train.py").read_text()
    assert "torch_xla" not in fixed
    assert 'device = torch.device("neuron")' in fixed
    assert "(3 fixed, 0 remaining)" in out
    assert (project / "clean.py").read_text() == CLEAN_SCRIPT


def test_second_fix_changes_nothing(project: Path) -> None:
    run(["--fix", "."], project)
    first = (project / "train.py").read_bytes()
    code, _ = run(["--fix", "."], project)
    assert code == 0
    assert (project / "train.py").read_bytes() == first


def test_diff_prints_and_writes_nothing(project: Path) -> None:
    code, out = run(["--diff", "."], project)
    assert code == 1
    assert out.startswith("--- a/train.py\n+++ b/train.py\n")
    assert '+device = torch.device("neuron")' in out
    assert (project / "train.py").read_text() == XLA_SCRIPT


def test_unsafe_fixes_need_the_flag(tmp_path: Path) -> None:
    source = "import torch_xla.core.xla_model as xm\n\n\ndef second():\n    return xm.xla_device(1)\n"
    (tmp_path / "t.py").write_text(source)
    code, out = run(["--fix", "."], tmp_path)
    assert code == 1
    assert "[-] " in out and "--unsafe-fixes" in out
    assert (tmp_path / "t.py").read_text() == source
    code, _ = run(["--fix", "--unsafe-fixes", "."], tmp_path)
    assert code == 0
    assert 'torch.device("neuron", 1)' in (tmp_path / "t.py").read_text()


def test_select_and_ignore_prefixes(project: Path) -> None:
    _, out = run(["--select", "NM2", "."], project)
    assert "NM201" in out and "NM101" not in out
    _, out = run(["--ignore", "NM2,NM6", "."], project)
    assert "NM101" in out and "NM201" not in out and "NM601" not in out
    _, out = run(["--ignore", "NM2", "--extend-select", "NM201", "."], project)
    assert "NM201" in out  # the more specific prefix wins, as in Ruff


def test_exit_zero(project: Path) -> None:
    code, _ = run(["--exit-zero", "."], project)
    assert code == 0


def test_json_output_shape(project: Path) -> None:
    code, out = run(["--output-format", "json", "."], project)
    assert code == 1
    rows = json.loads(out)
    first = next(r for r in rows if r["code"] == "NM101")
    assert first["filename"] == "train.py"
    assert first["location"] == {"row": 3, "column": 10}
    assert first["end_location"] == {"row": 3, "column": 25}
    assert first["severity"] == "error"
    assert first["fix"]["applicability"] == "safe"
    edit = first["fix"]["edits"][0]
    assert set(edit) == {"content", "location", "end_location"}
    assert first["url"].endswith("#nm101")
    assert sorted(rows, key=lambda r: (r["filename"], r["location"]["row"], r["location"]["column"])) == rows


def test_json_edits_reproduce_the_fix(tmp_path: Path) -> None:
    """Applying the JSON edits by hand gives the same text as --fix for a single finding."""
    (tmp_path / "t.py").write_text("import torch\nimport torch_xla.core.xla_model as xm\n\nd = xm.xla_device()\n")
    _, out = run(["--output-format", "json", "--select", "NM101", "."], tmp_path)
    lines = (tmp_path / "t.py").read_text().splitlines(keepends=True)
    edit = json.loads(out)[0]["fix"]["edits"][0]
    row, col = edit["location"]["row"], edit["location"]["column"]
    end_row, end_col = edit["end_location"]["row"], edit["end_location"]["column"]
    assert row == end_row
    line = lines[row - 1]
    lines[row - 1] = line[: col - 1] + edit["content"] + line[end_col - 1 :]
    assert "".join(lines).endswith('d = torch.device("neuron")\n')


def test_excluded_and_hidden_folders_are_skipped(tmp_path: Path) -> None:
    for folder in (".venv", "build", ".hidden", "node_modules", "vendored"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "t.py").write_text(XLA_SCRIPT)
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    (tmp_path / "env" / "t.py").write_text(XLA_SCRIPT)
    code, out = run(["--extend-exclude", "vendored", "."], tmp_path)
    assert code == 0, out
    code, out = run(["--exclude", "vendored", "."], tmp_path)  # replaces the defaults, as in Ruff
    assert code == 1 and "build/t.py" in out and "node_modules/t.py" in out and "vendored" not in out, out


def test_rules_lists_every_rule() -> None:
    code, out = run(["rules"], Path.cwd())
    assert code == 0
    assert "NM101  xla_device_call" in out
    assert "NM901" in out


def test_explain_and_unknown_code() -> None:
    code, out = run(["explain", "nm201"], Path.cwd())
    assert code == 0
    assert "What it does" in out and "Why" in out and "Example" in out and "Use instead" in out
    code, out = run(["explain", "NM000"], Path.cwd())
    assert code == 2


def test_version() -> None:
    code, out = run(["--version"], Path.cwd())
    assert code == 0 and out.startswith("neuron-migrate ")


def test_bad_option_exits_2(project: Path) -> None:
    code, _ = run(["--output-format", "yaml", "."], project)
    assert code == 2


# -- bad input: each file gets its own NM9xx finding; the others are still processed --------
def _bad_tree(tmp_path: Path) -> Path:
    (tmp_path / "good.py").write_text(XLA_SCRIPT)
    (tmp_path / "syntax.py").write_text("import torch_xla\ndef broken(:\n    pass\n")
    (tmp_path / "binary.py").write_bytes(b"x = '\xff\xfe'\n")
    (tmp_path / "empty.py").write_text("")
    (tmp_path / "dir.py").mkdir()
    (tmp_path / "deep.py").write_text("import torch_xla\nx = " + "-" * 100_000 + "1\n")
    return tmp_path


def test_bad_input_is_reported_per_file(tmp_path: Path) -> None:
    tree = _bad_tree(tmp_path)
    before = {p.name: p.read_bytes() for p in tree.iterdir() if p.is_file() and p.name != "good.py"}
    code, out = run(["--fix", "."], tree)
    assert "syntax.py:2:12: NM901" in out
    assert "binary.py:1:1: NM902" in out
    assert "dir.py:1:1: NM903" in out
    assert "deep.py:1:1: NM905" in out
    assert "empty.py" not in out
    assert "torch_xla" not in (tree / "good.py").read_text()
    assert {p.name: p.read_bytes() for p in tree.iterdir() if p.is_file() and p.name != "good.py"} == before
    assert code == 2  # an I/O error (the directory) makes the run fail


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "secret.py"
    target.write_text(XLA_SCRIPT)
    (tmp_path / "other.py").write_text(XLA_SCRIPT)
    real = os.open

    def refusing_open(path: Any, *args: Any, **kwargs: Any) -> int:  # files are read through fsio's os.open
        if os.fspath(path).endswith("secret.py"):
            raise PermissionError(13, "Permission denied")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)
    code, out = run(["."], tmp_path)
    assert "secret.py:1:1: NM903 Make this file readable; Permission denied" in out
    assert "other.py:3:10: NM101" in out
    assert code == 2


def test_missing_path_is_an_error(tmp_path: Path) -> None:
    code, out = run(["nope.py"], tmp_path)
    assert code == 2 and "nope.py:1:1: NM903" in out


def test_huge_file_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "huge.py").write_text("import torch_xla\n" + "x = 1\n" * (2 * 1024 * 1024))
    _, out = run(["."], tmp_path)
    assert "huge.py:1:1: NM904" in out


def test_fix_keeps_permissions_and_newlines(tmp_path: Path) -> None:
    target = tmp_path / "t.py"
    target.write_bytes(XLA_SCRIPT.replace("\n", "\r\n").encode())
    target.chmod(0o751)
    run(["--fix", "."], tmp_path)
    data = target.read_bytes()
    assert b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_jobs_gives_the_same_findings(tmp_path: Path) -> None:
    for index in range(6):
        (tmp_path / f"m{index}.py").write_text(XLA_SCRIPT)
    _, one = run(["--output-format", "json", "."], tmp_path)
    _, two = run(["--output-format", "json", "--jobs", "2", "."], tmp_path)
    assert json.loads(one) == json.loads(two)


def test_empty_folder(tmp_path: Path) -> None:
    code, out = run(["--jobs", "2", "."], tmp_path)
    assert code == 0 and "All checks passed!" in out


def test_internal_error_is_reported_per_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from neuron_migrate.engine import pipeline as runner

    (tmp_path / "a.py").write_text(XLA_SCRIPT)
    (tmp_path / "b.py").write_text(XLA_SCRIPT + "# boom\n")
    real = runner.check_source

    def flaky(text: str, path: str, settings: object) -> object:
        if "boom" in text:
            raise RuntimeError("boom")
        return real(text, path, settings)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "check_source", flaky)
    code, out = run(["--fix", "."], tmp_path)
    assert "b.py:1:1: NM908 Report this bug; neuron-migrate failed on this file: RuntimeError: boom" in out
    assert "torch_xla" not in (tmp_path / "a.py").read_text()
    assert (tmp_path / "b.py").read_text() == XLA_SCRIPT + "# boom\n"
    assert code == 2
