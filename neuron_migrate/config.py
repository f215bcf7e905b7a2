"""Configuration: `[tool.neuron-migrate]` in `pyproject.toml`, or a `neuron-migrate.toml`.

The nearest file above a path wins (`neuron-migrate.toml` before `pyproject.toml` in the same
folder; a `pyproject.toml` without the table is skipped); `--config FILE` overrides the search.
CLI flags override the file. Rule selection is layered as in Ruff: a CLI `--select` replaces
everything the file selects or ignores, while CLI `--extend-select` and `--ignore` adjust the
file's selection.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from neuron_migrate import output_formats
from neuron_migrate.config_values import (
    CODE_LISTS,
    GLOB_LISTS,
    KEYS,
    ConfigError,
    anchor_glob,
    choice,
    codes,
    did_you_mean,
    effort,
    parse_families,
    per_file_ignores,
    rule_sources,
    strings,
    type_name,
)
from neuron_migrate.data import available_versions
from neuron_migrate.settings import (
    DEFAULT_EXCLUDES,
    EDITLESS_FORMATS,
    TARGETS,
    RuleSources,
    Settings,
)

CONFIG_FILE = "neuron-migrate.toml"
PYPROJECT = "pyproject.toml"
TABLE = "tool.neuron-migrate"


@dataclass(frozen=True)
class Config:
    """What one config file says; None means the file does not set the key."""

    path: Path | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool | None = None
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    target_version: str | None = None
    unsafe_fixes: bool | None = None
    output_format: str | None = None
    report_effort: tuple[tuple[str, int], ...] = ()  # minutes per manual finding, by concept
    rule_sources: RuleSources = RuleSources()
    families: tuple[str, ...] | None = None  # `from = ["cuda"]`
    target: str | None = None  # `target = "accelerator"`

    @property
    def selects_rules(self) -> bool:
        return self.select is not None or bool(self.ignore or self.extend_select)


@dataclass(frozen=True)
class Overrides:
    """What the command line says; None (or empty) means the flag was not given."""

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    exclude: tuple[str, ...] | None = None  # replaces the config's (or the default) excludes, as in Ruff
    extend_exclude: tuple[str, ...] = ()  # added to them
    respect_gitignore: bool | None = None  # `--no-respect-gitignore`
    target_version: str | None = None
    unsafe_fixes: bool | None = None
    output_format: str | None = None
    fix: bool = False
    add_noqa: bool = False
    families: tuple[str, ...] | None = None  # `--from xla,cuda`
    target: str | None = None  # `--target accelerator`


def shown(path: Path) -> str:
    """A path for messages: relative to the current folder when inside it."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()


def find_config(start: Path) -> Path | None:
    """The nearest config file in `start` (a folder) or any folder above it."""
    folder = start.resolve()
    for candidate in (folder, *folder.parents):
        own = candidate / CONFIG_FILE
        if own.is_file():
            return own
        pyproject = candidate / PYPROJECT
        if pyproject.is_file() and _has_table(pyproject):
            return pyproject
    return None


def _has_table(pyproject: Path) -> bool:
    text = _read(pyproject)
    if "neuron-migrate" not in text:
        return False
    return "neuron-migrate" in _parse_toml(text, pyproject).get("tool", {})


def _read(path: Path) -> str:
    from neuron_migrate.fsio import CONFIG_LIMIT, read_text_regular

    try:
        return read_text_regular(path, CONFIG_LIMIT)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{shown(path)}: cannot read the config file: {exc}") from None


def _parse_toml(text: str, path: Path) -> dict[str, Any]:
    from neuron_migrate.catalogue import (
        toml_module,  # the rules' module, imported only to read TOML
    )

    toml = toml_module()
    try:
        return toml.loads(text)
    except toml.TOMLDecodeError as exc:
        raise ConfigError(f"{shown(path)}: invalid TOML: {exc}") from None
    except ValueError as exc:  # an integer of thousands of digits: Python refuses to convert it
        raise ConfigError(f"{shown(path)}: invalid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{shown(path)}: invalid TOML: nested too deeply") from None


