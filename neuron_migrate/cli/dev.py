"""`neuron-migrate dev`: commands for working on neuron-migrate itself, in a source checkout."""

from __future__ import annotations

import sys

import click

from neuron_migrate.cli.common import EXIT_CLEAN, EXIT_FINDINGS, fail


@click.group("dev", hidden=True)
def dev_command() -> None:
    """Commands for working on neuron-migrate itself (in a source checkout)."""


@dev_command.command("generate")
@click.option("--check", is_flag=True, help="Write nothing; list the stale files and exit 1 if there are any.")
def generate(check: bool) -> None:
    """Write every generated file: rules/README.md, the docs, the op data, the README's blocks."""
    from neuron_migrate import generate as generated

    try:
        root = generated.checkout_root()
        paths = generated.stale(root) if check else generated.write(root)
    except generated.GenerateError as exc:
        fail(str(exc))
    for path in paths:
        click.echo(f"{'Stale' if check else 'Wrote'}: {path}")
    if not paths:
        click.echo(f"All {len(generated.GENERATED)} generated files are up to date.")
    sys.exit(EXIT_FINDINGS if check and paths else EXIT_CLEAN)
