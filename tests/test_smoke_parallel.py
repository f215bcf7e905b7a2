"""Native parallel programs under `smoke --parity`, through the installed console script.

Each program in fixtures/_smoke/parallel/ (written from scratch: DeviceMesh, DTensor tensor and
sequence parallelism, `loss_parallel`, FSDP2, DCP) runs on 2 emulated ranks and on 1, and its
losses and last output must match step by step; a fused q|k|v projection under a naive
`ColwiseParallel` must fail with one verdict line and exit code 1.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # every case starts 3 smoke child processes, each importing torch

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "fixtures" / "_smoke" / "parallel"
SCRIPT = Path(sys.executable).with_name("neuron-migrate")


def smoke(tmp_path: Path, program: str, *flags: str) -> tuple[int, dict, str]:
    """Run `neuron-migrate smoke PROGRAM --device emulate FLAGS` on a copy; (exit code, JSON, text)."""
    shutil.copy(PROGRAMS / program, tmp_path / program)
    env = {**os.environ, "NO_COLOR": "1", "OMP_NUM_THREADS": "1"}
    command = [str(SCRIPT), "smoke", program, "--device", "emulate", *flags, "--output-format", "json"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False)
    return done.returncode, json.loads(done.stdout), done.stderr


@pytest.mark.parametrize(
    ("program", "flags", "collective"),
    [
        ("tp_mlp.py", (), "_c10d_functional::all_reduce"),
        ("tp_vocab_loss.py", (), "_c10d_functional::all_reduce"),
        ("tp_sequence.py", (), "_c10d_functional::reduce_scatter_tensor"),
        ("fsdp2_global_batch.py", ("--parity-ranks", "mean"), "c10d::_reduce_scatter_base_"),
        ("dcp_roundtrip.py", ("--steps", "10"), "_c10d_functional::all_reduce"),
    ],
)
def test_a_native_parallel_program_on_two_ranks_gives_the_one_rank_numbers(
    tmp_path: Path, program: str, flags: tuple[str, ...], collective: str
) -> None:
    code, data, err = smoke(tmp_path, program, "--parity", *flags)
    assert code == 0, (data["problems"], data["failure"], err)
    parity = data["rank_parity"]
    assert (parity["status"], parity["nproc"], parity["precision"]) == ("ok", 2, "fp32")
    losses = [s for s in parity["steps"] if s["label"].startswith("loss")]
    assert len(losses) >= 2 and all(s["ok"] for s in parity["steps"])
    assert {s["site"]["path"] for s in losses} == {program}
    if parity["ranks"] == "each":
        assert parity["steps"][-1]["label"] == "output"
    ops = {c["op"]: c["count"] for c in data["collectives"]}
    assert ops.get(collective, 0) >= 2, ops


def test_the_fused_qkv_projection_under_a_naive_plan_fails_parity(tmp_path: Path) -> None:
    code, data, _ = smoke(tmp_path, "tp_fused_qkv_wrong.py", "--parity")
    assert code == 1
    parity = data["rank_parity"]
    assert parity["status"] == "mismatch" and not parity["steps"][0]["ok"]
    assert parity["steps"][0]["max_abs_diff"] > 1e-3
    assert data["problems"][0].startswith("2 ranks disagree with 1 rank: loss 1 differs by ")
    # Without --parity nothing tells: the run trains, the ranks agree with each other.
    code, data, _ = smoke(tmp_path, "tp_fused_qkv_wrong.py", "--nproc", "2")
    assert (code, data["ok"], data["rank_parity"]) == (0, True, None)


def test_four_ranks_and_a_named_value(tmp_path: Path) -> None:
    code, data, err = smoke(tmp_path, "tp_mlp.py", "--parity", "--nproc", "4", "--parity-value", "loss")
    assert code == 0, (data["problems"], data["failure"], err)
    parity = data["rank_parity"]
    assert (parity["status"], parity["nproc"], parity["value"]) == ("ok", 4, "`loss` at each optimizer step")
    assert [s["label"] for s in parity["steps"]] == ["`loss` at step 1", "`loss` at step 2"]
