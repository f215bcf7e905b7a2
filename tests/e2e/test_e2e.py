"""End to end: torch_xla programs written from scratch, migrated with `--fix --unsafe-fixes`, run.

For each program the migrated text is a reviewed snapshot (`programs/<name>.fixed.py`, updated
with `--update-fixtures`), only the documented manual findings stay, a second fix changes
nothing, and the result runs under `smoke` on 1 and on 2 emulated ranks. On 2 ranks the
distributed programs must show collectives and agreeing replicas (see `harness.problems`).
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest
from conftest import expect
from harness import PROGRAMS, Program, fixed_text, migrate, problems, run_fixed

from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.settings import Settings


def _pending(program: Program) -> list[pytest.MarkDecorator]:
    return [pytest.mark.xfail(strict=True, reason=program.pending)] if program.pending else []


FIXES = [pytest.param(p, id=p.name, marks=_pending(p)) for p in PROGRAMS]


@pytest.mark.parametrize("program", FIXES)
def test_fix_leaves_only_the_documented_manual_findings(program: Program, update_fixtures: bool) -> None:
    before = migrate(program, fix=False, unsafe=False)
    assert any(f.code != "NM601" for f in before.findings), "the program must exercise rules"
    text = fixed_text(program)
    expect(program.fixed_path, text, update_fixtures)
    ast.parse(text)
    after = migrate(program, fix=True, unsafe=True)
    assert Counter(f.code for f in after.findings) == Counter(program.left), [
        f"{f.start.line}:{f.start.column} {f.code} {f.message}" for f in after.findings
    ]
    again = check_source(text, program.path.name, Settings(select=("NM",), fix=True, unsafe_fixes=True))
    assert again.fixed_source is None, "a second --fix must change nothing"


def _run(program: Program, nproc: int) -> object:
    pending = program.pending or (program.pending_2rank if nproc > 1 else "")
    marks = [pytest.mark.xfail(reason=pending, strict=True)] if pending else []
    return pytest.param(program, nproc, id=f"{program.name}-{nproc}rank", marks=marks)


RUNS = [_run(p, n) for p in PROGRAMS if p.runs or p.ported for n in (1, 2)]


@pytest.mark.slow
@pytest.mark.parametrize(("program", "nproc"), RUNS)
def test_migrated_program_runs_under_smoke(program: Program, nproc: int, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    report = run_fixed(program, tmp_path, nproc)
    found = problems(program, report, nproc)
    assert found == [], (found, report.output_tail[-2000:])


@pytest.mark.slow
def test_the_migrated_fsdp_checkpoint_is_consolidated_from_every_rank(tmp_path: Path) -> None:
    """fsdp_lambda to its end on 2 ranks: each saves its checkpoint with `_shard_metadata`, rank 0
    writes `_consolidated.pth` holding the whole model (the shapes of the unsharded `Net`)."""
    pytest.importorskip("torch")
    import os

    import torch

    program = next(p for p in PROGRAMS if p.name == "fsdp_lambda")
    report = run_fixed(program, tmp_path, 2, steps=100, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert report.status == "ok" and report.steps == 4, (report.failure, report.output_tail[-2000:])
    [consolidated] = tmp_path.glob("fsdp-ckpt-*/_consolidated.pth")
    model = torch.load(consolidated, weights_only=True)["model"]
    shapes = {name: tuple(tensor.shape) for name, tensor in model.items()}
    assert shapes["embed.weight"] == (24, 6) and shapes["layers.2.inner.2.weight"] == (24, 96)
    assert len(shapes) == 2 + 3 * 4 + 2 and not any("_checkpoint_wrapped_module" in n for n in shapes)