def load_config(path: Path) -> Config:
    """Read and validate one config file (a `pyproject.toml` or a `neuron-migrate.toml`)."""
    if not path.exists():
        raise ConfigError(f"{shown(path)}: config file not found")
    data = _parse_toml(_read(path), path)
    if path.name == PYPROJECT:
        table = data.get("tool", {}).get("neuron-migrate")
        if table is None:
            raise ConfigError(f"{shown(path)}: no [{TABLE}] table")
        if not isinstance(table, dict):
            raise ConfigError(f"{shown(path)}: [{TABLE}] must be a table")
        data = table
    return parse_config(data, path)


def parse_config(data: Mapping[str, Any], path: Path) -> Config:
    """Validate a config table read from `path` (whose folder anchors relative globs)."""
    where = shown(path)
    for key in data:
        if key not in KEYS:
            raise ConfigError(f"{where}: unknown key `{key}`{did_you_mean(key)}")
    values: dict[str, Any] = {"path": path}
    for key in CODE_LISTS:
        if key in data:
            values[key.replace("-", "_")] = codes(data[key], where, key)
    for key in GLOB_LISTS:
        if key in data:
            globs = strings(data[key], where, key)
            values[key.replace("-", "_")] = tuple(anchor_glob(g, path.parent, f"{where}: `{key}`") for g in globs)
    if "respect-gitignore" in data:
        if not isinstance(data["respect-gitignore"], bool):
            raise ConfigError(
                f"{where}: `respect-gitignore` must be true or false, not {type_name(data['respect-gitignore'])}"
            )
        values["respect_gitignore"] = data["respect-gitignore"]
    if "per-file-ignores" in data:
        values["per_file_ignores"] = per_file_ignores(data["per-file-ignores"], where, path.parent)
    if "target-version" in data:
        values["target_version"] = choice(data["target-version"], available_versions(), where, "target-version")
    if "unsafe-fixes" in data:
        if not isinstance(data["unsafe-fixes"], bool):
            raise ConfigError(f"{where}: `unsafe-fixes` must be true or false, not {type_name(data['unsafe-fixes'])}")
        values["unsafe_fixes"] = data["unsafe-fixes"]
    if "output-format" in data:
        given = choice(data["output-format"], output_formats.CHOICES, where, "output-format")
        values["output_format"] = output_formats.output_format(given).name  # `concise` is `text`
    if "report-effort" in data:
        values["report_effort"] = effort(data["report-effort"], where)
    if "extend-rules" in data or "plugins" in data:
        values["rule_sources"] = rule_sources(data, where, path.parent)
    if "from" in data:
        values["families"] = parse_families(data["from"], where)
    if "target" in data:
        values["target"] = choice(data["target"], TARGETS, where, "target")
    return Config(**values)


def _apply_layer(
    current: frozenset[str], extend: tuple[str, ...], ignore: tuple[str, ...], sources: RuleSources
) -> frozenset[str]:
    """Adjust an enabled set by one layer's extend-select and ignore; the most specific prefix wins."""
    from neuron_migrate.registry import registry

    enabled = set(current)
    for spec in registry(sources).specs:
        if spec.retired:
            continue
        best_on = max((len(p) for p in extend if p == "ALL" or spec.code.startswith(p)), default=-1)
        best_off = max((len(p) for p in ignore if p == "ALL" or spec.code.startswith(p)), default=-1)
        if best_on > best_off:
            enabled.add(spec.code)
        elif best_off >= 0:
            enabled.discard(spec.code)
    return frozenset(enabled)


def _selection(
    config: Config, cli: Overrides, families: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], frozenset[str] | None]:
    """(select, ignore, extend_select, enabled codes) for Settings after layering CLI over the config.

    When the command line's selectors stand alone, the enabled codes are left to be resolved on
    first use (None): a run served entirely from the cache never loads the rules.
    """
    if cli.select is not None or not config.selects_rules:
        return cli.select or ("NM",), cli.ignore, cli.extend_select, None
    from neuron_migrate.catalogue import select_rules
    from neuron_migrate.registry import registry

    specs = registry(config.rule_sources).specs
    selected = config.select if config.select is not None else ("NM",)  # `select = []`: none, as in Ruff
    base = select_rules(specs, selected, config.ignore, config.extend_select, families)
    codes = _apply_layer(base, cli.extend_select, cli.ignore, config.rule_sources)
    return tuple(sorted(codes)), (), (), codes  # exact codes; empty selects nothing


