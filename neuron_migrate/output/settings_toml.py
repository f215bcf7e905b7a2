"""`--show-settings` as TOML: one `[[settings]]` table per group of paths.

Each table holds the settings a config can set, spelled as the config spells them, so its lines
paste into `[tool.neuron-migrate]` (or a `neuron-migrate.toml`) and give the same table back:
`select` lists the enabled rules exactly (what selectors, ignores and families resolved to).
What a config cannot set (the paths, the config file, the flags of the command line, the fixed
limits) follows in the table's `[settings.resolved]`.
Valid TOML (`tomllib` reads it back); sets are sorted and `None` values left out, so the output
is stable.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

# Settings field -> config key, in the order `--show-settings` prints them (after `select`: the
# enabled rules, exactly, which is what every selector and family resolved to).
CONFIG_KEYS = (
    ("families", "from"),
    ("target", "target"),
    ("target_version", "target-version"),
    ("unsafe_fixes", "unsafe-fixes"),
    ("exclude", "exclude"),
    ("extend_exclude", "extend-exclude"),
    ("respect_gitignore", "respect-gitignore"),
    ("per_file_ignores", "per-file-ignores"),
)
# Settings fields no config key sets, shown under `[settings.resolved]`.
RESOLVED = ("fix", "add_noqa", "max_file_bytes", "max_fix_iterations")


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
    if isinstance(item, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {value(v)}" for k, v in item.items()) + " }" if item else "{}"
    if isinstance(item, (tuple, list)):
        return "[" + ", ".join(value(x) for x in item) + "]"
    return json.dumps(str(item), ensure_ascii=False)


def key(name: str) -> str:
    return name.replace("_", "-")


def render(groups: Iterable[tuple[Path | None, Sequence[Path], Any]]) -> str:
    """(config file, paths, Settings) of each group as a `[[settings]]` table."""
    out: list[str] = []
    for config, paths, settings in groups:
        out.append("[[settings]]")
        out += _config_lines(settings)
        out += ["", "[settings.resolved]", f"paths = {value([p.as_posix() for p in paths])}"]
        if config is not None:
            out.append(f"config-file = {value(config.as_posix())}")
        out += [
            f"{key(name)} = {value(getattr(settings, name))}"
            for name in RESOLVED
            if getattr(settings, name) is not None
        ]
        if settings.rule_sources.plugin_root:
            out.append(f"plugin-root = {value(settings.rule_sources.plugin_root)}")
        out.append("")
    return "\n".join(out)


def _config_lines(settings: Any) -> list[str]:
    """The group's settings as config keys (per-file-ignores a table even when empty)."""
    lines = [f"select = {value(settings.enabled)}"]
    for field, name in CONFIG_KEYS:
        item = getattr(settings, field)
        if field == "per_file_ignores":
            item = dict(item)
        lines.append(f"{name} = {value(item)}")
    sources = settings.rule_sources
    if sources.extend_rules:
        lines.append(f"extend-rules = {value(sources.extend_rules)}")
    if sources.plugins:
        lines.append(f"plugins = {value(sources.plugins)}")
    return lines
