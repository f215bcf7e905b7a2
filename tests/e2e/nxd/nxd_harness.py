"""Run the NxD e2e programs' native forms on the CPU with gloo, on 1 and on N ranks, and read their losses.

Each program in `programs/` is an NxD training script written from scratch after a public
pattern (`<name>.py`), with the native PyTorch program an expert would write for it
(`<name>.native.py`): the codemod's target and its test oracle. Every program prints one line
`loss <step> <value>` per step on global rank 0, the loss of the whole global batch, so a run on
1 rank and a run on N ranks print the same numbers when the parallel program is right.

The native programs name the `neuron` device and backend. To run them here, as AWS's
distributed tutorial does ("run the same distributed job on CPU with Gloo, then on Neuron"),
`on_cpu` puts `gloo` in place of the `neuron` backend and `cpu` in place of the `neuron` device;
nothing else of the program changes.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAMS_DIR = HERE / "programs"
_LOSS = re.compile(r"^loss (\d+) (\S+)$", re.MULTILINE)
# Two ranks run the same model to within float32 rounding of the collectives' order of additions.
TOLERANCE = 1e-5


@dataclass(frozen=True)
class Run:
    """One torchrun of a program: its exit status, output and the losses rank 0 printed."""

    returncode: int
    output: str
    losses: tuple[float, ...]


def on_cpu(text: str) -> str:
    """The program with the `neuron` process-group backend as `gloo` and the `neuron` device as `cpu`."""
    text = re.sub(r"init_process_group\((['\"])neuron\1", r'init_process_group("gloo"', text)
    return re.sub(r"(['\"])neuron\1", r'"cpu"', text)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def torchrun(script: Path, nproc: int, timeout: float = 300) -> Run:
    """`torchrun --nproc-per-node nproc script` on the CPU (one thread per rank)."""
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        f"--nproc-per-node={nproc}",
        "--master-addr=127.0.0.1",
        f"--master-port={_free_port()}",
        str(script),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, cwd=script.parent, env=env, check=False
    )
    output = done.stdout + done.stderr
    losses = tuple(float(value) for _, value in _LOSS.findall(done.stdout))
    return Run(done.returncode, output, losses)


# gloo's threads now and then abort a rank as the interpreter exits, after the program has run
# (more often on a loaded machine); such a run is run once more, and that run must pass whole.
_EXIT_ABORT = "terminate called without an active exception"


def run_on_cpu(text: str, folder: Path, nproc: int, name: str = "program.py") -> Run:
    """Write `text` (a native program) into `folder` as it runs on the CPU, and torchrun it."""
    script = folder / name
    script.write_text(on_cpu(text), encoding="utf-8")
    run = torchrun(script, nproc)
    if run.returncode != 0 and _EXIT_ABORT in run.output:
        run = torchrun(script, nproc)
    return run


def agree(one: Run, many: Run, tolerance: float = TOLERANCE) -> bool:
    """Whether two runs trained the same model: the same number of steps and losses within `tolerance`."""
    return len(one.losses) == len(many.losses) > 0 and all(
        abs(a - b) <= tolerance * max(1.0, abs(a)) for a, b in zip(one.losses, many.losses, strict=True)
    )