def merge(config: Config, cli: Overrides) -> Settings:
    """The Settings for files governed by `config`, with the CLI flags on top."""
    families = cli.families or config.families or Settings.families
    select, ignore, extend_select, enabled = _selection(config, cli, families)
    unsafe = cli.unsafe_fixes if cli.unsafe_fixes is not None else config.unsafe_fixes
    excludes = (
        cli.exclude if cli.exclude is not None else config.exclude if config.exclude is not None else DEFAULT_EXCLUDES
    )
    return Settings(
        select=select,
        ignore=ignore,
        extend_select=extend_select,
        fix=cli.fix,
        unsafe_fixes=bool(unsafe),
        target_version=cli.target_version or config.target_version or Settings.target_version,
        exclude=tuple(excludes),
        extend_exclude=(*config.extend_exclude, *cli.extend_exclude),
        respect_gitignore=_first(cli.respect_gitignore, config.respect_gitignore, Settings.respect_gitignore),
        per_file_ignores=config.per_file_ignores,
        add_noqa=cli.add_noqa,
        rule_sources=config.rule_sources,
        enabled=enabled,
        families=families,
        target=cli.target or config.target or Settings.target,
        fix_edits=output_format(config, cli) not in EDITLESS_FORMATS,
    )


def _first(*values: bool | None) -> bool:
    return next(bool(v) for v in values if v is not None)


def output_format(config: Config, cli: Overrides) -> str:
    """The run's output format, by its table name (an alias such as `concise` resolved)."""
    return output_formats.output_format(cli.output_format or config.output_format or "text").name


@dataclass(frozen=True)
class ConfigChoice:
    """`--config`, as in Ruff: a file used instead of the nearest one, and `KEY = VALUE` pairs
    that override whichever config governs a path (their globs and folders anchored at the
    current folder)."""

    file: Path | None = None
    pairs: tuple[str, ...] = ()  # each pair's TOML text, as given


# The Config fields each key sets (a pair replaces the config's value of its key).
_FIELDS = {"from": ("families",), "extend-rules": ("rule_sources",), "plugins": ("rule_sources",)}


def config_for(path: Path, explicit: ConfigChoice | None) -> Config:
    """The config that governs `path`: `explicit.file` when given, else the nearest file above
    it; then `explicit.pairs` over it."""
    choice = explicit or ConfigChoice()
    if choice.file is not None:
        config = load_config(choice.file)
    else:
        start = path if path.is_dir() else path.parent
        found = find_config(start if str(start) else Path("."))
        config = load_config(found) if found is not None else Config()
    return with_pairs(config, choice.pairs) if choice.pairs else config


def with_pairs(config: Config, pairs: Iterable[str]) -> Config:
    """`config` with the keys of inline `--config` pairs replaced."""
    where = Path.cwd() / "--config"  # errors read `--config: ...`
    data = _parse_toml("\n".join(pairs), where)
    inline = parse_config(data, where)
    fields = {field for name in data for field in _FIELDS.get(name, (name.replace("-", "_"),))}
    return replace(config, **{field: getattr(inline, field) for field in fields})


def plan_runs(
    paths: Iterable[Path], cli: Overrides, explicit: ConfigChoice | None
) -> list[tuple[tuple[Path, ...], Settings]]:
    """Group the PATHS arguments by the config that governs each, with merged Settings."""
    groups: dict[Path | None, list[Path]] = {}
    configs: dict[Path | None, Config] = {}
    for path in paths:
        config = config_for(path, explicit)
        configs.setdefault(config.path, config)
        groups.setdefault(config.path, []).append(path)
    return [(tuple(group), merge(configs[key], cli)) for key, group in groups.items()]
