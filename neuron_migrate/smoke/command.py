"""`neuron-migrate smoke SCRIPT [-- ARGS...]`: run a script on `neuron` (real or emulated).

Importing this module never imports torch; `neuron-migrate check` stays torch-free.
"""

from __future__ import annotations

from pathlib import Path

import click

from neuron_migrate.compat import available_versions
from neuron_migrate.smoke.containment import SmokeInterrupted
from neuron_migrate.smoke.rank_parity import EACH, MEAN, ParityRequest
from neuron_migrate.smoke.render import render_json, render_text
from neuron_migrate.smoke.runner import (
    INSTALL_HINT,
    SmokeOptions,
    run_smoke,
    torch_available,
)

STOPPED = "the script's processes were ended and smoke's temporary folder removed"


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
    "--parity",
    is_flag=True,
    help="Also run 1 rank and fail unless the --nproc N run (default 2) gives its numbers.",
)
@click.option(
    "--parity-ranks",
    type=click.Choice([EACH, MEAN]),
    default=EACH,
    show_default=True,
    help="each: every rank must match 1 rank (tensor parallel); mean: their mean must (data parallel).",
)
@click.option(
    "--parity-value",
    metavar="NAME",
    default="",
    help="Compare variable NAME (or NAME.attr) where the optimizer steps, not the losses and output.",
)
@click.option("--rtol", type=click.FloatRange(min=0), default=None, help="Relative tolerance of --parity.")
@click.option("--atol", type=click.FloatRange(min=0), default=None, help="Absolute tolerance of --parity.")
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
    parity: bool,
    parity_ranks: str,
    parity_value: str,
    rtol: float | None,
    atol: float | None,
    output_format: str,
    target_version: str,
) -> None:
    """Run SCRIPT for a few steps on the `neuron` device and report what it did.

    Pass the script's own arguments after `--`. With `--parity`, also run it on 1 rank and
    compare the losses (or `--parity-value`) step by step with the N-rank run.
    """
    if not torch_available():
        click.echo(f"neuron-migrate: error: {INSTALL_HINT}", err=True)
        click.get_current_context().exit(2)
    request = _parity_request(parity, parity_ranks, parity_value, rtol, atol)
    if request is not None and _default(click.get_current_context(), "nproc"):
        nproc = 2
    if request is not None and nproc < 2:
        raise click.UsageError("`--parity` compares N ranks with 1: pass `--nproc N` with N >= 2")
    options = SmokeOptions(
        device=device, steps=steps, timeout_s=timeout_s, nproc=nproc, compare_cpu=compare_cpu,
        target_version=target_version, base_dir=Path.cwd(), parity=request,
    )  # fmt: skip
    try:
        report = run_smoke(script, args, options)
    except SmokeInterrupted as stop:  # exits 128 + the signal's number, as a killed command does
        click.echo(f"neuron-migrate: smoke stopped by {stop.name}; {STOPPED}", err=True)
        raise
    click.echo(
        render_json(report) if output_format == "json" else render_text(report),
        nl=False,
    )
    click.get_current_context().exit(0 if report.ok else 1)


def _parity_request(
    parity: bool, ranks: str, value: str, rtol: float | None, atol: float | None
) -> ParityRequest | None:
    """The `--parity` request, or None; the other parity flags without `--parity` are an error."""
    if parity:
        if value and not value.replace(".", "_").isidentifier():
            raise click.BadParameter(f"{value!r} is not a variable name", param_hint="--parity-value")
        return ParityRequest(ranks, value, rtol, atol)
    ctx = click.get_current_context()
    given = [f"--{name.replace('_', '-')}" for name in ("parity_ranks", "parity_value", "rtol", "atol")]
    used = [flag for flag in given if not _default(ctx, flag[2:].replace("-", "_"))]
    if used:
        raise click.UsageError(f"{', '.join(used)} only applies with `--parity`")
    return None


def _default(ctx: click.Context, name: str) -> bool:
    """True when option `name` was not given on the command line."""
    source = ctx.get_parameter_source(name)
    return source in (None, click.core.ParameterSource.DEFAULT)


def main() -> None:
    """`python -m neuron_migrate.smoke.command ...`"""
    smoke_command()


if __name__ == "__main__":
    main()
