"""The signature tables: each mapped API's parameters per library version, read from its source.

rules/signatures.toml (torch_xla, by torch_xla version) and rules/signatures-nxd.toml
(neuronx_distributed, by NxD release) are written by scripts/signatures.py. A rule's `[[map.params]]`
declares what its fix does with each parameter; `engine/arguments.py` and the fixes read the
defaults here, so passing an API's own default counts as not passing it.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Any

from neuron_migrate.catalogue import toml_module
from neuron_migrate.data import rules_dir

# The signature tables (scripts/signatures.py): torch_xla's, by torch_xla version, and
# neuronx_distributed's, by NxD release.
SIGNATURE_FILES = ("signatures.toml", "signatures-nxd.toml")


@functools.cache
def load_signatures(directory: Path | None = None) -> dict[str, dict[str, Any]]:
    """Each mapped API's parameters per library version: rules/signatures.toml (torch_xla) and
    rules/signatures-nxd.toml (neuronx_distributed), written by scripts/signatures.py."""
    table: dict[str, dict[str, Any]] = {}
    for name in SIGNATURE_FILES:
        path = (directory or rules_dir()) / name
        if path.is_file():
            table.update(toml_module().loads(path.read_text(encoding="utf-8")).get("api", {}))
    return table


def signature_versions(api: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """A table row's parameter lists, by version (`2.5.0` -> (`device`, `dtype=None`, ...))."""
    return {key: tuple(value) for key, value in api.items() if key[:1].isdigit()}


def param_name(token: str) -> str:
    """`flush=False` -> `flush`; `*args` and `**kwargs` keep their stars."""
    return token.split("=", 1)[0]


def signature_row(api: str) -> dict[str, Any]:
    """`api`'s row; for a class whose `__init__` only forwards to another library's class
    (NxD's `NeuronZero1Optimizer(*args, **kwargs)` -> torch_xla's ZeRO), that class's row."""
    table = load_signatures()
    row = table.get(api, {})
    inherits = row.get("inherits", "")
    unreadable = all(tokens == ("...",) for tokens in signature_versions(row).values())
    return table[inherits] if inherits in table and unreadable else row


def param_default(api: str, name: str) -> str | None:
    """The default value's source text of `api`'s parameter `name`, where every version agrees on it."""
    defaults = {
        token.split("=", 1)[1]
        for tokens in signature_versions(signature_row(api)).values()
        for token in tokens
        if "=" in token and param_name(token) == name
    }
    return defaults.pop() if len(defaults) == 1 else None


def default_argument(api: str, name: str, value: ast.expr) -> bool:
    """Whether `value` is `api`'s default for parameter `name` (`flush=False`): passing it changes nothing."""
    default = param_default(api, name)
    if default is None:
        return False
    try:
        expected = ast.parse(default, mode="eval").body
    except SyntaxError:
        return False
    return ast.dump(expected) == ast.dump(value)
