"""File names that look like options cannot inject them through the shipped pre-commit hooks.

pre-commit runs `entry` (split as a shell would), the hook's `args`, then the staged file names.
A top-level file named `-ovictim.py` must be checked (and fixed) as a file, never parsed as
`-o victim.py`, which would overwrite `victim.py` with the report. Each hook's command is built
here as pre-commit builds it and run through the installed CLI; tests/test_pre_commit_hooks.py
runs pre-commit itself on such a file.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml
from hostile_helpers import ROOT, SCRIPT, XLA, cli

HOOKS = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
VICTIM = "print('keep me')\n"
SHEBANG = "#!/usr/bin/env python\n" + XLA  # a script without a suffix is Python by its shebang


def _command(hook: dict[str, object], files: list[str]) -> list[str]:
    entry = shlex.split(str(hook["entry"]))
    assert entry[0] == "neuron-migrate"
    return [*entry[1:], *map(str, hook.get("args", [])), *files]  # type: ignore[call-overload]


def test_every_hook_ends_its_options_with_a_double_dash() -> None:
    assert [hook["id"] for hook in HOOKS] == ["neuron-migrate", "neuron-migrate-fix"]
    for hook in HOOKS:
        assert shlex.split(hook["entry"])[-1] == "--", hook["id"]
        assert not hook.get("args"), hook["id"]  # nothing may follow the `--` but file names


@pytest.mark.parametrize("hook", HOOKS, ids=lambda h: h["id"])
def test_a_file_named_like_an_option_is_a_file(hook: dict[str, object], tmp_path: Path) -> None:
    assert SCRIPT.is_file()
    (tmp_path / "-ovictim.py").write_text(XLA, encoding="utf-8")
    (tmp_path / "victim.py").write_text(VICTIM, encoding="utf-8")
    (tmp_path / "--fix").write_text(SHEBANG, encoding="utf-8")  # would turn the check hook into a fixer
    done = cli(_command(hook, ["-ovictim.py", "victim.py", "--fix"]), tmp_path)
    assert done.returncode in (0, 1), done.stderr
    assert (tmp_path / "victim.py").read_text(encoding="utf-8") == VICTIM
    fixing = hook["id"] == "neuron-migrate-fix"
    for name, before in (("-ovictim.py", XLA), ("--fix", SHEBANG)):
        fixed = (tmp_path / name).read_text(encoding="utf-8")
        assert (fixed != before) is fixing, name  # the fix hook fixed both files; the check hook neither
    if not fixing:
        assert b"-ovictim.py:3:10: NM101" in done.stdout and b"--fix:4:10: NM101" in done.stdout
