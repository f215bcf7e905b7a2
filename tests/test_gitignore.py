"""Discovery respects `.gitignore` and anchors exclude globs as Ruff does, through the console script."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).with_name("neuron-migrate")
XLA = "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\n"
FILES = (
    "train.py",
    "generated/model_pb2.py",  # ignored folder
    "src/gen_data.py",  # ignored by name pattern
    "src/keep_gen_x.py",  # re-included by the nested .gitignore
    "src/local.py",  # ignored by an anchored line in src/.gitignore
    "other/src/c.py",
    "other/local.py",
    "notes/scratch.py",  # ignored through .git/info/exclude
)


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [str(SCRIPT), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, env=env, check=True)
    for name in FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(XLA, encoding="utf-8")
    (tmp_path / ".gitignore").write_text("generated/\ngen_*.py\n*_gen_*.py\n", encoding="utf-8")
    (tmp_path / "src" / ".gitignore").write_text("!keep_gen_*.py\n/local.py\n", encoding="utf-8")
    (tmp_path / ".git" / "info" / "exclude").write_text("notes/\n", encoding="utf-8")
    return tmp_path


def _shown(result: subprocess.CompletedProcess[str]) -> set[str]:
    assert result.returncode == 0, result.stderr
    return set(result.stdout.split())


def _git_ignored(repo: Path) -> set[str]:
    out = subprocess.run(["git", "check-ignore", *FILES], cwd=repo, capture_output=True, text=True, check=False)
    return set(out.stdout.split())


def test_ignored_files_are_neither_checked_nor_fixed(repo: Path) -> None:
    ignored = _git_ignored(repo)
    assert ignored == {"generated/model_pb2.py", "src/gen_data.py", "src/local.py", "notes/scratch.py"}
    assert _shown(cli("check", "--show-files", ".", cwd=repo)) == set(FILES) - ignored
    # from a subfolder, the root's .gitignore still applies (the repository root is found above)
    assert _shown(cli("check", "--show-files", ".", cwd=repo / "src")) == {"keep_gen_x.py"}
    assert _shown(cli("check", "--show-files", "src", cwd=repo)) == {"src/keep_gen_x.py"}
    fixed = cli("check", "--no-cache", "--fix", ".", cwd=repo)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    for name in FILES:
        text = (repo / name).read_text(encoding="utf-8")
        assert (text == XLA) is (name in ignored), name  # ignored files untouched, the others fixed


def test_no_respect_gitignore_checks_everything(repo: Path) -> None:
    assert _shown(cli("check", "--show-files", "--no-respect-gitignore", ".", cwd=repo)) == set(FILES)
    (repo / "pyproject.toml").write_text("[tool.neuron-migrate]\nrespect-gitignore = false\n", encoding="utf-8")
    assert _shown(cli("check", "--show-files", ".", cwd=repo)) - {"pyproject.toml"} == set(FILES)
    assert len(_shown(cli("check", "--show-files", "--respect-gitignore", ".", cwd=repo)) - {"pyproject.toml"}) == 4


def test_a_named_ignored_file_is_checked_as_in_ruff(repo: Path) -> None:
    assert _shown(cli("check", "--show-files", "generated/model_pb2.py", cwd=repo)) == {"generated/model_pb2.py"}


def test_outside_a_repository_gitignore_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "gen_x.py").write_text(XLA, encoding="utf-8")
    (tmp_path / ".gitignore").write_text("gen_*.py\n", encoding="utf-8")
    assert _shown(cli("check", "--show-files", ".", cwd=tmp_path)) == {"gen_x.py"}  # as git: no repository


def test_exclude_globs_with_a_slash_are_anchored(repo: Path) -> None:
    (repo / "src" / "a.py").write_text(XLA, encoding="utf-8")
    (repo / "src" / "deep").mkdir()
    (repo / "src" / "deep" / "b.py").write_text(XLA, encoding="utf-8")
    shown = _shown(cli("check", "--show-files", "--extend-exclude", "src/*.py", ".", cwd=repo))
    assert "other/src/c.py" in shown and "src/deep/b.py" in shown  # Ruff keeps both
    assert "src/a.py" not in shown and "src/keep_gen_x.py" not in shown
    shown = _shown(cli("check", "--show-files", "--extend-exclude", "local.py", ".", cwd=repo))
    assert "other/local.py" not in shown  # no `/`: a name at any depth
    # from a subfolder, a command-line glob is relative to it
    shown = _shown(cli("check", "--show-files", "--extend-exclude", "src/*.py", ".", cwd=repo / "other"))
    assert shown == {"local.py"}


def test_config_exclude_is_anchored_at_the_config_folder(repo: Path) -> None:
    (repo / "pyproject.toml").write_text('[tool.neuron-migrate]\nextend-exclude = ["src/*.py"]\n', encoding="utf-8")
    shown = _shown(cli("check", "--show-files", ".", cwd=repo / "other"))
    assert shown == {"local.py", "src/c.py"}  # `src/*.py` is the root's src, not other/src
    shown = _shown(cli("check", "--show-files", ".", cwd=repo))
    assert "other/src/c.py" in shown and "src/keep_gen_x.py" not in shown


def test_per_file_ignores_use_the_same_anchoring(repo: Path) -> None:
    (repo / "pyproject.toml").write_text(
        '[tool.neuron-migrate.per-file-ignores]\n"src/*.py" = ["NM101"]\n"{other,x}/local.py" = ["NM6"]\n',
        encoding="utf-8",
    )
    out = cli("check", "--no-cache", ".", cwd=repo).stdout
    codes = {(line.split(":")[0], line.split()[1]) for line in out.splitlines() if line.count(":") >= 3}
    assert ("other/src/c.py", "NM101") in codes  # not under the root's src/
    assert ("src/keep_gen_x.py", "NM101") not in codes
    assert ("other/local.py", "NM601") not in codes and ("other/local.py", "NM101") in codes
