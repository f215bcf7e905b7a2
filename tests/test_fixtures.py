"""Every fixture under fixtures/NMxxx/ and fixtures/_multi/ is a test case.

`case.py` is checked with only its own rule selected (all rules for `_multi`); the findings
must equal `case.findings`, and fixing with unsafe fixes enabled must give `case.fixed.py`
(absent when nothing changes). The fixed text must compile and be stable under a second fix.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import FIXTURES, expect

from neuron_migrate.analysis.source import decode, encode
from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.model import FileResult
from neuron_migrate.settings import Settings

CASES = sorted(
    p for p in [*FIXTURES.glob("NM*/*.py"), *FIXTURES.glob("_multi/*.py")] if not p.name.endswith(".fixed.py")
)


def _settings(case: Path, fix: bool) -> Settings:
    """Only the case's own rule; `accel_*` / `ok_accel_*` cases run with `--target accelerator`."""
    select = ("NM",) if case.parent.name == "_multi" else (case.parent.name,)
    target = "accelerator" if case.stem.startswith(("accel_", "ok_accel_")) else "neuron"
    return Settings(select=select, fix=fix, unsafe_fixes=fix, target=target)


def render_findings(result: FileResult) -> str:
    lines = []
    for f in result.findings:
        mark = f" [{f.fix.applicability.value}]" if f.fix else ""
        lines.append(f"{f.start.line}:{f.start.column} {f.code}{mark} {f.message}")
    return "".join(line + "\n" for line in lines)


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_fixture(case: Path, update_fixtures: bool) -> None:
    source, how = decode(case.read_bytes())  # keeps BOMs, coding cookies and CRLF as they are
    checked = check_source(source, case.name, _settings(case, fix=False))
    expect(case.with_suffix(".findings"), render_findings(checked), update_fixtures)
    fixed = check_source(source, case.name, _settings(case, fix=True))
    fixed_bytes = encode(fixed.fixed_source, how) if fixed.fixed_source is not None else None
    expect(case.with_name(case.stem + ".fixed.py"), fixed_bytes, update_fixtures)
    if case.stem.startswith("ok_"):
        assert not checked.findings, "an ok_ case must not produce findings"
    if fixed.fixed_source is not None:
        ast.parse(fixed.fixed_source)
        again = check_source(fixed.fixed_source, case.name, _settings(case, fix=True))
        assert again.fixed_source is None, "a second --fix must change nothing"
