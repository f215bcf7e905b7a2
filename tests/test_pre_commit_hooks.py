"""`pre-commit run --all-files` with both hooks of `.pre-commit-hooks.yaml`, in a scratch repository.

The hook repository is a committed local copy of this checkout (no network: pre-commit installs it
from the path), as a user's config names it. The first run fixes what has a safe fix (the fix hook
reports "files were modified"), the second passes: a CI job running `pre-commit run --all-files`
on a migrated repository goes green. A gitignored, untracked file is never passed to the hooks.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from test_ci_docs import TRAIN, TRAIN_FIXED, git, init_repo, pre_commit, project_copy

pytestmark = pytest.mark.slow  # builds the hook's virtualenv

__all__ = ["project_copy"]  # the fixture, shared with test_ci_docs
NOTEBOOK = (
    '{"cells": [{"cell_type": "code", "execution_count": null, "id": "a", "metadata": {}, "outputs": [],'
    ' "source": ["import torch_xla.core.xla_model as xm\\n", "xm.mark_step()\\n", "print(1)\\n"]}],'
    ' "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}\n'
)


def test_pre_commit_all_files_passes_with_both_hooks(project_copy: tuple[Path, str], tmp_path: Path) -> None:
    copy, sha = project_copy
    hooks = yaml.safe_load((copy / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    ids = [hook["id"] for hook in hooks]
    assert ids == ["neuron-migrate", "neuron-migrate-fix"]
    config = {
        "repos": [{"repo": str(copy), "rev": sha, "hooks": [{"id": "neuron-migrate-fix"}, {"id": "neuron-migrate"}]}]
    }
    repo = tmp_path / "user"
    init_repo(repo)
    (repo / "train.py").write_text(TRAIN, encoding="utf-8")
    (repo / "clean.py").write_text("print('ok')\n", encoding="utf-8")
    (repo / "-ovictim.py").write_text(TRAIN, encoding="utf-8")  # a file, never the option `-o victim.py`
    (repo / "victim.py").write_text("print('keep me')\n", encoding="utf-8")
    (repo / "explore.ipynb").write_text(NOTEBOOK, encoding="utf-8")
    (repo / ".gitignore").write_text("generated/\n", encoding="utf-8")
    (repo / "generated").mkdir()
    (repo / "generated" / "model.py").write_text(TRAIN, encoding="utf-8")  # ignored: never checked or fixed
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    git(repo, "add", "-A")
    home = tmp_path / "pre-commit-home"

    first = pre_commit(repo, home, "run", "--all-files")
    out = first.stdout + first.stderr
    assert first.returncode == 1, out  # the fix hook changed files
    assert re.search(r"neuron-migrate \(fix\)\.+Failed", out) and "- files were modified by this hook" in out, out
    assert re.search(r"^neuron-migrate\.+Passed", out, re.MULTILINE), out  # nothing left for the check hook
    assert (repo / "train.py").read_text(encoding="utf-8") == TRAIN_FIXED
    assert (repo / "-ovictim.py").read_text(encoding="utf-8") == TRAIN_FIXED
    assert (repo / "victim.py").read_text(encoding="utf-8") == "print('keep me')\n"
    assert "xm.mark_step()" not in (repo / "explore.ipynb").read_text(encoding="utf-8")
    assert (repo / "generated" / "model.py").read_text(encoding="utf-8") == TRAIN

    git(repo, "add", "-A")
    second = pre_commit(repo, home, "run", "--all-files")
    assert second.returncode == 0, second.stdout + second.stderr
    assert len(re.findall(r"^neuron-migrate.*\.+Passed$", second.stdout, re.MULTILINE)) == 2, second.stdout
