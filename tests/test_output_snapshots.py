"""Snapshot tests: every renderer on the same hand-built results (`output_sample.py`).

Regenerate with `pytest tests/test_output_snapshots.py --update-fixtures` and review the diff.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import expect
from output_sample import sample_results, sample_rules

from neuron_migrate.output import RenderOptions, render, show_fixes, statistics
from neuron_migrate.output import github as github_output
from neuron_migrate.output_formats import NAMES as FORMATS
from neuron_migrate.output_formats import output_format

SNAPSHOTS = Path(__file__).parent / "snapshots"
OPTIONS = RenderOptions(root="/repo", cwd="/repo", rules=sample_rules())


@pytest.mark.parametrize("fmt", FORMATS)
def test_format_snapshot(fmt: str, update_fixtures: bool) -> None:
    expect(SNAPSHOTS / f"{fmt}{output_format(fmt).suffix}", render(fmt, sample_results(), OPTIONS), update_fixtures)


def test_text_unsafe_fixes_snapshot(update_fixtures: bool) -> None:
    options = RenderOptions(unsafe_fixes=True, quiet=True)
    expect(SNAPSHOTS / "text-unsafe-quiet.txt", render("text", sample_results(), options), update_fixtures)


def test_statistics_snapshot(update_fixtures: bool) -> None:
    expect(SNAPSHOTS / "statistics.txt", statistics.render(sample_results()), update_fixtures)
    expect(SNAPSHOTS / "statistics.json", statistics.render(sample_results(), as_json=True), update_fixtures)


def test_show_fixes_snapshot(update_fixtures: bool) -> None:
    expect(SNAPSHOTS / "show-fixes.txt", show_fixes.render(sample_results()), update_fixtures)


def test_github_summary_snapshot(update_fixtures: bool) -> None:
    expect(SNAPSHOTS / "github-summary.md", github_output.summary(sample_results(), "/repo", "/repo"), update_fixtures)


def test_no_results_render() -> None:
    """No files at all: every format still renders a valid, empty report."""
    for fmt in FORMATS:
        out = render(fmt, [], RenderOptions())
        assert isinstance(out, str)
    assert render("text", [], RenderOptions()) == "All checks passed!\n"
    assert render("json", [], RenderOptions()) == "[]\n"
    assert render("json-lines", [], RenderOptions()) == ""
    assert render("github", [], RenderOptions()) == ""


def test_unknown_format_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown output format 'yaml'"):
        render("yaml", [], RenderOptions())
