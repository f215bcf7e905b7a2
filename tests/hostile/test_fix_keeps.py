"""Items 10, 11 and 12 of issue 24: links into excluded folders, mode bits and xattrs kept by
`--fix`, and the smaller items (extend-rules outside the project, files that parse but do not
compile, dangling links, form feeds, huge integers in the config)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hostile_helpers import FIXED_MARK, XLA, cli, out

pytestmark = pytest.mark.slow  # subprocesses of the installed script


@pytest.mark.parametrize(
    ("folder", "flags"),
    [("build", []), (".hidden", []), ("vendor", ["--extend-exclude", "vendor"]), ("gen", ["--exclude", "gen/*"])],
)
def test_a_link_into_an_excluded_folder_does_not_fix_its_target(tmp_path: Path, folder: str, flags: list[str]) -> None:
    (tmp_path / folder).mkdir()
    (tmp_path / folder / "real.py").write_text(XLA)
    (tmp_path / "link.py").symlink_to(f"{folder}/real.py")
    (tmp_path / "own.py").write_text(XLA)
    done = cli(["check", "--fix", "--no-cache", *flags, "."], tmp_path)
    assert (tmp_path / folder / "real.py").read_text() == XLA, out(done)
    assert FIXED_MARK in (tmp_path / "own.py").read_text()
    assert "link.py" not in out(done)


def test_setuid_setgid_bits_are_kept_when_the_owner_is_restored(tmp_path: Path) -> None:
    path = tmp_path / "tool.py"
    path.write_text(XLA)
    os.chown(path, 1234, 1234)  # another owner: the rewrite must chown, which clears the bits
    path.chmod(0o6755)
    done = cli(["check", "--fix", "--no-cache", "tool.py"], tmp_path)
    assert FIXED_MARK in path.read_text(), out(done)
    info = path.stat()
    assert stat.S_IMODE(info.st_mode) == 0o6755 and (info.st_uid, info.st_gid) == (1234, 1234)


def test_extended_attributes_are_copied(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text(XLA)
    try:
        os.setxattr(path, "user.neuron_migrate_test", b"kept")
    except OSError:
        pytest.skip("this file system has no user xattrs")
    done = cli(["check", "--fix", "--no-cache", "a.py"], tmp_path)
    assert FIXED_MARK in path.read_text(), out(done)
    assert os.getxattr(path, "user.neuron_migrate_test") == b"kept"


def test_extend_rules_outside_the_project_is_refused(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (tmp_path / "elsewhere").mkdir()
    project.mkdir()
    (project / "a.py").write_text(XLA)
    (project / "neuron-migrate.toml").write_text('extend-rules = ["../elsewhere"]\n')
    done = cli(["check", "--no-cache", "a.py"], project)
    assert done.returncode == 2 and "`extend-rules` folder" in out(done) and "is outside the project" in out(done)


def test_a_file_that_parses_but_does_not_compile_is_nm901_and_untouched(tmp_path: Path) -> None:
    text = XLA + "return 1\n"
    (tmp_path / "r.py").write_text(text)
    done = cli(["check", "--fix", "--no-cache", "r.py"], tmp_path)
    assert "r.py:4:1: NM901 Fix the syntax error before migrating: 'return' outside function" in out(done)
    assert (tmp_path / "r.py").read_text() == text


def test_a_notebook_cell_may_await_at_top_level(tmp_path: Path) -> None:
    import json

    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    source = "import torch_xla.core.xla_model as xm\nawait something()\nd = xm.xla_device()\n"
    doc = {"cells": [{**cell, "source": source}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "n.ipynb").write_text(json.dumps(doc))
    done = cli(["check", "--no-cache", "n.ipynb"], tmp_path)
    assert "NM101" in out(done) and "NM901" not in out(done)


def test_a_dangling_link_is_reported_under_its_own_name(tmp_path: Path) -> None:
    (tmp_path / "dangling.py").symlink_to("nowhere/target.py")
    done = cli(["check", "--no-cache", "."], tmp_path)
    assert done.returncode == 2 and "dangling.py:1:1: NM903" in out(done)
    assert "target.py" not in out(done)


def test_a_form_feed_after_an_edit_is_kept(tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text(
        "import torch_xla.core.xla_model as xm\n\nxm.mark_step()\n\fx = 1\nd = xm.xla_device()\n\fy = 2\n"
    )
    cli(["check", "--fix", "--no-cache", "f.py"], tmp_path)
    fixed = (tmp_path / "f.py").read_text()
    assert "\n\fx = 1\n" in fixed and "\n\fy = 2\n" in fixed and FIXED_MARK in fixed


@pytest.mark.parametrize("key", ["select", "report-effort"])
def test_a_5000_digit_integer_in_the_config_is_a_one_line_error(tmp_path: Path, key: str) -> None:
    (tmp_path / "a.py").write_text(XLA)
    value = "9" * 5000
    body = f"select = [{value}]\n" if key == "select" else f"[report-effort]\ndevice = {value}\n"
    (tmp_path / "neuron-migrate.toml").write_text(body)
    done = cli(["check", "--no-cache", "a.py"], tmp_path)
    assert done.returncode == 2 and "neuron-migrate.toml: invalid TOML" in out(done)
    assert "Traceback" not in out(done)
