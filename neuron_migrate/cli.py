"""The command line: flags -> Settings -> engine -> output. No migration logic lives here."""

from __future__ import annotations

import difflib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from neuron_migrate import __version__
from neuron_migrate.compat import available_versions

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
OUTPUT_FORMATS = ("text", "json")
_COMMANDS = ("check", "rules", "explain", "smoke", "version")


class DefaultCheckGroup(click.Group):
    """`neuron-migrate --fix path/` means `neuron-migrate check --fix path/`, as in Ruff."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h", "--version")):
            args = ["check", *args]
        return super().parse_args(ctx, args)


def _codes(values: Sequence[str]) -> tuple[str, ...]:
    """`--select NM1,NM201 --select NM3` -> ("NM1", "NM201", "NM3")."""
    return tuple(code.strip().upper() for value in values for code in value.split(",") if code.strip())


@click.group(cls=DefaultCheckGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="neuron-migrate", message="%(prog)s %(version)s")
def main() -> None:
    """Find and fix torch_xla code for the native TorchNeuron `neuron` device.

    Run `neuron-migrate check PATH` (or just `neuron-migrate PATH`) to list findings, and add
    `--fix` to rewrite what can be rewritten safely.
    """


@main.command("check")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--fix", is_flag=True, help="Apply safe fixes in place.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply fixes that may change behaviour (with --fix or --diff).")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff and write nothing.")
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable (default: all).")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable.")
@click.option("--extend-select", multiple=True, help="Rule codes or prefixes to enable on top of --select.")
@click.option("--output-format", type=click.Choice(OUTPUT_FORMATS), default="text", show_default=True)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True, help="Worker processes.")
@click.option("--exclude", multiple=True, help="Glob of files or folders to skip (adds to the defaults).")
@click.option("--target-version", type=click.Choice(available_versions()), default="2.14", show_default=True, help="torch-neuronx family to check against (one folder of rules/compat/).")
def check(paths: tuple[Path, ...], **options: Any) -> None:
    """Check PATHS (default: the current folder) for torch_xla code and APIs TorchNeuron lacks."""
    from neuron_migrate.engine.files import discover
    from neuron_migrate.engine.parallel import run_targets
    from neuron_migrate.settings import DEFAULT_EXCLUDES, Settings

    settings = Settings(
        select=_codes(options["select"]) or ("NM",),
        ignore=_codes(options["ignore"]),
        extend_select=_codes(options["extend_select"]),
        fix=options["fix"] or options["diff"],
        unsafe_fixes=options["unsafe_fixes"],
        target_version=options["target_version"],
        exclude=(*DEFAULT_EXCLUDES, *options["exclude"]),
    )
    cwd = Path.cwd()
    targets = discover(paths or (Path("."),), settings, cwd)
    results = run_targets(targets, settings, jobs=options["jobs"], write=not options["diff"])
    if options["diff"]:
        click.echo(_diff(results), nl=False)
    _emit(results, options)
    sys.exit(_exit_code(results, options))


def _emit(results: Sequence[Any], options: dict[str, Any]) -> None:
    from neuron_migrate.output import json as json_output
    from neuron_migrate.output import text as text_output

    if options["output_format"] == "json":
        click.echo(json_output.render(results), nl=False)
        return
    if options["diff"]:
        return
    click.echo(text_output.render(results, unsafe_fixes=options["unsafe_fixes"], quiet=options["quiet"]), nl=False)


def _diff(results: Sequence[Any]) -> str:
    chunks = []
    for result in results:
        if result.changed:
            lines = difflib.unified_diff(
                (result.source or "").splitlines(keepends=True),
                (result.fixed_source or "").splitlines(keepends=True),
                fromfile=f"a/{result.path}",
                tofile=f"b/{result.path}",
            )
            chunks.append("".join(line if line.endswith("\n") else line + "\n" for line in lines))
    return "".join(chunks)


def _exit_code(results: Sequence[Any], options: dict[str, Any]) -> int:
    findings = [f for r in results for f in r.findings]
    if any(f.code == "NM903" for f in findings):
        return EXIT_ERROR
    if options["diff"] and any(r.changed for r in results):
        return EXIT_FINDINGS
    if findings and not options["exit_zero"]:
        return EXIT_FINDINGS
    return EXIT_CLEAN


@main.command("rules")
@click.option("--format", "fmt", type=click.Choice(("text", "json", "markdown")), default="text", show_default=True)
def rules_command(fmt: str) -> None:
    """List every rule: code, name, severity, fix safety and summary."""
    from neuron_migrate import docs

    click.echo(docs.render_rules(fmt), nl=False)


@main.command("explain")
@click.argument("code")
def explain(code: str) -> None:
    """Explain a rule: what it flags, why, an example and the fix."""
    from neuron_migrate import docs

    text = docs.explain(code.upper())
    if text is None:
        click.echo(f"neuron-migrate: unknown rule code {code!r}; run `neuron-migrate rules` to list them", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(text, nl=False)


@main.command("version")
def version() -> None:
    """Print the version."""
    click.echo(f"neuron-migrate {__version__}")
