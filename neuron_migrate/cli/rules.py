"""`neuron-migrate rules`, `explain` and `version`: the rule catalogue and the tool itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from neuron_migrate import __version__
from neuron_migrate.cli.common import fail
from neuron_migrate.cli.options import ALLOW_PLUGINS, config_option

_CONFIG_OPTION = click.option(
    "--config", "config_file", multiple=True, callback=config_option, metavar="FILE|KEY=VALUE",
    help="Read the project's own rules (extend-rules, plugins) from this config instead of the nearest one "
    "(or override one key: `--config 'extend-rules = [\"nm-rules\"]'`).",
)  # fmt: skip


def _project_rules(config_file: Any) -> Any:
    """The registry with the project's own rules, from the config governing the current folder."""
    from neuron_migrate.config import ConfigError, config_for
    from neuron_migrate.registry import registry

    try:
        return registry(config_for(Path.cwd(), config_file).rule_sources)
    except ConfigError as exc:
        fail(str(exc))


@click.command("rules")
@click.option(
    "--format",
    "--output-format",
    "fmt",
    type=click.Choice(("text", "json", "markdown")),
    default="text",
    show_default=True,
    help="Output format.",
)
@_CONFIG_OPTION
@ALLOW_PLUGINS
def rules_command(fmt: str, config_file: Any) -> None:
    """List every rule (the project's own too): code, name, severity, fix safety and summary."""
    from neuron_migrate import docs

    text = docs.render_rules(fmt, _project_rules(config_file))
    click.echo(text if fmt == "json" else _visible_lines(text), nl=False)


@click.command("explain")
@click.argument("code")
@_CONFIG_OPTION
@ALLOW_PLUGINS
def explain(code: str, config_file: Any) -> None:
    """Explain a rule: what it flags, why, an example and the fix."""
    from neuron_migrate import docs

    rules = _project_rules(config_file)
    text = docs.explain(code.upper(), rules) or docs.explain(code, rules)
    if text is None:
        close = docs.similar(code, rules)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        fail(f"unknown rule code {code!r}; {hint}run `neuron-migrate rules` to list them")
    click.echo(_visible_lines(text), nl=False)


def _visible_lines(text: str) -> str:
    """Text for a terminal: a project rule's docs cannot send it control characters."""
    from neuron_migrate.output.escape import visible

    return "\n".join(visible(line) for line in text.split("\n"))


@click.command("version")
def version() -> None:
    """Print the version."""
    click.echo(f"neuron-migrate {__version__}")
