"""`neuron-migrate smoke`: run a script for a few steps on `neuron`, real or emulated.

The only package allowed to import torch, and only inside the child process it starts
(`bootstrap`, `emulate`, `recorder`, `hooks`, ...). Importing this package imports no torch.
"""

from __future__ import annotations

from neuron_migrate.smoke.findings import report_findings
from neuron_migrate.smoke.render import render_json, render_text
from neuron_migrate.smoke.report import SmokeReport
from neuron_migrate.smoke.runner import SmokeOptions, SmokeUnavailable, run_smoke

__all__ = [
    "SmokeOptions",
    "SmokeReport",
    "SmokeUnavailable",
    "render_json",
    "render_text",
    "report_findings",
    "run_smoke",
]
