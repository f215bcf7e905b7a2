"""The console script ends with `os._exit` once a command has finished (`neuron_migrate.__main__.run`):
the same output and exit code as Python's ordinary exit, exit handlers still run, and the ordinary
exit wherever a quick one could lose something."""

from __future__ import annotations

import atexit
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from neuron_migrate import __main__ as entry

SCRIPT = Path(sys.executable).with_name("neuron-migrate")
XLA = "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\nxm.mark_step()\n"
# Python's ordinary exit, through the same CLI object the console script used before `run()`.
ORDINARY = "import sys; from neuron_migrate.cli import main; main(prog_name='neuron-migrate')"


class _Exited(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


@pytest.fixture
def quick_exits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """`os._exit` raises instead of ending pytest; the codes it was given."""
    codes: list[int] = []

    def fake_exit(code: int) -> None:
        codes.append(code)
        raise _Exited(code)

    monkeypatch.setattr(entry.os, "_exit", fake_exit)
    return codes


def _run(monkeypatch: pytest.MonkeyPatch, *args: str) -> None:
    monkeypatch.setattr(sys, "argv", ["neuron-migrate", *args])
    entry.run()


@pytest.mark.parametrize(
    ("args", "code"),
    [(("version",), 0), (("check", "--no-cache", "xla.py"), 1), (("check", "--no-cache", "nope.py"), 2)],
)
def test_a_finished_command_exits_quickly_with_its_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quick_exits: list[int], args: tuple[str, ...], code: int
) -> None:
    (tmp_path / "xla.py").write_text(XLA)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(_Exited):
        _run(monkeypatch, *args)
    assert quick_exits == [code]


def test_exit_handlers_run_before_the_quick_exit(monkeypatch: pytest.MonkeyPatch, quick_exits: list[int]) -> None:
    ran: list[str] = []
    atexit.register(ran.append, "handler")
    try:
        with pytest.raises(_Exited):
            _run(monkeypatch, "version")
    finally:
        atexit.unregister(ran.append)
    assert ran == ["handler"] and quick_exits == [0]


def test_a_running_thread_gets_the_ordinary_exit(monkeypatch: pytest.MonkeyPatch, quick_exits: list[int]) -> None:
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        with pytest.raises(SystemExit) as exited:
            _run(monkeypatch, "version")
    finally:
        stop.set()
        worker.join()
    assert exited.value.code == 0 and quick_exits == []


def test_output_that_cannot_be_flushed_gets_the_ordinary_exit(
    monkeypatch: pytest.MonkeyPatch, quick_exits: list[int]
) -> None:
    """Click already ends a command whose output hits a closed pipe (exit 1); output still
    buffered at the end that cannot be written is left to Python's exit, which reports it."""

    class Closed:
        def write(self, text: str) -> int:
            return len(text)

        def flush(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

    def command(prog_name: str) -> None:
        sys.stdout.write("buffered, never flushed by the command\n")
        raise SystemExit(0)

    monkeypatch.setattr(entry, "main", command)
    monkeypatch.setattr(sys, "stdout", Closed())
    with pytest.raises(SystemExit) as exited:
        entry.run()
    assert exited.value.code == 0 and quick_exits == []


def test_a_message_as_the_exit_code_gets_the_ordinary_exit(
    monkeypatch: pytest.MonkeyPatch, quick_exits: list[int]
) -> None:
    def command(prog_name: str) -> None:
        raise SystemExit("a message Python prints, exit status 1")

    monkeypatch.setattr(entry, "main", command)
    with pytest.raises(SystemExit):
        entry.run()
    assert quick_exits == []


def _undated(report: bytes) -> bytes:
    """A report's settings table gives the minute it was made: two runs may straddle one."""
    return re.sub(rb"\| date \| [^|]* \|", b"| date | (masked) |", report)


def _both(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess[bytes], subprocess.CompletedProcess[bytes]]:
    env = {**os.environ, "NO_COLOR": "1"}
    quick = subprocess.run([str(SCRIPT), *args], cwd=cwd, env=env, capture_output=True, timeout=300, check=False)
    ordinary = subprocess.run(
        [sys.executable, "-c", ORDINARY, *args], cwd=cwd, env=env, capture_output=True, timeout=300, check=False
    )
    return quick, ordinary


@pytest.mark.parametrize(
    ("args", "least"),
    [
        (["check", "--no-cache", "."], 65536),
        (["check", "--no-cache", "--output-format", "json", "."], 65536),
        (["check", "--no-cache", "--jobs", "2", "--statistics", "."], 1),
        (["check", "--no-cache", "--diff", "."], 1),
        (["report", "--no-cache", "--format", "md", "."], 1),
        (["check", "--no-cache", "missing.py"], 0),
    ],
)
def test_the_console_script_prints_and_exits_as_the_ordinary_exit_did(
    tmp_path: Path, args: list[str], least: int
) -> None:
    """Through the installed script, in a subprocess: every byte of a long output (past any pipe
    buffer: 300 files of findings) and the exit code, against Python's ordinary exit."""
    for i in range(300):
        (tmp_path / f"train_{i}.py").write_text(XLA)
    quick, ordinary = _both(args, tmp_path)
    assert quick.returncode == ordinary.returncode
    assert _undated(quick.stdout) == _undated(ordinary.stdout) and len(quick.stdout) >= least
    assert quick.stderr == ordinary.stderr


def test_written_files_are_complete(tmp_path: Path) -> None:
    """`--output` files and the cache are written before the quick exit, not left to it."""
    for i in range(50):
        (tmp_path / f"train_{i}.py").write_text(XLA)
    env = {**os.environ, "NO_COLOR": "1"}
    args = ["check", "--output-format", "json", "--output-file", "out.json", "."]
    subprocess.run([str(SCRIPT), *args], cwd=tmp_path, env=env, timeout=300, check=False)
    quick = (tmp_path / "out.json").read_bytes()
    cached = [p for p in (tmp_path / ".neuron_migrate_cache").rglob("*") if p.is_file() and p.stat().st_size]
    subprocess.run(
        [sys.executable, "-c", ORDINARY, *args, "--no-cache"], cwd=tmp_path, env=env, timeout=300, check=False
    )
    assert quick == (tmp_path / "out.json").read_bytes() and quick.count(b'"code"') >= 100
    assert cached
