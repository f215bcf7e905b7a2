"""Migrated distributed fixtures run on the emulated `neuron` device, alone and on two ranks.

Each case in fixtures/_multi/ is migrated here (safe fixes, or with unsafe ones where the launch
changes), must be torch_xla-free and equal its `.fixed.py`, and then runs under the smoke
harness torchrun-style with 1 and 2 ranks. The ranks must see world size 2, run collectives,
and hold identical parameters after every step although each rank reads different data.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from conftest import FIXTURES

from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.settings import Settings

pytest.importorskip("torch")

PROBE = Path(__file__).with_name("dist_probe.py")
CASES = {  # case -> whether its migration needs --unsafe-fixes (NM309: the launch changes)
    "dist_rank_before_init": False,
    "dist_spawn_no_ddp": True,
    "dist_launch_flag_init": True,  # the only init_process_group is behind a flag that is off
    "dist_launch_flag_init_deeper": True,  # the same, in a function the launched one calls
    "dist_syncfree_found_inf": True,  # syncfree SGD's step(found_inf=): 3 steps run, the 4th is skipped
}
TWO_RANK_CASES = {
    **CASES,
    "dist_ddp_on_one_branch": False,
}  # DDP and the helper both average
STEPS = 3


def migrate(case: str, folder: Path, unsafe: bool) -> Path:
    source = (FIXTURES / "_multi" / f"{case}.py").read_text()
    fixed = check_source(source, f"{case}.py", Settings(fix=True, unsafe_fixes=unsafe)).fixed_source
    assert fixed is not None
    assert fixed == (FIXTURES / "_multi" / f"{case}.fixed.py").read_text()
    modules = [a.name for n in ast.walk(ast.parse(fixed)) if isinstance(n, ast.Import) for a in n.names]
    modules += [n.module or "" for n in ast.walk(ast.parse(fixed)) if isinstance(n, ast.ImportFrom)]
    assert not [m for m in modules if m.split(".")[0] == "torch_xla"]
    script = folder / f"{case}.py"
    script.write_text(fixed)
    return script


def run(script: Path, nproc: int, plain: bool = False) -> tuple[object, dict[str, list[dict]]]:
    from neuron_migrate.smoke import SmokeOptions, run_smoke

    out = script.parent / f"out-{nproc}{'-plain' if plain else ''}"
    out.mkdir()
    args = (
        str(out),
        *(["--plain"] if plain else []),
        str(script),
        str(script.parent / "model.pt"),
    )
    options = SmokeOptions(device="emulate", steps=100, timeout_s=120, nproc=nproc, base_dir=script.parent)
    report = run_smoke(PROBE, args, options)
    assert report.status == "ok", (report.failure, report.output_tail)
    ranks = {p.stem: json.loads(p.read_text())["steps"] for p in sorted(out.glob("*.json"))}
    return report, ranks


def allreduces(report: object) -> int:
    return sum(op.count for op in report.ops if op.op == "c10d::allreduce_")  # type: ignore[attr-defined]


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(TWO_RANK_CASES))
def test_two_ranks_train_one_model(case: str, tmp_path: Path) -> None:
    report, ranks = run(migrate(case, tmp_path, TWO_RANK_CASES[case]), nproc=2)
    assert sorted(ranks) == ["0", "1"]
    assert [len(steps) for steps in ranks.values()] == [STEPS, STEPS]
    assert all(step["world"] == 2 for steps in ranks.values() for step in steps)
    assert ranks["0"] == ranks["1"], "the ranks trained different models"
    assert ranks["0"][0]["params"] != ranks["0"][-1]["params"], "nothing was trained"
    assert allreduces(report) >= STEPS  # the gradients were averaged: collectives ran


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_one_rank_under_torchrun(case: str, tmp_path: Path) -> None:
    _, ranks = run(migrate(case, tmp_path, CASES[case]), nproc=1)
    assert [step["world"] for step in ranks["0"]] == [1] * STEPS


@pytest.mark.slow
def test_plain_python_runs_one_process_without_a_process_group(tmp_path: Path) -> None:
    report, ranks = run(migrate("dist_spawn_no_ddp", tmp_path, True), nproc=1, plain=True)
    assert [step["world"] for step in ranks["plain"]] == [None] * STEPS
    assert allreduces(report) == 0


@pytest.mark.slow
def test_the_check_catches_ranks_that_do_not_average(tmp_path: Path) -> None:
    """Control: without the averaging helper the same script trains two different models."""
    script = migrate("dist_spawn_no_ddp", tmp_path, True)
    script.write_text(script.read_text().replace("_optimizer_step(optimizer)\n", "optimizer.step()\n"))
    _, ranks = run(script, nproc=2)
    assert all(step["world"] == 2 for step in ranks["0"])
    assert ranks["0"] != ranks["1"]


@pytest.mark.slow
def test_without_the_guaranteed_process_group_the_flagged_launch_trains_apart(tmp_path: Path) -> None:
    """Control: the launch rewrite as it was (no process group when the flag is off) trains two models."""
    script = migrate("dist_launch_flag_init", tmp_path, True)
    guaranteed = (
        '    if "WORLD_SIZE" in os.environ and not dist.is_initialized():\n        dist.init_process_group("neuron")\n'
    )
    assert guaranteed in script.read_text()
    script.write_text(script.read_text().replace(guaranteed, ""))
    _, ranks = run(script, nproc=2)
    assert all(step["world"] is None for step in ranks["0"])
    assert ranks["0"] != ranks["1"]
