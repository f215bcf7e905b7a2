"""`neuron-migrate report`: the migration plan of a tree (html, md or json)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from neuron_migrate.cli.common import fail, progress, shown, write_output
from neuron_migrate.cli.options import ALLOW_PLUGINS, CACHE_OPTIONS, JOBS_OPTION, RULE_OPTIONS, SCOPE_OPTIONS
from neuron_migrate.output_formats import Escaping


@click.command(
    "report",
    short_help="Plan the migration of PATHS: status per file, the work in order, blockers and the effort.",
)
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--format",
    "--output-format",
    "fmt",
    type=click.Choice(("html", "md", "json")),
    default="html",
    show_default=True,
    help="Report format.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the report to FILE instead of stdout.",
)
@click.option(
    "--since",
    metavar="REF",
    help="The migration started at git REF: files that had findings there and have none now are `done`.",
)
@click.option(
    "--baseline",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Baseline file (`check --write-baseline`) from before the migration: files it records with none left are `done`.",
)
@click.option(
    "--compare",
    "compare_file",
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="OLD.json",
    help="Show what changed since this earlier `report --format json`.",
)
@click.option(
    "--smoke",
    "smoke_script",
    metavar="SCRIPT",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Also run SCRIPT for a few steps on `neuron` and include the results.",
)
@RULE_OPTIONS
@SCOPE_OPTIONS
@JOBS_OPTION
@CACHE_OPTIONS
@click.option("-q", "--quiet", is_flag=True, help="No progress line and no closing message.")
@ALLOW_PLUGINS
def report_command(
    paths: tuple[Path, ...],
    fmt: str,
    output: Path | None,
    compare_file: Path | None,
    smoke_script: Path | None,
    quiet: bool,
    **options: Any,
) -> None:
    """Plan the migration of PATHS: true status per file, a roll-up by folder, the work in order
    (most imported first), blockers, an effort range and, with --compare, progress since an earlier
    report (html, md or json). Counts equal `check`'s for the same settings; never writes source files."""
    from neuron_migrate import report
    from neuron_migrate.report.command import collect
    from neuron_migrate.report.compare import CompareError, with_comparison
    from neuron_migrate.run import workflow
    from neuron_migrate.run.parallel import fewer_collections

    cwd = Path.cwd()
    options["jobs"] = options["jobs"] or workflow.usable_cores()
    smoke = _smoke_report(smoke_script, options, cwd) if smoke_script is not None else None
    try:
        with fewer_collections():  # as in `check`: the files' results and facts live until rendered
            built = collect(paths, options, cwd, smoke=smoke, progress=progress({"quiet": quiet}))
            if compare_file is not None:
                built = with_comparison(built, compare_file)
            text = report.render(fmt, built)
    except (*workflow.USER_ERRORS, CompareError) as exc:
        fail(str(exc))
    write_output(text, output, Escaping.JSON if fmt == "json" else Escaping.MARKUP)
    if output is not None and not quiet:
        click.echo(f"Wrote the {fmt} report to {shown(output)}", err=True)


def _smoke_report(script: Path, options: dict[str, Any], cwd: Path) -> Any:
    from neuron_migrate.config import config_for
    from neuron_migrate.smoke import SmokeOptions, run_smoke
    from neuron_migrate.smoke.runner import INSTALL_HINT, torch_available

    if not torch_available():
        fail(INSTALL_HINT)
    version = options["target_version"] or config_for(cwd, options["config_file"]).target_version or "2.14"
    return run_smoke(script, (), SmokeOptions(target_version=version, base_dir=cwd))
