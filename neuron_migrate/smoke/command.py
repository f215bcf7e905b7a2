"""`neuron-migrate smoke SCRIPT [-- ARGS...]`: run a script on `neuron` (real or emulated).

Importing this module never imports torch; `neuron-migrate check` stays torch-free.
"""

from __future__ import annotations

from pathlib import Path

import click

from neuron_migrate.compat import available_versions
from neuron_migrate.smoke.render import render_json, render_text
from neuron_migrate.smoke.runner import (
    INSTALL_HINT,
    SmokeOptions,
    run_smoke,
    torch_available,
)


@click.command("smoke", context_settings={"ignore_unknown_options": False})
@click.argument("script", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--device",
    type=click.Choice(["auto", "neuron", "emulate"]),
    default="auto",
    show_default=True,
    help="auto uses Trainium when torch_neuronx reports a device, else the CPU emulation.",
)
@click.option(
    "--steps",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Stop after N optimizer steps (or N forward calls of an inference script).",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=1),
    default=300,
    show_default=True,
    help="Stop the script after this many seconds.",
)
@click.option(
    "--nproc",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Start N ranks with the torchrun environment.",
)
@click.option(
    "--compare-cpu",
    is_flag=True,
    help="Rerun on the CPU and compare losses and outputs.",
)
@click.option(
    "--output-format",
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
)
@click.option(
    "--target-version",
    type=click.Choice(available_versions()),
    default="2.14",
    show_default=True,
    help="torch-neuronx family of the op compat data.",
)
def smoke_command(
    script: Path,
    args: tuple[str, ...],
    device: str,
    steps: int,
    timeout_s: float,
    nproc: int,
    compare_cpu: bool,
    output_format: str,
    target_version: str,
) -> None:
    """Run SCRIPT for a few steps on the `neuron` device and report what it did.

    Pass the script's own arguments after `--`.
    """
    if not torch_available():
        click.echo(f"neuron-migrate: error: {INSTALL_HINT}", err=True)
        click.get_current_context().exit(2)
    options = SmokeOptions(
        device=device, steps=steps, timeout_s=timeout_s, nproc=nproc, compare_cpu=compare_cpu,
        target_version=target_version, base_dir=Path.cwd(),
    )  # fmt: skip
    report = run_smoke(script, args, options)
    click.echo(
        render_json(report) if output_format == "json" else render_text(report),
        nl=False,
    )
    click.get_current_context().exit(0 if report.ok else 1)


def main() -> None:
    """`python -m neuron_migrate.smoke.command ...`"""
    smoke_command()


if __name__ == "__main__":
    main()
