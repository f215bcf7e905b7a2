"""Alias of the old `checks/cst_fixes.py`: the built-in LibCST transforms by their bare names.

`ctx.with_rewrite(plan, node, "master_print")` (a bare name) resolves here, so plugins written
against the old layout keep working; the built-in fixes name their concept's `_cst` module
(`"neuron_migrate.checks.ranks_cst:master_print"`). Imported only when fixing; nothing in the
package imports this module.
"""

from neuron_migrate.checks.compilation_cst import add_keyword
from neuron_migrate.checks.devices_cst import autocast
from neuron_migrate.checks.execution_cst import step_closure
from neuron_migrate.checks.launch_cst import spawn
from neuron_migrate.checks.optimizer_cst import optimizer_step
from neuron_migrate.checks.ranks_cst import guarded_call, master_print, xla_save
from neuron_migrate.checks.toolkit_cst import append_argument, keyword_arg, realigned, relaid
from neuron_migrate.checks.utilities_cst import rename_call

__all__ = [
    "add_keyword",
    "append_argument",
    "autocast",
    "guarded_call",
    "keyword_arg",
    "master_print",
    "optimizer_step",
    "realigned",
    "relaid",
    "rename_call",
    "spawn",
    "step_closure",
    "xla_save",
]
