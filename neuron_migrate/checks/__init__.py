"""The Python behind the rules, one module per concept of the migration guide.

Each concept module holds that concept's detectors and text fixes and exports them as
`DETECTORS` and `FIXES`; its LibCST half (what `--fix` runs to keep comments and layout) is the
`<concept>_cst.py` sibling, imported only when a file is fixed. `toolkit.py` is the fix API and
the shared helpers, `helpers.py` the code written into migrated files. A rule's TOML names its
concept (`concept = "..."`), so `rules/NMxxx.toml` -> `checks/<concept>.py`.

`fixes`, `detectors`, `cst_fixes` and `helper_code` are aliases of the old layout, kept for
plugins and docs; nothing in the package imports them.
"""

from neuron_migrate.catalogue import MODULE_CONCEPTS as CONCEPTS

__all__ = ["CONCEPTS"]
