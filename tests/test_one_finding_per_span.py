"""No two rules report the same span: with every rule enabled (both families, either target), each
place in the fixture corpus and the e2e programs gets at most one finding. Two rules meeting on
one span say one thing twice (and count it twice in `--statistics` and the report)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

from neuron_migrate.analysis.source import decode
from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.settings import Settings

PROGRAMS = ROOT / "tests" / "e2e" / "programs"
CASES = sorted(
    p
    for p in [*FIXTURES.rglob("*"), *PROGRAMS.rglob("*.py")]
    if p.is_file() and p.suffix != ".findings" and ".fixed" not in p.name and ".ported" not in p.name
)


def _shared_spans(case: Path, target: str) -> list[str]:
    text = decode(case.read_bytes())[0]
    result = check_source(text, case.name, Settings(families=("xla", "cuda"), target=target))
    codes: dict[tuple[object, ...], list[str]] = defaultdict(list)
    for finding in result.findings:
        codes[(finding.cell, finding.start, finding.end)].append(finding.code)
    return [f"{span[1]}: {' '.join(found)}" for span, found in codes.items() if len(found) > 1]


@pytest.mark.parametrize("target", ["neuron", "accelerator"])
def test_no_two_rules_report_the_same_span(target: str) -> None:
    shared = {case.relative_to(ROOT).as_posix(): found for case in CASES if (found := _shared_spans(case, target))}
    assert shared == {}


def test_the_corpus_is_read() -> None:
    """The test above means something only if it sees files of every kind, programs among them."""
    suffixes = {case.suffix for case in CASES}
    assert {".py", ".toml", ".txt", ".sh", ".cfg"} <= suffixes, suffixes
    assert sum(1 for case in CASES if PROGRAMS in case.parents) >= 10
    assert len(CASES) > 300
