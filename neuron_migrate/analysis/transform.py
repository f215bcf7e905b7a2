"""Alias of the old `analysis/transform.py`, kept for plugins: the names a LibCST rewrite uses.

A plugin's `_cst` module raises `Decline` to keep the text edit; `Rewrite`, `EXPRESSION` and
`STATEMENT` describe the rewrite a fix plans. They live in `analysis/values.py`; applying a
rewrite (LibCST) is `engine/rewrite.py`. This module imports no LibCST, and nothing in the
package imports it.
"""

from neuron_migrate.analysis.values import EXPRESSION, STATEMENT, Decline, Rewrite

__all__ = ["EXPRESSION", "STATEMENT", "Decline", "Rewrite"]
