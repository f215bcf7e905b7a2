"""Item 1 of issue 24: special files are refused before they are read, never hang or exhaust memory."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from hostile_helpers import XLA, cli, out

pytestmark = pytest.mark.slow  # subprocesses of the installed script

GiB = 2**30


def project_with(tmp_path: Path, name: str, kind: str) -> Path:
    """A project with one good file and one special file named `name`."""
    (tmp_path / "good.py").write_text(XLA)
    special = tmp_path / name
    if kind == "fifo":
        os.mkfifo(special)
    elif kind == "zero":
        special.symlink_to("/dev/zero")  # read-only from the tool's side: it never writes
    elif kind == "null":
        special.symlink_to("/dev/null")
    return tmp_path


@pytest.mark.parametrize(
    ("name", "kind", "words"),
    [
        ("pipe.py", "fifo", "a FIFO (named pipe)"),
        ("zero.py", "zero", "a character device"),
        ("null.py", "null", "a character device"),
        ("run.sh", "fifo", "a FIFO (named pipe)"),
        ("requirements.txt", "zero", "a character device"),
    ],
)
@pytest.mark.parametrize("fix", [False, True])
def test_a_special_file_is_reported_and_every_other_file_still_checked(
    tmp_path: Path, name: str, kind: str, words: str, fix: bool
) -> None:
    project = project_with(tmp_path, name, kind)
    args = ["check", "--no-cache", *(["--fix"] if fix else []), "."]
    done = cli(args, project, timeout=60, limit_as=GiB)  # /dev/zero read whole would blow 1 GiB
    text = out(done)
    assert done.returncode == 2, text
    assert f"{name}:1:1: NM903 Remove or exclude this file; it is {words}" in text
    assert "Traceback" not in text
    if fix:
        assert 'torch.device("neuron")' in (project / "good.py").read_text()
        assert "(2 fixed, 1 remaining)" in text
    else:
        assert "good.py:3:10: NM101" in text


def test_a_special_file_named_on_the_command_line_is_reported(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.py")
    done = cli(["check", "--no-cache", "pipe.py"], tmp_path, timeout=60)
    assert done.returncode == 2 and "NM903 Remove or exclude this file; it is a FIFO" in out(done)


def test_the_cache_never_opens_a_special_file(tmp_path: Path) -> None:
    """With the cache on (the default), the stamped read refuses the FIFO too."""
    project = project_with(tmp_path, "pipe.py", "fifo")
    for _ in range(2):  # cold, then warm
        done = cli(["check", "."], project, timeout=60)
        assert done.returncode == 2 and "pipe.py:1:1: NM903" in out(done)


def feed_forever(fifo: Path, stop: threading.Event) -> None:
    """A writer that keeps a FIFO full until told to stop (a reader would never see its end)."""
    try:
        fd = os.open(fifo, os.O_WRONLY)
    except OSError:
        return
    try:
        while not stop.is_set():
            try:
                os.write(fd, b"x = 1\n" * 1000)
            except BrokenPipeError:
                return
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--baseline", "base.json"], "base.json: cannot read the baseline: it is a FIFO (named pipe)"),
        (["--config", "cfg.toml"], "cfg.toml: cannot read the config file: it is a FIFO (named pipe)"),
    ],
)
def test_a_fifo_as_baseline_or_config_is_a_one_line_error(tmp_path: Path, args: list[str], expected: str) -> None:
    (tmp_path / "good.py").write_text(XLA)
    os.mkfifo(tmp_path / args[1])
    done = cli(["check", "--no-cache", *args, "good.py"], tmp_path, timeout=60)
    assert done.returncode == 2, out(done)
    assert expected in out(done) and "Traceback" not in out(done)


def test_a_dev_zero_baseline_is_refused_not_read(tmp_path: Path) -> None:
    (tmp_path / "good.py").write_text(XLA)
    (tmp_path / "base.json").symlink_to("/dev/zero")
    done = cli(["check", "--no-cache", "--baseline", "base.json", "good.py"], tmp_path, timeout=60, limit_as=GiB)
    assert done.returncode == 2 and "cannot read the baseline: it is a character device" in out(done)


def test_a_fifo_pyproject_is_passed_over_by_the_config_search(tmp_path: Path) -> None:
    (tmp_path / "good.py").write_text(XLA)
    os.mkfifo(tmp_path / "pyproject.toml")  # not a regular file: no config there, as if absent
    done = cli(["check", "--no-cache", "good.py"], tmp_path, timeout=60)
    assert done.returncode == 1 and "good.py:3:10: NM101" in out(done)


def test_a_fifo_rule_file_in_extend_rules_is_an_error_not_a_hang(tmp_path: Path) -> None:
    (tmp_path / "good.py").write_text(XLA)
    (tmp_path / "rules").mkdir()
    os.mkfifo(tmp_path / "rules" / "NMX001.toml")
    (tmp_path / "neuron-migrate.toml").write_text('extend-rules = ["rules"]\n')
    done = cli(["check", "good.py"], tmp_path, timeout=60)
    assert done.returncode == 2 and "NMX001.toml: cannot read the rule file: it is a FIFO" in out(done)


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_special_cache_index_is_ignored(tmp_path: Path, kind: str) -> None:
    (tmp_path / "good.py").write_text(XLA)
    cli(["check", "good.py"], tmp_path)  # writes the index
    (index,) = (tmp_path / ".neuron_migrate_cache").glob("*.idx")
    index.unlink()
    if kind == "fifo":
        os.mkfifo(index)
    else:
        index.symlink_to("/dev/zero")
    done = cli(["check", "good.py"], tmp_path, timeout=60, limit_as=GiB)
    assert done.returncode == 1 and "NM101" in out(done), out(done)
    assert "Traceback" not in out(done)


def test_stdin_is_read_up_to_the_limit_only(tmp_path: Path) -> None:
    big = b"x = 1\n" * (11 * 2**20 // 6)  # 11 MiB, over the 10 MiB limit
    done = cli(["check", "--stdin-filename", "big.py"], tmp_path, stdin=big, timeout=60)
    assert done.returncode == 1 and "big.py:1:1: NM904 Split this code; stdin holds more than 10 MiB" in out(done)
    done = cli(["check", "--fix", "--stdin-filename", "big.py"], tmp_path, stdin=big, timeout=60)
    assert done.returncode == 2 and done.stdout == b""  # nothing a caller would take as the fixed code
    assert "stdin holds more than 10 MiB" in out(done)


def test_stdin_from_dev_zero_ends(tmp_path: Path) -> None:
    with open("/dev/zero", "rb") as zero:  # read-only
        import subprocess

        from hostile_helpers import SCRIPT

        done = subprocess.run(
            [str(SCRIPT), "check", "--stdin-filename", "z.py"],
            stdin=zero, cwd=tmp_path, capture_output=True, timeout=60, check=False,
            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        )  # fmt: skip
    assert done.returncode == 1 and b"NM904" in done.stdout
