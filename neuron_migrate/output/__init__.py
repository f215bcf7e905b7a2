"""Renderers: one module per output format, each a pure `render(results, ...) -> str`."""

from __future__ import annotations

from collections.abc import Sequence

from neuron_migrate.model import FileResult, Finding

# Every value `--output-format` and the `output-format` config key accept; the one list both use.
FORMATS = ("text", "full", "json", "json-lines", "sarif", "github", "gitlab", "junit", "rdjson")


def all_findings(results: Sequence[FileResult]) -> list[Finding]:
    """Every remaining finding, sorted by (path, notebook cell, line, column, code)."""
    return sorted((f for r in results for f in r.findings), key=lambda f: f.sort_key)


def all_fixed(results: Sequence[FileResult]) -> list[Finding]:
    return sorted((f for r in results for f in r.fixed), key=lambda f: f.sort_key)
