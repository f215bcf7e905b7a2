"""The native programs the NxD codemod aims at run on 1 and 2 ranks and train the same model.

Each `programs/<name>.native.py` is written by hand, as an expert would port `<name>.py` (DeviceMesh,
DTensor plans, `loss_parallel`, `SequenceParallel(sequence_dim=0)`, `ZeroRedundancyOptimizer`, DCP).
Run with torchrun on the CPU with gloo, the 2-rank losses must equal the 1-rank losses within
`TOLERANCE` (relative, 1e-5: float32 rounding of the collectives' additions). The control
`fused_qkv.naive.py`, a fused projection with a plain `ColwiseParallel`, runs without error and
must NOT agree: that is the silent error the fused-projection rule (NM322) guards against.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from nxd_harness import PROGRAMS_DIR, Run, agree, run_on_cpu

pytest.importorskip("torch")

NATIVE = sorted(p.name.removesuffix(".native.py") for p in PROGRAMS_DIR.glob("*.native.py"))


def _runs(text: str, tmp_path: Path) -> tuple[Run, Run]:
    one_dir, two_dir = tmp_path / "one", tmp_path / "two"
    one_dir.mkdir()
    two_dir.mkdir()
    return run_on_cpu(text, one_dir, 1), run_on_cpu(text, two_dir, 2)


def test_every_nxd_program_has_its_native_form() -> None:
    programs = sorted(p.stem for p in PROGRAMS_DIR.glob("*.py") if "." not in p.stem)
    assert programs == NATIVE
    assert {"dp_allreduce", "tp_mlp", "vocab_parallel_lm", "sequence_parallel", "zero1"} <= set(NATIVE)
    assert {"checkpoint_roundtrip", "fused_qkv"} <= set(NATIVE)


@pytest.mark.slow
@pytest.mark.parametrize("name", NATIVE)
def test_native_program_trains_the_same_model_on_one_and_two_ranks(name: str, tmp_path: Path) -> None:
    one, two = _runs((PROGRAMS_DIR / f"{name}.native.py").read_text(encoding="utf-8"), tmp_path)
    assert one.returncode == 0, one.output[-3000:]
    assert two.returncode == 0, two.output[-3000:]
    assert len(one.losses) >= 4, one.output[-2000:]
    assert one.losses[-1] < one.losses[0], "nothing was trained"
    assert agree(one, two), (one.losses, two.losses)


@pytest.mark.slow
def test_a_fused_projection_with_a_plain_column_plan_silently_trains_another_model(tmp_path: Path) -> None:
    one, two = _runs((PROGRAMS_DIR / "fused_qkv.naive.py").read_text(encoding="utf-8"), tmp_path)
    assert one.returncode == 0 and two.returncode == 0, two.output[-3000:]  # no error at all
    assert not agree(one, two), (one.losses, two.losses)
    assert max(abs(a - b) for a, b in zip(one.losses, two.losses, strict=True)) > 1e-3
