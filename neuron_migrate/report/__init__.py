"""`neuron-migrate report`: the migration at a glance, for the person who plans it.

`build(results, run)` turns the results of a check (nothing fixed, nothing written) into a
frozen `Report`; `render(fmt, report)` prints it as `html`, `md` or `json` (one pure module per
format). The JSON shape is documented in `docs/report.md` and `docs/report-schema.json`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from neuron_migrate.report.model import Report, RunInfo
from neuron_migrate.report.plan import build

FORMATS = ("html", "md", "json")
SCHEMA_VERSION = 2


def _html(report: Report) -> str:
    from neuron_migrate.report import html

    return html.render(report)


def _md(report: Report) -> str:
    from neuron_migrate.report import markdown

    return markdown.render(report)


def _json(report: Report) -> str:
    from neuron_migrate.report import json_report

    return json_report.render(report)


_RENDERERS: Mapping[str, Callable[[Report], str]] = MappingProxyType({"html": _html, "md": _md, "json": _json})


def render(fmt: str, report: Report) -> str:
    """The report in `fmt` (one of FORMATS)."""
    if fmt not in _RENDERERS:
        raise ValueError(f"unknown report format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return _RENDERERS[fmt](report)


__all__ = ["FORMATS", "SCHEMA_VERSION", "Report", "RunInfo", "build", "render"]
