"""Shared test options and helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SHARED = ROOT.parent / "shared"
collect_ignore = ["bench"]  # the benchmark is run by hand: python3 tests/bench/bench.py


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-fixtures",
        action="store_true",
        default=False,
        help="Write the expected .findings and .fixed.py files from the current behaviour.",
    )


@pytest.fixture
def update_fixtures(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-fixtures"))


def expect(path: Path, actual: str | None, update: bool) -> None:
    """Compare `actual` with the file at `path`; None means the file must not exist."""
    if update:
        if actual is None:
            path.unlink(missing_ok=True)
        else:
            path.write_bytes(actual.encode("utf-8"))
        return
    if actual is None:
        assert not path.exists(), f"{path.name} should not exist: the case changes nothing"
        return
    assert path.exists(), f"missing {path.name}; run pytest --update-fixtures and review it"
    assert path.read_bytes().decode("utf-8") == actual
