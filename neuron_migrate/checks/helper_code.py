"""Alias of the old `checks/helper_code.py`, kept for plugins and tests: see `checks/helpers.py`.

Nothing in the package imports this module.
"""

from neuron_migrate.checks.helpers import HELPER_NAMES, helper_imports
from neuron_migrate.checks.helpers import HELPER_TEMPLATES as HELPERS

__all__ = ["HELPERS", "HELPER_NAMES", "helper_imports"]
