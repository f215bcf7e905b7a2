"""Alias of the old `checks/detectors.py`, kept for plugins and docs: the detector type.

`DetectorFn` lives in `checks/toolkit.py`, each built-in detector in its concept's module
(`checks/<concept>.py`). Nothing in the package imports this module.
"""

from neuron_migrate.checks.toolkit import DetectorFn

__all__ = ["DetectorFn"]
