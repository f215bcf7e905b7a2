"""Renderers: one module per output format, each a pure `render(results, ...) -> str`.

`render(fmt, results, options)` dispatches to them; the CLI gathers what they need (the
repository root, the catalogue) into `RenderOptions`, so no renderer reads files or the
environment. What renderers share lives in `output/base.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

from neuron_migrate.model import FileResult
from neuron_migrate.output.base import (
    FORMATS,
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

__all__ = [
    "FORMATS",
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


def _text(results: Sequence[FileResult], o: RenderOptions) -> str:
    from neuron_migrate.output import text

    return text.render(results, unsafe_fixes=o.unsafe_fixes, quiet=o.quiet, color=o.color)


def _full(results: Sequence[FileResult], o: RenderOptions) -> str:
    from neuron_migrate.output import full

    return full.render(results, unsafe_fixes=o.unsafe_fixes, quiet=o.quiet)


def _json(results: Sequence[FileResult], o: RenderOptions) -> str:
    from neuron_migrate.output import json

    return json.render(results)


def _json_lines(results: Sequence[FileResult], o: RenderOptions) -> str:
    from neuron_migrate.output import json_lines

    return json_lines.render(results)


def _sarif(results: Sequence[FileResult], o: RenderOptions) -> str:
    from neuron_migrate.output import sarif

    return sarif.render(results, root=o.root, cwd=o.cwd, rules=o.rules)


def _github(results: Sequence[FileResult], o: RenderOptions) -> str:
    from neuron_migrate.output import github

    return github.render(results, root=o.root, cwd=o.cwd)


def _gitlab(results: Sequence[FileResult], o: RenderOptions) -> str:
    from neuron_migrate.output import gitlab

    return gitlab.render(results, root=o.root, cwd=o.cwd)


def _junit(results: Sequence[FileResult], o: RenderOptions) -> str:
    from neuron_migrate.output import junit

    return junit.render(results)


def _rdjson(results: Sequence[FileResult], o: RenderOptions) -> str:
    from neuron_migrate.output import rdjson

    return rdjson.render(results)


Renderer = Callable[[Sequence[FileResult], RenderOptions], str]

_RENDERERS: Mapping[str, Renderer] = MappingProxyType(
    {
        "text": _text,
        "full": _full,
        "json": _json,
        "json-lines": _json_lines,
        "sarif": _sarif,
        "github": _github,
        "gitlab": _gitlab,
        "junit": _junit,
        "rdjson": _rdjson,
    }
)


def render(fmt: str, results: Sequence[FileResult], options: RenderOptions) -> str:
    """The report for `results` in output format `fmt` (one of FORMATS)."""
    if fmt not in _RENDERERS:
        raise ValueError(f"unknown output format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return _RENDERERS[fmt](results, options)
