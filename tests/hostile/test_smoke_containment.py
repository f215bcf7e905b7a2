"""Issue 40 item 5: `smoke` contains what it runs, through the installed console script.

SIGTERM or SIGHUP to smoke ends the user's script, a process it moved into its own session
(`setsid`) included, removes smoke's temporary folder and exits 128 + the signal; a normal end
leaves no such process either. A script printing 300 MB costs the runner bounded memory, and a
rank report that is not one is a clear error. Every run is bounded by RLIMIT_CPU; leftovers are
killed by pid at the end, whatever the outcome.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile_helpers import SCRIPT

pytestmark = pytest.mark.slow  # each test starts smoke child processes that import torch

pytest.importorskip("torch")

CPU_SECONDS = 300  # RLIMIT_CPU of smoke and of everything it starts (inherited)
MiB = 2**20

ESCAPE = """\
# Starts a process in its own session (setsid), records both pids, then trains.
import os, subprocess, sys, time
import torch

child = subprocess.Popen([sys.executable, "-c", "import time\\nwhile True: time.sleep(0.5)"], start_new_session=True)
with open(os.environ["PIDS_FILE"] + ".partial", "w") as out:
    out.write(f"{os.getpid()} {child.pid}\\n")
os.replace(os.environ["PIDS_FILE"] + ".partial", os.environ["PIDS_FILE"])
model = torch.nn.Linear(2, 1).to("neuron")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(int(sys.argv[1])):
    model(torch.ones(1, 2, device="neuron")).sum().backward()
    opt.step()
    time.sleep(float(sys.argv[2]))
"""


def limit_cpu() -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))


def start(folder: Path, *args: str) -> subprocess.Popen[bytes]:
    """`neuron-migrate smoke ARGS` in `folder`, with its own temporary folder and a CPU limit."""
    (folder / "tmp").mkdir()
    env = {
        "PATH": "/usr/bin:/bin", "HOME": str(folder), "NO_COLOR": "1", "OMP_NUM_THREADS": "1",
        "TMPDIR": str(folder / "tmp"), "PIDS_FILE": str(folder / "pids"),
    }  # fmt: skip
    return subprocess.Popen(
        [str(SCRIPT), "smoke", *args], cwd=folder, env=env, preexec_fn=limit_cpu,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def smoke_folders(folder: Path) -> list[Path]:
    """smoke's temporary folders under the run's TMPDIR (torch may add its own caches there)."""
    return sorted((folder / "tmp").glob("neuron-migrate-smoke-*"))


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie has ended: only its parent's wait is missing)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in "ZX"


def wait_for_pids(folder: Path, smoke: subprocess.Popen[bytes]) -> list[int]:
    """The script's pids once it wrote them; the smoke run's own --timeout bounds the wait."""
    pids = folder / "pids"
    while not pids.exists() and smoke.poll() is None:
        time.sleep(0.1)
    assert pids.exists(), smoke.communicate(timeout=60)
    return [int(p) for p in pids.read_text().split()]


def kill_leftovers(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def gone(pids: list[int]) -> bool:
    """Whether every pid has ended; SIGKILL is delivered at once but reaped a moment later."""
    for _ in range(100):
        if not any(map(alive, pids)):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_ends_the_script_its_setsid_child_and_the_temporary_folder(tmp_path: Path, signum: int) -> None:
    (tmp_path / "escape.py").write_text(ESCAPE)
    smoke = start(
        tmp_path, "escape.py", "--device", "emulate", "--timeout", "120", "--steps", "100000", "--", "100000", "0.2"
    )
    pids: list[int] = []
    try:
        pids = wait_for_pids(tmp_path, smoke)
        assert all(map(alive, pids))
        assert len(smoke_folders(tmp_path)) == 1
        smoke.send_signal(signum)
        out, err = smoke.communicate(timeout=120)
        assert smoke.returncode == 128 + signum, (out, err)
        assert err.decode().splitlines()[-1] == (
            f"neuron-migrate: smoke stopped by {signal.Signals(signum).name}; "
            "the script's processes were ended and smoke's temporary folder removed"
        )
        assert gone(pids), [p for p in pids if alive(p)]
        assert smoke_folders(tmp_path) == []
    finally:
        smoke.kill()
        kill_leftovers(pids)


def test_a_normal_end_leaves_no_process_of_the_script(tmp_path: Path) -> None:
    (tmp_path / "escape.py").write_text(ESCAPE)
    smoke = start(tmp_path, "escape.py", "--device", "emulate", "--timeout", "120", "--", "3", "0")
    pids: list[int] = []
    try:
        out, err = smoke.communicate(timeout=300)
        pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
        assert smoke.returncode == 0, (out.decode()[-3000:], err.decode()[-3000:])
        assert out.decode().startswith("smoke PASSED: escape.py")
        assert gone(pids), [p for p in pids if alive(p)]
        assert smoke_folders(tmp_path) == []
    finally:
        smoke.kill()
        kill_leftovers(pids)


LOUD = """\
import sys
import torch

