"""Run a user's script in smoke child processes and collect one SmokeReport. No torch here.

Each rank is a `python -m neuron_migrate.smoke.child.bootstrap` process in its own session, with
the torchrun environment. The runner enforces the time limit from outside (the child also
stops itself at `timeout`), kills every process group it started, and never leaves one behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import neuron_migrate
from neuron_migrate.smoke.assemble import (
    Launch,
    RankOutcome,
    ReportContext,
    build_report,
    relativize,
)
from neuron_migrate.smoke.causes import likely_cause
from neuron_migrate.smoke.containment import TOKEN_VARIABLE, end_all, new_token, signals_end_the_run
from neuron_migrate.smoke.protocol import ChildConfig, rank_report_name
from neuron_migrate.smoke.rank_parity import ParityRequest
from neuron_migrate.smoke.report import EMULATED, ERROR, NEURON, Failure, SmokeReport

INSTALL_HINT = "`smoke` needs torch, which is not installed; install torch with `pip install 'neuron-migrate[smoke]'` (or `pip install torch`)"
PEER_GRACE_S = 10.0  # after one rank fails, before its peers (maybe stuck in a collective) are killed
PROBE_TIMEOUT_S = 120.0
LOG_TAIL_CHARS = 4000
MAX_REPORT_BYTES = 64 * 2**20  # a rank's report holds counts and a few sites; far beyond is not one

_PROBE = (
    "import importlib.util, sys\n"
    "if importlib.util.find_spec('torch_neuronx') is None: sys.exit(3)\n"
    "import torch, torch_neuronx\n"
    "print(torch.neuron.device_count())\n"
)


class SmokeUnavailable(RuntimeError):
    """PyTorch is not installed, so nothing can be run."""


@dataclass(frozen=True)
class SmokeOptions:
    """How to run the smoke test (the CLI flags)."""

    device: str = "auto"  # auto | neuron | emulate
    steps: int = 2
    timeout_s: float = 300.0
    nproc: int = 1
    compare_cpu: bool = False
    target_version: str = "2.14"
    seed: int = 0
    base_dir: Path | None = None  # report paths under this folder are made relative
    env: Mapping[str, str] | None = None  # the children's environment; None inherits ours
    python: str | None = None  # interpreter for the children; None is this one
    kill_grace_s: float = 10.0  # after the children's own time limit, before they are killed
    parity: ParityRequest | None = None  # `--parity`: also run 1 rank and compare (nproc > 1)


def torch_available() -> bool:
    """True when PyTorch can be imported (checked without importing it)."""
    return find_spec("torch") is not None


def run_smoke(script: Path, args: Sequence[str], options: SmokeOptions) -> SmokeReport:
    """Run `script` with `args` under the smoke harness and report what happened."""
    if not torch_available():
        raise SmokeUnavailable(INSTALL_HINT)
    script = Path(script).resolve()
    env = _child_env(options, new_token())
    with signals_end_the_run():
        device, problem = resolve_device(options, env)
        ctx = ReportContext(
            script, device or "none", options.target_version, options.nproc, options.timeout_s,
            options.base_dir.resolve() if options.base_dir else None,
        )  # fmt: skip
        if device is None:
            return _error(
                ctx, "NoDevice", problem, "Install torch-neuronx on a Trn2/Trn3 host, or use `--device emulate`"
            )
        with tempfile.TemporaryDirectory(prefix="neuron-migrate-smoke-") as tmp:
            main = _launch(script, args, options, env, device, Path(tmp, "main"), reference=False)
            finished = all(r.exit_code == 0 for r in main.ranks)
            reference = single = None
            if options.compare_cpu and finished:
                reference = _launch(script, args, options, env, EMULATED, Path(tmp, "ref"), reference=True)
            if options.parity is not None and finished:
                alone = replace(options, nproc=1)
                single = _launch(script, args, alone, env, device, Path(tmp, "single"), reference=False)
    try:
        return build_report(ctx, main, reference, single, options.parity)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:  # a forged or torn report
        return _error(ctx, "BadReport", f"a rank's report is malformed ({type(exc).__name__}: {exc})")


def resolve_device(options: SmokeOptions, env: Mapping[str, str]) -> tuple[str | None, str]:
    """("neuron" | "emulated", "") or (None, why no device can be used)."""
    if options.device == "emulate":
        return EMULATED, ""
    count = _probe_neuron(options, env)
    if count > 0:
        return NEURON, ""
    if options.device == "neuron":
        return (
            None,
            "`--device neuron` needs torch_neuronx and at least one `neuron` device",
        )
    return EMULATED, ""


def _probe_neuron(options: SmokeOptions, env: Mapping[str, str]) -> int:
    """How many `neuron` devices torch_neuronx reports (0 when it is missing or fails)."""
    command = [options.python or sys.executable, "-c", _PROBE]
    try:
        done = subprocess.run(
            command,
            env=dict(env),
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return 0
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines or not lines[-1].strip().isdigit():
        return 0
    return int(lines[-1])


def _error(ctx: ReportContext, kind: str, problem: str, cause: str = "") -> SmokeReport:
    """A report of a run smoke itself could not carry out or read."""
    failure = Failure(kind, problem, "", cause or likely_cause(kind, problem))
    report = SmokeReport(
        script=str(ctx.script), status=ERROR, device=ctx.device, target_version=ctx.target_version,
        nproc=ctx.nproc, steps=0, forwards=0, backwards=0, stop_reason="", wall_time_s=0.0,
        failure=failure,
    )  # fmt: skip
    return relativize(report, ctx.base_dir)


def _child_env(options: SmokeOptions, token: str) -> dict[str, str]:
    env = dict(os.environ if options.env is None else options.env)
    env[TOKEN_VARIABLE] = token  # every process of the run inherits it: see `containment`
    root = Path(neuron_migrate.__file__).resolve().parent.parent
    if not {"site-packages", "dist-packages"} & set(root.parts):
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH", "")) if p)
    env["PYTHONHASHSEED"] = str(options.seed)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _launch(
    script: Path,
    args: Sequence[str],
    options: SmokeOptions,
    env: Mapping[str, str],
    device: str,
    workdir: Path,
    reference: bool,
) -> Launch:
    workdir.mkdir(parents=True)
    config = ChildConfig(
        script=str(script), args=tuple(args), device="neuron" if device == NEURON else "emulate",
        steps=options.steps, timeout_s=options.timeout_s, report_dir=str(workdir),
        reference=reference, seed=options.seed, device_count=max(1, options.nproc),
        user_roots=(str(options.base_dir),) if options.base_dir else (),
        same_seed=options.parity is not None, parity_value=options.parity.value if options.parity else "",
    )  # fmt: skip
    config_path = workdir / "config.json"
    config_path.write_text(config.to_json())
    child_env = dict(env)
    if config.device == "emulate":
        # Keep an installed torch_neuronx from claiming the PrivateUse1 backend first.
        child_env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    command = [
        options.python or sys.executable,
        "-m",
        "neuron_migrate.smoke.child.bootstrap",
        str(config_path),
    ]
    return _run_ranks(command, child_env, options, workdir)


def _rank_env(env: Mapping[str, str], rank: int, nproc: int, port: int) -> dict[str, str]:
    return {
        **env,
        "RANK": str(rank),
        "LOCAL_RANK": str(rank),
        "WORLD_SIZE": str(nproc),
        "LOCAL_WORLD_SIZE": str(nproc),
        "GROUP_RANK": "0",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
    }


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_ranks(command: list[str], env: Mapping[str, str], options: SmokeOptions, workdir: Path) -> Launch:
    started = time.monotonic()
    port = free_port()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for rank in range(options.nproc):
            with open(workdir / f"rank{rank}.log", "wb") as log:
                procs.append(
                    subprocess.Popen(
                        command,
                        env=_rank_env(env, rank, options.nproc, port),
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                        start_new_session=True,
                    )
                )
        killed = _wait(procs, started + options.timeout_s + options.kill_grace_s)
    finally:
        end_all([proc.pid for proc in procs], env[TOKEN_VARIABLE])
        for proc in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
    ranks = tuple(_outcome(rank, proc, workdir) for rank, proc in enumerate(procs))
    return Launch(ranks, killed, time.monotonic() - started)


def _wait(procs: Sequence[subprocess.Popen[bytes]], deadline: float) -> bool:
    """Wait for every rank; True when the deadline passed and ranks had to be killed."""
    while any(p.poll() is None for p in procs):
        now = time.monotonic()
        if now >= deadline:
            return True
        if any(p.returncode not in (None, 0) for p in procs):
            deadline = min(deadline, now + PEER_GRACE_S)
        time.sleep(0.05)
    return False


def _outcome(rank: int, proc: subprocess.Popen[bytes], workdir: Path) -> RankOutcome:
    data, problem = _read_report(workdir / rank_report_name(rank))
    return RankOutcome(rank, proc.returncode, data, log_tail(workdir / f"rank{rank}.log"), problem)


def _read_report(path: Path) -> tuple[dict[str, Any] | None, str]:
    """A rank's JSON report, or None and why it cannot be read ("" when there is none)."""
    try:
        with open(path, "rb") as file:
            raw = file.read(MAX_REPORT_BYTES + 1)
    except FileNotFoundError:
        return None, ""
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"
    if len(raw) > MAX_REPORT_BYTES:
        return None, f"is over {MAX_REPORT_BYTES // 2**20} MiB"
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"is not valid JSON ({exc})"
    if not isinstance(data, dict):
        return None, f"is a JSON {type(data).__name__}, not an object"
    return data, ""


def log_tail(path: Path) -> str:
    """The last LOG_TAIL_CHARS characters of a rank's log, reading only the end of the file."""
    try:
        with open(path, "rb") as file:
            file.seek(0, os.SEEK_END)
            file.seek(max(0, file.tell() - 4 * LOG_TAIL_CHARS))  # UTF-8: at most 4 bytes a character
            tail = file.read()
    except OSError:
        return ""
    return tail.decode("utf-8", "replace")[-LOG_TAIL_CHARS:]
