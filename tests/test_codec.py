"""The compact result encoding round-trips every result the fixtures produce."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from conftest import FIXTURES

from neuron_migrate.analysis.source import decode
from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.model import FileResult
from neuron_migrate.run import cache_codec as codec
from neuron_migrate.settings import Settings

CASES = sorted(p for p in FIXTURES.glob("*/*.py") if not p.name.endswith(".fixed.py"))


@pytest.mark.slow
@pytest.mark.parametrize("fix", [False, True])
def test_every_fixture_result_round_trips(fix: bool) -> None:
    settings = Settings(fix=fix, unsafe_fixes=fix)
    results = [check_source(decode(case.read_bytes())[0], case.name, settings) for case in CASES]
    assert sum(len(r.findings) + len(r.fixed) for r in results) > 50
    for result in results:
        again = codec.loads(codec.dumps(result))
        assert again == result
        assert [type(f.severity) for f in again.findings] == [type(f.severity) for f in result.findings]


def test_unknown_values_are_refused() -> None:
    with pytest.raises(TypeError):
        codec.encode(FileResult("a.py", source=Path("a.py")))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        codec.encode(dataclasses.replace(FileResult("a.py"), findings=[]))  # type: ignore[arg-type]