chunk = b"x" * (2**20 - 1) + b"\\n"
for _ in range(300):
    sys.stdout.buffer.write(chunk)
sys.stdout.flush()
model = torch.nn.Linear(2, 1).to("neuron")
print(model(torch.ones(1, 2, device="neuron")).sum().item())
"""

# Runs the installed console script in this process and records this process's own peak RSS
# when it exits: VmHWM, the runner alone (not the smoke children it starts), counted from its
# exec (ru_maxrss would carry over the high-water mark of the forked pytest process).
PEAK = """\
import atexit, runpy, sys
out = sys.argv.pop(1)
del sys.argv[0]


def record():  # the console script leaves with os._exit after the exit handlers
    status = open("/proc/self/status").read()
    peak = next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))
    with open(out, "w") as file:
        file.write(str(int(peak) * 1024))


atexit.register(record)
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_300_mb_of_output_costs_the_runner_bounded_memory(tmp_path: Path) -> None:
    (tmp_path / "loud.py").write_text(LOUD)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NO_COLOR": "1", "OMP_NUM_THREADS": "1"}
    command = [
        sys.executable,
        "-c",
        PEAK,
        str(tmp_path / "peak"),
        str(SCRIPT),
        "smoke",
        "loud.py",
        "--device",
        "emulate",
    ]
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, preexec_fn=limit_cpu, timeout=600, check=False
    )
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    assert done.stdout.decode().startswith("smoke PASSED: loud.py")
    peak = int((tmp_path / "peak").read_text())
    assert peak < 100 * MiB, f"the runner peaked at {peak / MiB:.0f} MiB"


FORGER = """\
# Overwrites this rank's report with {what!r} and exits before smoke can write the real one.
import json, os
import torch

torch.nn.Linear(2, 1).to("neuron")
config = next(a for a in open("/proc/self/cmdline", "rb").read().split(b"\\0") if a.endswith(b"config.json"))
folder = json.loads(open(config).read())["report_dir"]
with open(os.path.join(folder, "rank0.json"), "w") as out:
    out.write({what!r})
os._exit(0)
"""


@pytest.mark.parametrize(
    ("what", "why"),
    [
        ("{not json", "it is not valid JSON (Expecting property name enclosed in double quotes"),
        ("[1, 2]", "it is a JSON list, not an object"),
        ('{"status": "ok", "ops": [{"count": "x"}]}', "a rank's report is malformed (KeyError: 'op')"),
    ],
)
def test_a_rank_report_that_is_not_one_is_a_clear_error(tmp_path: Path, what: str, why: str) -> None:
    (tmp_path / "forge.py").write_text(FORGER.format(what=what))
    smoke = start(tmp_path, "forge.py", "--device", "emulate", "--timeout", "120")
    out, err = smoke.communicate(timeout=300)
    assert smoke.returncode == 1, (out.decode()[-3000:], err.decode()[-3000:])
    verdict = out.decode().splitlines()[0]
    assert verdict.startswith("smoke FAILED: forge.py: smoke could not run the script: "), verdict
    assert why in verdict, verdict
    assert b"Traceback" not in err
    assert smoke_folders(tmp_path) == []
