"""`--show-settings` as TOML: one `[[settings]]` table per group of paths, keys spelled as in the config.

Valid TOML (`tomllib` reads it back), so a script can compare or diff the settings of two runs.
Sets are sorted and `None` values left out (TOML has no null), so the output is stable.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import fields, is_dataclass
from pathlib import Path


def value(item: object) -> str:
    """One value as TOML: strings quoted as JSON does (a subset of TOML's basic strings)."""
    if isinstance(item, bool):
        return "true" if item else "false"
    if isinstance(item, (int, float)):
        return repr(item)
    if isinstance(item, str):
        return json.dumps(item, ensure_ascii=False)
    if isinstance(item, Path):
        return json.dumps(item.as_posix(), ensure_ascii=False)
    if isinstance(item, (frozenset, set)):
        return value(tuple(sorted(item)))
    if is_dataclass(item) and not isinstance(item, type):
        parts = (f"{key(f.name)} = {value(getattr(item, f.name))}" for f in fields(item))
        return "{ " + ", ".join(parts) + " }" if fields(item) else "{}"
    if isinstance(item, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {value(v)}" for k, v in item.items()) + " }" if item else "{}"
    if isinstance(item, (tuple, list)):
        if item and all(isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str) for x in item):
            return value(dict(item))  # (glob, codes) pairs: per-file-ignores, as the config writes them
        return "[" + ", ".join(value(x) for x in item) + "]"
    return json.dumps(str(item), ensure_ascii=False)


def key(name: str) -> str:
    return name.replace("_", "-")


def render(groups: Iterable[tuple[Path | None, Sequence[Path], object]]) -> str:
    """(config file, paths, Settings) of each group as a `[[settings]]` table."""
    out: list[str] = []
    for config, paths, settings in groups:
        out.append("[[settings]]")
        out.append(f"paths = {value([p.as_posix() for p in paths])}")
        if config is not None:
            out.append(f"config-file = {value(config.as_posix())}")
        for field in fields(settings):  # type: ignore[arg-type]
            item = getattr(settings, field.name)
            if field.name == "per_file_ignores":
                item = dict(item)  # a table even when empty, as the config writes it
            if item is not None:
                out.append(f"{key(field.name)} = {value(item)}")
        out.append("")
    return "\n".join(out)
