"""The Python behind the rules, one module per concept of the migration guide.

Each concept module holds that concept's detectors and fixes and exports them as `DETECTORS`
and `FIXES`. Each fix exists once: a span edit as text, planned at check time; a structural
rewrite as a LibCST transform in the `<concept>_cst.py` sibling, imported only when a file is
fixed (or its fixes' edits are shown). `toolkit.py` is the fix API, `toolkit_calls.py` and
`toolkit_layout.py` the shared helpers on arguments and a call's layout, `toolkit_cst.py` the
LibCST ones, `helpers.py` the code written into migrated files. A rule's TOML names its concept
(`concept = "..."`), so `rules/NMxxx.toml` -> `checks/<concept>.py`.
"""

from neuron_migrate.catalogue import MODULE_CONCEPTS as CONCEPTS

__all__ = ["CONCEPTS"]
