"""Issue 40 item 4: SIGTERM and SIGHUP end the worker pool (`--jobs 2` with `check`, `--fix`
and `report`): no worker survives the parent, nothing is written once the parent is gone, no
file is torn and no temporary file is left, the output pipes close, and the exit code is
128 + the signal's number. A parent killed outright takes its workers with it (Linux).

Before, both workers lived on with parent 1, held the output pipes open and went on fixing
files; the parent died of the signal (exit status -15 in Python's terms)."""

from __future__ import annotations

import hashlib
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile_helpers import SCRIPT, no_stray

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc for the workers"),
]

FILES = 40
BODY = "import torch_xla.core.xla_model as xm\n" + "".join(
    f"def f{i}(t):\n    d = xm.xla_device()\n    return xm.mesh_reduce('x', t, sum)\n" for i in range(1500)
)


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent to reap it is not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: hashlib.sha256(p.read_bytes()).digest() for p in sorted(folder.glob("*.py"))}


def start(args: list[str], cwd: Path) -> tuple[subprocess.Popen[bytes], list[int]]:
    """The CLI with a CPU limit, once its two pool workers are running and have work in hand."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (120, 120))

    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [str(SCRIPT), *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=limit
    )
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while len(workers) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
        workers = children(proc.pid)
    assert len(workers) == 2, "the pool did not start"
    time.sleep(1.0)  # both are busy with files now
    return proc, workers


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
@pytest.mark.parametrize(
    "args",
    [["check", "--fix"], ["check"], ["report", "-o", "plan.html"]],
    ids=["fix", "check", "report"],
)
def test_an_ending_signal_ends_the_pool_and_the_run(tmp_path: Path, signum: int, args: list[str]) -> None:
    for i in range(FILES):
        (tmp_path / f"m{i}.py").write_text(BODY)
    proc, workers = start([*args, "--no-cache", "--jobs", "2", "."], tmp_path)
    try:
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)  # returns once nothing holds the pipes
        survivors = [pid for pid in workers if alive(pid)]
        assert survivors == [], "workers outlived the parent"
        assert proc.returncode == 128 + signum, (proc.returncode, err)
        assert err.decode().endswith(f"neuron-migrate: error: stopped by {signal.Signals(signum).name}\n")
        before = snapshot(tmp_path)
        time.sleep(2)
        assert snapshot(tmp_path) == before, "a file was written after the run ended"
        assert no_stray(tmp_path) == []
        fixed = {hashlib.sha256(BODY.encode()).digest()}
        if args[-1] == "--fix":  # each file is either untouched or fixed whole: as one full run fixes it
            (tmp_path / "one").mkdir()
            (tmp_path / "one" / "m.py").write_text(BODY)
            subprocess.run([str(SCRIPT), "check", "--no-cache", "--fix", "one"], cwd=tmp_path, check=False)
            fixed.add(hashlib.sha256((tmp_path / "one" / "m.py").read_bytes()).digest())
        assert set(before.values()) <= fixed
        assert not (tmp_path / "plan.html").exists()
    finally:
        for pid in [proc.pid, *workers]:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)  # the old code leaves them running


def test_workers_die_with_a_parent_killed_outright(tmp_path: Path) -> None:
    for i in range(FILES):
        (tmp_path / f"m{i}.py").write_text(BODY)
    proc, workers = start(["check", "--no-cache", "--jobs", "2", "."], tmp_path)
    try:
        proc.kill()
        proc.communicate(timeout=60)
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [pid for pid in workers if alive(pid)] == []
    finally:
        for pid in workers:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_sigterm_without_a_pool_unwinds_the_file_in_hand(tmp_path: Path) -> None:
    """With `--jobs 1` the main process fixes the files: it stops between two of them."""
    for i in range(FILES):
        (tmp_path / f"m{i}.py").write_text(BODY)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [str(SCRIPT), "check", "--no-cache", "--fix", "--jobs", "1", "."],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        time.sleep(3)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 128 + signal.SIGTERM, err
        assert b"stopped by SIGTERM" in err and b"Traceback" not in err
        assert no_stray(tmp_path) == []
    finally:
        if proc.poll() is None:
            proc.kill()
