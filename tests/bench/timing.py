"""Run one benchmarked command as a child: wall time, CPU time and peak RSS (from `wait4`).

Shared by `bench.py` and `smoke_bench.py`, which each turn the result into their own `Run`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Measured:
    """What one run of a command took."""

    wall_s: float | None  # None: stopped at the timeout
    cpu_s: float | None = None  # user + system, children included
    peak_rss_mb: float | None = None  # of the largest process
    exit_code: int | None = None
    error_line: str = ""  # the last line of its stderr, cut to 200 characters


def run_measured(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> Measured:
    """Run `argv` in `cwd` once, stdout discarded; kill its process group after `timeout` s."""
    start = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=sink, stderr=subprocess.PIPE, start_new_session=True)
    deadline = start + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            wall = time.perf_counter() - start
            break
        if time.perf_counter() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            os.wait4(proc.pid, 0)
            return Measured(None)
        time.sleep(0.005)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    last = err.strip().splitlines()[-1][:200] if err.strip() else ""
    return Measured(
        wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), last
    )
