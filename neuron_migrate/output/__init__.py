"""Renderers: one module per output format, each a pure `render(results, options) -> str`.

`render(fmt, results, options)` dispatches to them through the table of formats
(`neuron_migrate/output_formats.py`); the CLI gathers what they need (the
repository root, the catalogue) into `RenderOptions`, so no renderer reads files or the
environment. What renderers share lives in `output/base.py`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence

from neuron_migrate.model import FileResult
from neuron_migrate.output.base import (
    PLAIN,
    TOOL_NAME,
    TOOL_URL,
    RenderOptions,
    all_findings,
    all_fixed,
    applicable,
    byte_column,
    line_hashes,
    line_of,
    located_message,
    repo_path,
    sources,
)
from neuron_migrate.output.escape import escaped
from neuron_migrate.output_formats import NAMES, output_format

__all__ = [
    "PLAIN",
    "TOOL_NAME",
    "TOOL_URL",
    "RenderOptions",
    "all_findings",
    "all_fixed",
    "applicable",
    "byte_column",
    "line_hashes",
    "line_of",
    "located_message",
    "render",
    "repo_path",
    "sources",
]


def render(fmt: str, results: Sequence[FileResult], options: RenderOptions) -> str:
    """The report for `results` in output format `fmt` (a name of `output_formats.OUTPUT_FORMATS`),
    drawn by the module its row names, from messages escaped as its row says."""
    try:
        row = output_format(fmt)
    except KeyError:
        raise ValueError(f"unknown output format {fmt!r}; choose one of {', '.join(NAMES)}") from None
    module = importlib.import_module(f"neuron_migrate.output.{row.module}")
    draw: Callable[[Sequence[FileResult], RenderOptions], str] = module.render
    return draw(escaped(results, row.escaping), options)
