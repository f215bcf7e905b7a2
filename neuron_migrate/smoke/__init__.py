"""`neuron-migrate smoke`: run a script for a few steps on `neuron`, real or emulated.

The only package allowed to import torch, and only inside the child process it starts
(`bootstrap`, `emulate`, `recorder`, `hooks`, ...). Importing this package imports no torch.
The names below are imported on first use, so a child process (`python -m
neuron_migrate.smoke.child.bootstrap`) does not load the runner, the renderers or the rule catalogue.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from neuron_migrate.smoke.findings import report_findings
    from neuron_migrate.smoke.render import render_json, render_text
    from neuron_migrate.smoke.report import SmokeReport
    from neuron_migrate.smoke.runner import SmokeOptions, SmokeUnavailable, run_smoke

_EXPORTS = {
    "SmokeOptions": "neuron_migrate.smoke.runner",
    "SmokeReport": "neuron_migrate.smoke.report",
    "SmokeUnavailable": "neuron_migrate.smoke.runner",
    "render_json": "neuron_migrate.smoke.render",
    "render_text": "neuron_migrate.smoke.render",
    "report_findings": "neuron_migrate.smoke.findings",
    "run_smoke": "neuron_migrate.smoke.runner",
}

__all__ = [
    "SmokeOptions",
    "SmokeReport",
    "SmokeUnavailable",
    "render_json",
    "render_text",
    "report_findings",
    "run_smoke",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
