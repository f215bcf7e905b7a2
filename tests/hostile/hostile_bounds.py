"""The installed `neuron-migrate` under a CPU-time limit (and optionally an address-space limit),
with the CPU seconds and peak memory it took: a run that today's code cannot finish is ended
by RLIMIT_CPU and fails its test, whatever the load of the machine."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from hostile_helpers import SCRIPT

MiB = 2**20

# A wrapper whose only child is the CLI: RUSAGE_CHILDREN is that run's CPU time and peak RSS.
_WRAPPER = """
import json, resource, subprocess, sys
cpu, space = int(sys.argv[1]), int(sys.argv[2])
def limit():
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    if space:
        resource.setrlimit(resource.RLIMIT_AS, (space, space))
done = subprocess.run(sys.argv[3:], capture_output=True, preexec_fn=limit)
use = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"cpu": use.ru_utime + use.ru_stime, "peak": use.ru_maxrss * 1024, "rc": done.returncode,
                  "out": (done.stdout + done.stderr).decode("utf-8", "backslashreplace")}))
"""


@dataclass(frozen=True)
class Bounded:
    cpu: float  # seconds of CPU the run took
    peak: int  # bytes of peak resident memory
    rc: int  # exit code; -SIGXCPU or -SIGKILL when the CPU limit ended it
    out: str  # stdout and stderr


def bounded(args: list[str], cwd: Path, cpu: int, space: int = 0) -> Bounded:
    """Run the CLI in `cwd` with at most `cpu` seconds of CPU (and `space` bytes of address space)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _WRAPPER, str(cpu), str(space), str(SCRIPT), *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=cpu * 20 + 60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return Bounded(**json.loads(done.stdout))
