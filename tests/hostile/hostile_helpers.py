"""Shared helpers of the hostile-input tests: the installed console script in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).with_name("neuron-migrate")
XLA = "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\n"
FIXED_MARK = 'torch.device("neuron")'


def cli(
    args: list[str],
    cwd: Path,
    timeout: float = 120,
    stdin: bytes | None = None,
    env: dict[str, str] | None = None,
    limit_as: int | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """The installed `neuron-migrate` in a subprocess (bytes out), optionally under RLIMIT_AS."""
    environ = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "NO_COLOR": "1", **(env or {})}

    def limit() -> None:
        if limit_as is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))

    return subprocess.run(
        [str(SCRIPT), *args],
        cwd=cwd,
        capture_output=True,
        input=stdin if stdin is not None else b"",
        timeout=timeout,
        env=environ,
        check=False,
        preexec_fn=limit if limit_as is not None else None,
    )


def out(done: subprocess.CompletedProcess[bytes]) -> str:
    return done.stdout.decode("utf-8", "backslashreplace") + done.stderr.decode("utf-8", "backslashreplace")


_MEASURE = """
import json, resource, subprocess, sys, time
start = time.monotonic()
done = subprocess.run(sys.argv[1:], capture_output=True)
elapsed = time.monotonic() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"seconds": elapsed, "peak": peak, "rc": done.returncode,
                  "stdout": done.stdout.decode("utf-8", "replace"), "stderr": done.stderr.decode("utf-8", "replace")}))
"""


def measured(args: list[str], cwd: Path, timeout: float = 600) -> dict:
    """Wall seconds, peak RSS in bytes, exit code and output of one CLI run in a fresh process
    (the wrapper's only child, so RUSAGE_CHILDREN's high-water mark is that run's)."""
    import json

    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(SCRIPT), *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def no_stray(folder: Path) -> list[Path]:
    """Temporary files the tool left behind."""
    return sorted(p for p in folder.rglob("*") if ".neuron-migrate-" in p.name)


__all__ = ["FIXED_MARK", "ROOT", "SCRIPT", "XLA", "cli", "measured", "no_stray", "os", "out"]
