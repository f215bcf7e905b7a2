"""The options several commands share, written once so they never drift apart, and the
callbacks that turn option text into values."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from neuron_migrate.data import available_versions
from neuron_migrate.settings import TARGETS


def shard_option(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, int] | None:
    from neuron_migrate.run.shard import ShardError, parse_shard

    try:
        return None if value is None else parse_shard(value)
    except ShardError as exc:
        raise click.BadParameter(str(exc)) from None


def config_option(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> Any:
    """`--config` values, as Ruff reads them: an existing file (or a word with no `=`) is the
    config file, anything else a TOML `KEY = VALUE` pair."""
    if not values:
        return None
    import os

    from neuron_migrate.config import ConfigChoice

    file: Path | None = None
    pairs: list[str] = []
    for given in values:
        if os.path.exists(given) or "=" not in given:
            if file is not None:
                raise click.BadParameter(f"give one config file, not {file} and {given}")
            file = Path(given)
        else:
            pairs.append(_pair(given))
    return ConfigChoice(file, tuple(pairs))


def _pair(given: str) -> str:
    from neuron_migrate.catalogue import toml_module

    toml = toml_module()
    try:
        data = toml.loads(given)
    except toml.TOMLDecodeError as exc:
        raise click.BadParameter(f"{given!r} is neither a config file nor a TOML `KEY = VALUE` pair ({exc})") from None
    if len(data) != 1:
        raise click.BadParameter(f"{given!r} must set one key, as `KEY = VALUE`")
    return given


def families_option(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...] | None:
    from neuron_migrate.config_values import ConfigError, parse_families

    if value is None:
        return None
    try:
        return parse_families([part.strip() for part in value.split(",") if part.strip()], "--from")
    except ConfigError as exc:
        raise click.BadParameter(str(exc).removeprefix("--from: ")) from None


def _allow_plugins(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        from neuron_migrate import trust

        trust.allow()


ALLOW_PLUGINS = click.option(
    "--allow-plugins",
    is_flag=True,
    is_eager=True,
    expose_value=False,
    callback=_allow_plugins,
    help="Trust the config: import the Python modules its `plugins` names (also NEURON_MIGRATE_ALLOW_PLUGINS=1).",
)


F = TypeVar("F", bound=Callable[..., Any])


def option_group(*options: Callable[[F], F]) -> Callable[[F], F]:
    """Several click options as one decorator, in the order given (as `--help` lists them)."""

    def apply(command: F) -> F:
        for option in reversed(options):
            command = option(command)
        return command

    return apply


# The options `check` and `report` share, written once so the two never drift apart.
RULE_OPTIONS = option_group(
    click.option("--select", multiple=True, help="Rule codes or prefixes to enable (default: all)."),
    click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable."),
    click.option("--extend-select", multiple=True, help="Rule codes or prefixes to enable on top of --select."),
)
SCOPE_OPTIONS = option_group(
    click.option(
        "--exclude",
        multiple=True,
        help="Glob of files or folders to skip; replaces the default excludes (and the config's `exclude`).",
    ),
    click.option(
        "--extend-exclude", multiple=True, help="Glob of files or folders to skip, on top of the default excludes."
    ),
    click.option(
        "--respect-gitignore/--no-respect-gitignore",
        default=None,
        help="Skip files git ignores (.gitignore, .git/info/exclude) when walking folders  [default: respect]",
    ),
    click.option(
        "--target-version",
        type=click.Choice(available_versions()),
        default=None,
        help="torch-neuronx family to check against  [default: 2.14]",
    ),
    click.option(
        "--from",
        "families",
        callback=families_option,
        metavar="xla,cuda",
        help="Code to migrate from: torch_xla rules (`xla`), CUDA rules (`cuda`), or both  [default: xla]",
    ),
    click.option(
        "--target",
        type=click.Choice(TARGETS),
        default=None,
        help="Write `neuron` code, or device-agnostic `torch.accelerator` code  [default: neuron]",
    ),
    click.option(
        "--config",
        "config_file",
        multiple=True,
        callback=config_option,
        metavar="FILE|KEY=VALUE",
        help="Use this pyproject.toml or neuron-migrate.toml instead of the nearest one, or override one "
        "key of the config: `--config 'target = \"accelerator\"'` (repeatable).",
    ),
)
JOBS_OPTION = click.option(
    "-j", "--jobs", type=click.IntRange(min=1), default=None, help="Worker processes  [default: the usable CPU cores]"
)
CACHE_OPTIONS = option_group(
    click.option("--no-cache", is_flag=True, help="Neither read nor write the result cache."),
    click.option(
        "--cache-dir",
        type=click.Path(path_type=Path, file_okay=False),
        envvar="NEURON_MIGRATE_CACHE_DIR",
        help="Result cache folder  [default: ./.neuron_migrate_cache]",
    ),
)
