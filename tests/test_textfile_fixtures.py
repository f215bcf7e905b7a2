"""Fixtures for files that are not Python modules: fixtures/NMxxx/<case>/<file>.

The file keeps its real name (`requirements.txt`, `pyproject.toml`, `setup.cfg`, `setup.py`,
`*.sh`) because the name decides how it is read. It is checked with only its rule selected;
the findings must equal `<file>.findings`, and fixing with unsafe fixes on must give
`<file>.fixed` (absent when nothing changes). `ok_*` cases must produce no findings.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES, expect
from test_fixtures import render_findings

from neuron_migrate.engine.formats.textfiles import file_kind
from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.settings import Settings

EXPECTED = (".findings", ".fixed")
CASES = sorted(p for p in FIXTURES.glob("NM*/*/*") if p.is_file() and not p.name.endswith(EXPECTED))


def _settings(case: Path, fix: bool) -> Settings:
    return Settings(select=(case.parent.parent.name,), fix=fix, unsafe_fixes=fix)


def test_cases_exist() -> None:
    assert len(CASES) >= 20
    assert all(file_kind(c.name) is not None for c in CASES), "every case must be a packaging file or shell script"


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}/{p.name}")
def test_text_fixture(case: Path, update_fixtures: bool) -> None:
    source = case.read_bytes().decode("utf-8")
    checked = check_source(source, case.name, _settings(case, fix=False))
    expect(case.with_name(case.name + ".findings"), render_findings(checked), update_fixtures)
    fixed = check_source(source, case.name, _settings(case, fix=True))
    expect(case.with_name(case.name + ".fixed"), fixed.fixed_source, update_fixtures)
    if case.parent.name.startswith("ok_"):
        assert not checked.findings, "an ok_ case must not produce findings"
    else:
        assert checked.findings, "a case that is not ok_ must produce findings"
    if fixed.fixed_source is not None:
        again = check_source(fixed.fixed_source, case.name, _settings(case, fix=True))
        assert again.fixed_source is None, "a second --fix must change nothing"
        assert len(fixed.findings) + len(fixed.fixed) == len(checked.findings)
