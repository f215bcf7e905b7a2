"""The command line: flags -> Settings -> engine -> output. No migration logic lives here.

One module per command (`check`, `report`, `rules`), the top-level group, the shared options,
and what `check` prints (`emit`)."""

from __future__ import annotations

import click

from neuron_migrate import __version__
from neuron_migrate.cli.check import check
from neuron_migrate.cli.group import DefaultCheckGroup
from neuron_migrate.cli.help import help_command
from neuron_migrate.cli.report import report_command
from neuron_migrate.cli.rules import explain, rules_command, version


@click.group(cls=DefaultCheckGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="neuron-migrate", message="%(prog)s %(version)s")
def main() -> None:
    """Find and fix torch_xla code for the native TorchNeuron `neuron` device.

    Run `neuron-migrate check PATH` (or just `neuron-migrate PATH`) to list findings, and add
    `--fix` to rewrite what can be rewritten safely.
    """


for _command in (check, report_command, rules_command, explain, version, help_command):
    main.add_command(_command)
