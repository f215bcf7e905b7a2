"""Item 6 of issue 24: cache pruning deletes only what the cache wrote, and a planted
`.neuron_migrate_cache` link out of the project is not followed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hostile_helpers import XLA, cli, out

pytestmark = pytest.mark.slow  # subprocesses of the installed script


def victims(folder: Path) -> list[Path]:
    """Another program's `*.idx` files, old enough for any pruning rule to take them."""
    folder.mkdir(parents=True, exist_ok=True)
    made = []
    for i in range(20):
        path = folder / f"{i:024x}.idx" if i % 2 else folder / f"other{i}.idx"
        path.write_bytes(b"someone else's index")
        os.utime(path, (1.0, 1.0))
        made.append(path)
    return made


def test_a_planted_cache_link_out_of_the_project_is_not_followed(tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    (project / "a.py").write_text(XLA)
    kept = victims(elsewhere)
    (project / ".neuron_migrate_cache").symlink_to(elsewhere)
    done = cli(["check", "a.py"], project)
    assert done.returncode == 1 and "a.py:3:10: NM101" in out(done)
    assert ".neuron_migrate_cache is a link to" in out(done) and "the cache is off for this run" in out(done)
    assert all(p.exists() for p in kept)
    assert sorted(p.name for p in elsewhere.iterdir()) == sorted(p.name for p in kept)  # nothing written there


def test_a_shared_cache_dir_keeps_other_programs_files(tmp_path: Path) -> None:
    """`--cache-dir` is used as given, but pruning there touches only the cache's own indices."""
    (tmp_path / "a.py").write_text(XLA)
    shared = tmp_path / "shared"
    kept = victims(shared)
    for select in ("NM1", "NM2", "NM3", "NM4", "NM5", "NM6"):  # several configurations: each saves and prunes
        cli(["check", "--cache-dir", "shared", "--select", select, "a.py"], tmp_path)
    assert all(p.exists() for p in kept)


def test_a_folder_tagged_by_another_program_is_never_pruned(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(XLA)
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n# another tool\n")
    stale = shared / f"{7:024x}.idx"
    stale.write_bytes(b"NMCACHE3 looks like ours")  # even an index-like file: the folder is not ours
    os.utime(stale, (1.0, 1.0))
    cli(["check", "--cache-dir", "shared", "a.py"], tmp_path)
    assert stale.exists()


def test_a_link_inside_the_project_is_still_a_cache(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(XLA)
    (tmp_path / "build").mkdir()
    (tmp_path / ".neuron_migrate_cache").symlink_to("build")
    done = cli(["check", "a.py"], tmp_path)
    assert done.returncode == 1 and "warning" not in out(done)
    assert list((tmp_path / "build").glob("*.idx"))
