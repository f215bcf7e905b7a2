"""Flatten and rebuild the arguments and results of one ATen op, fast. Child process only.

`torch.utils._pytree` handles every registered container at a cost of microseconds per leaf,
which the emulation and the op recorder would pay on every op. ATen ops take and return
tensors, scalars, None and flat lists or tuples of them (kwargs in a dict), so these functions
walk plain lists, tuples and dicts directly and hand any other container (a namedtuple, a
`torch.return_types` value) to pytree. The leaves and their order are pytree's (None is a leaf).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch.utils._pytree import tree_leaves, tree_map

_CONTAINERS = (list, tuple, dict)


def leaves(tree: Any) -> list[Any]:
    """The leaves of `tree`, as `tree_leaves(tree)` gives them."""
    kind = type(tree)
    if kind is tuple or kind is list:
        items: Any = tree
    elif kind is dict:
        items = tree.values()
    elif isinstance(tree, _CONTAINERS):
        return tree_leaves(tree)
    else:
        return [tree]
    found: list[Any] = []
    for item in items:
        if isinstance(item, _CONTAINERS):
            found.extend(leaves(item))
        else:
            found.append(item)
    return found


def map_leaves(fn: Callable[[Any], Any], tree: Any) -> Any:
    """`tree` with `fn` applied to every leaf, as `tree_map(fn, tree)` builds it."""
    kind = type(tree)
    if kind is tuple or kind is list:
        mapped = [map_leaves(fn, item) if isinstance(item, _CONTAINERS) else fn(item) for item in tree]
        return tuple(mapped) if kind is tuple else mapped
    if kind is dict:
        return {
            key: map_leaves(fn, value) if isinstance(value, _CONTAINERS) else fn(value) for key, value in tree.items()
        }
    if isinstance(tree, _CONTAINERS):
        return tree_map(fn, tree)
    return fn(tree)
