"""`neuron-migrate help [COMMAND]`: the help of the tool or of one command, as `ruff help` prints it."""

from __future__ import annotations

import click

from neuron_migrate.cli.common import fail


@click.command("help")
@click.argument("command", nargs=-1)
@click.pass_context
def help_command(ctx: click.Context, command: tuple[str, ...]) -> None:
    """Print this help, or the help of COMMAND (`neuron-migrate help check`)."""
    parent = ctx.parent
    assert parent is not None  # a subcommand of the group
    context = parent
    for name in command:
        group = context.command
        found = group.get_command(context, name) if isinstance(group, click.Group) else None
        if found is None:
            fail(f"unknown command {' '.join(command)!r}; run `{parent.command_path} help` to list them")
        context = click.Context(found, info_name=name, parent=context)
    click.echo(context.get_help())
