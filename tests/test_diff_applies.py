"""`--diff` output applies: `git apply --check` and `patch --dry-run` accept it, and applying it
gives what `--fix` writes, over the whole fixture corpus as it is, without a final newline and
with CRLF line endings.

Runs the installed console script in a scratch git repository, as a CI step would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES

from neuron_migrate.output.patch import NO_NEWLINE, file_patch, lines

SCRIPT = Path(sys.executable).with_name("neuron-migrate")
VARIANTS = {
    "as-is": lambda text: text,
    "no-final-newline": lambda text: text.rstrip("\n"),
    "crlf": lambda text: text.replace("\n", "\r\n"),
}


def _corpus() -> list[Path]:
    """Every fixture input (not the expected `.fixed.py`), Python and text files alike."""
    return sorted(
        p
        for p in FIXTURES.rglob("*")
        if p.is_file() and p.suffix not in (".findings",) and ".fixed." not in p.name and p.name != "fixed"
    )


def _git(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=check)


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file() and ".git" not in p.parts
    }


def _write_corpus(root: Path, variant: str) -> int:
    change = VARIANTS[variant]
    count = 0
    for source in _corpus():
        if source.suffix not in (".py", ".ipynb", ".txt", ".sh", ".toml", ".cfg", ".in") and source.suffix:
            continue
        try:
            text = source.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        target = root / "corpus" / source.relative_to(FIXTURES)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(change(text).encode("utf-8"))
        count += 1
    return count


@pytest.mark.parametrize("variant", VARIANTS)
def test_diff_of_the_fixture_corpus_applies_with_git_and_patch(tmp_path: Path, variant: str) -> None:
    repo, fixed = tmp_path / "repo", tmp_path / "fixed"
    repo.mkdir()
    assert _write_corpus(repo, variant) > 300
    _git("init", "-q", cwd=repo)
    shutil.copytree(repo, fixed, ignore=shutil.ignore_patterns(".git"))
    args = ["--unsafe-fixes", "--no-cache", "corpus"]
    diff = subprocess.run([str(SCRIPT), "--diff", *args], check=False, cwd=repo, capture_output=True, timeout=600)
    assert diff.returncode == 1, diff.stderr
    subprocess.run(
        [str(SCRIPT), "--fix", "--exit-zero", *args], check=False, cwd=fixed, capture_output=True, timeout=600
    )
    patch_file = tmp_path / "fix.patch"
    patch_file.write_bytes(diff.stdout)
    changed = diff.stdout.count(b"\n+++ b/")
    assert changed >= 100, "the corpus should change many files"
    if variant == "no-final-newline":
        assert diff.stdout.count(NO_NEWLINE.encode()) >= changed  # each changed file ends without one
    check = _git("apply", "--check", "--whitespace=nowarn", str(patch_file), cwd=repo, check=False)
    assert check.returncode == 0, check.stderr[:2000]
    dry = subprocess.run(
        ["patch", "-p1", "--dry-run", "--batch", "--binary", "-i", str(patch_file)],
        check=False,
        cwd=repo,
        capture_output=True,
        text=True,
    )
    assert dry.returncode == 0 and "FAILED" not in dry.stdout and "fuzz" not in dry.stdout, dry.stdout[-2000:]
    _git("apply", "--whitespace=nowarn", str(patch_file), cwd=repo)
    assert _tree(repo) == _tree(fixed)  # the patch does exactly what --fix does


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("a\nb", "a\nc"),  # no final newline on either side
        ("a\nb\n", "a\nb"),  # the fix drops the last newline
        ("a\nb", "a\nb\n"),  # the fix adds it
        ("a\r\nb\r\n", "a\r\nc\r\n"),  # CRLF kept in the lines
        ("x = '\x0c'\nb\n", "x = '\x0c'\nc\n"),  # a form feed does not end a line for git
    ],
)
def test_one_file_patch_applies_with_git(tmp_path: Path, before: str, after: str) -> None:
    _git("init", "-q", cwd=tmp_path)
    (tmp_path / "f.py").write_bytes(before.encode())
    patch = file_patch("f.py", before, after)
    assert patch.endswith("\n")
    (tmp_path / "p.patch").write_bytes(patch.encode())
    _git("apply", "--whitespace=nowarn", "p.patch", cwd=tmp_path)
    assert (tmp_path / "f.py").read_bytes() == after.encode()


def test_lines_split_on_lf_only() -> None:
    assert lines("a\r\nb\x0cc\u2028d") == ["a\r\n", "b\x0cc\u2028d"]
    assert lines("") == [] and lines("\n") == ["\n"]


def test_a_name_with_a_space_applies_with_git_and_patch(tmp_path: Path) -> None:
    _git("init", "-q", cwd=tmp_path)
    (tmp_path / "my train.py").write_text(
        "import torch_xla.core.xla_model as xm\nd = xm.xla_device()", encoding="utf-8"
    )
    diff = subprocess.run([str(SCRIPT), "--diff", "."], check=False, cwd=tmp_path, capture_output=True, text=True)
    assert "--- a/my train.py\t\n" in diff.stdout and diff.stdout.endswith(NO_NEWLINE)
    (tmp_path / "p.patch").write_text(diff.stdout, encoding="utf-8")
    dry = subprocess.run(
        ["patch", "-p1", "--dry-run", "--batch", "-i", "p.patch"],
        check=False,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert dry.returncode == 0 and "checking file 'my train.py'" in dry.stdout, dry.stdout
    assert _git("apply", "p.patch", cwd=tmp_path).returncode == 0
    assert "xla" not in (tmp_path / "my train.py").read_text(encoding="utf-8")
