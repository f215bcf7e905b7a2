"""The command line: flags -> Settings -> engine -> output. No migration logic lives here."""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from neuron_migrate import __version__
from neuron_migrate.output import FORMATS as OUTPUT_FORMATS

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
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


def _shard_option(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, int] | None:
    from neuron_migrate.engine.shard import ShardError, parse_shard

    try:
        return None if value is None else parse_shard(value)
    except ShardError as exc:
        raise click.BadParameter(str(exc)) from None


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
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule instead of the findings.")
@click.option("--show-fixes", is_flag=True, help="List the fixes applied, per file (to stderr for machine-readable formats).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True, help="Worker processes.")
@click.option("--exclude", multiple=True, help="Glob of files or folders to skip (adds to the defaults).")
@click.option("--target-version", type=click.Choice(("2.13", "2.14")), default="2.14", show_default=True, help="torch-neuronx family to check against.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the result cache.")
@click.option("--cache-dir", type=click.Path(path_type=Path), envvar="NEURON_MIGRATE_CACHE_DIR", help="Cache folder [default: ./.neuron_migrate_cache].")
@click.option("--shard", callback=_shard_option, metavar="K/N", help="Check only shard K of N (1-based), split by path; for CI matrices.")
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
    if options["shard"] is not None:
        from neuron_migrate.engine.shard import select_shard

        targets = select_shard(targets, *options["shard"])
    cache = None
    if not options["no_cache"]:
        from neuron_migrate.engine.cache import CACHE_DIR_NAME, open_cache

        cache = open_cache(options["cache_dir"] or cwd / CACHE_DIR_NAME, settings, cwd)
    results = run_targets(targets, settings, jobs=options["jobs"], write=not options["diff"], cache=cache)
    if options["diff"]:
        click.echo(_diff(results), nl=False)
    _emit(results, options)
    sys.exit(_exit_code(results, options))


def _emit(results: Sequence[Any], options: dict[str, Any]) -> None:
    from neuron_migrate.output import show_fixes, statistics

    fmt = options["output_format"]
    human = fmt in ("text", "full")
    if options["statistics"]:
        as_json = fmt in ("json", "json-lines")
        click.echo(statistics.render(results, options["unsafe_fixes"], as_json=as_json), nl=False)
    elif not (options["diff"] and human):
        click.echo(_report(fmt, results, options), nl=False)
    if options["show_fixes"]:
        click.echo(show_fixes.render(results), nl=False, err=not human)


def _report(fmt: str, results: Sequence[Any], options: dict[str, Any]) -> str:
    """The report in `fmt`; for `github`, also append the step summary when Actions asks for one."""
    from neuron_migrate.catalogue import load_catalogue
    from neuron_migrate.output import RenderOptions, render

    cwd = Path.cwd().resolve()
    render_options = RenderOptions(
        unsafe_fixes=options["unsafe_fixes"],
        quiet=options["quiet"],
        root=_repository_root(cwd).as_posix(),
        cwd=cwd.as_posix(),
        rules=load_catalogue() if fmt == "sarif" else (),
    )
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if fmt == "github" and summary_file:
        _append_step_summary(Path(summary_file), results, render_options)
    return render(fmt, results, render_options)


def _repository_root(cwd: Path) -> Path:
    """The nearest folder at or above `cwd` holding `.git` (a folder, or a file in worktrees)."""
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return cwd


def _append_step_summary(path: Path, results: Sequence[Any], options: Any) -> None:
    """Append the Markdown summary, keeping the file under GitHub's 1 MiB limit."""
    from neuron_migrate.output import github

    try:
        used = path.stat().st_size if path.exists() else 0
        room = github.SUMMARY_LIMIT - used - 1
        if room < 1024:
            click.echo(f"neuron-migrate: {path} is full; no step summary written", err=True)
            return
        separator = "\n" if used else ""
        text = github.summary(results, root=options.root, cwd=options.cwd, limit=room - len(separator))
        with path.open("a", encoding="utf-8") as handle:
            handle.write(separator + text)
    except OSError as exc:
        click.echo(f"neuron-migrate: cannot write the step summary to {path}: {exc.strerror or exc}", err=True)


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
    if any(f.code in ("NM903", "NM908") for f in findings):
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
