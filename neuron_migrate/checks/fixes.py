"""Alias of the old `checks/fixes.py`, kept for plugins and docs: import from the new modules.

`FixContext` and the fix type live in `checks/toolkit.py`, the helper sources in
`checks/helpers.py`, each built-in fix in its concept's module (`checks/<concept>.py`).
Nothing in the package imports this module.
"""

from neuron_migrate.analysis.analyze import body_of
from neuron_migrate.analysis.source import fit_quotes
from neuron_migrate.checks.helpers import DEVICE_LOADER, HELPERS, OPTIMIZER_STEP, TO_CPU, helper_text
from neuron_migrate.checks.toolkit import FixContext, FixFn

__all__ = [
    "DEVICE_LOADER",
    "HELPERS",
    "OPTIMIZER_STEP",
    "TO_CPU",
    "FixContext",
    "FixFn",
    "body_of",
    "fit_quotes",
    "helper_text",
]
