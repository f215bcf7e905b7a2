"""rules/signatures.toml: each torch_xla API's parameters per torch_xla version, read from the
wheels by scripts/signatures.py; what a default argument is (passing it changes nothing)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Any

from neuron_migrate.catalogue import toml_module
from neuron_migrate.data import rules_dir


@functools.cache
def load_signatures(directory: Path | None = None) -> dict[str, dict[str, Any]]:
    """rules/signatures.toml: each torch_xla API's parameters per torch_xla version (scripts/signatures.py)."""
    path = (directory or rules_dir()) / "signatures.toml"
    if not path.is_file():
        return {}
    return dict(toml_module().loads(path.read_text(encoding="utf-8")).get("api", {}))


def signature_versions(api: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """A table row's parameter lists, by version (`2.5.0` -> (`device`, `dtype=None`, ...))."""
    return {key: tuple(value) for key, value in api.items() if key[:1].isdigit()}


def param_name(token: str) -> str:
    """`flush=False` -> `flush`; `*args` and `**kwargs` keep their stars."""
    return token.split("=", 1)[0]


def param_default(api: str, name: str) -> str | None:
    """The default value's source text of `api`'s parameter `name`, where every version agrees on it."""
    defaults = {
        token.split("=", 1)[1]
        for tokens in signature_versions(load_signatures().get(api, {})).values()
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
