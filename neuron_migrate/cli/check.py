"""`neuron-migrate check`: flags -> request -> results -> report and exit code."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import click

from neuron_migrate.cli.common import EXIT_CLEAN, EXIT_FINDINGS, fail, progress, shown, write_output
from neuron_migrate.cli.emit import diff, emit, exit_code, unchecked, would_fix
from neuron_migrate.cli.options import (
    ALLOW_PLUGINS,
    CACHE_OPTIONS,
    JOBS_OPTION,
    RULE_OPTIONS,
    SCOPE_OPTIONS,
    shard_option,
)
from neuron_migrate.output_formats import CHOICES as FORMATS
from neuron_migrate.output_formats import Escaping, output_format


@click.command("check")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--fix", is_flag=True, help="Apply safe fixes in place.")
@click.option(
    "--fix-only",
    is_flag=True,
    help="Apply safe fixes in place; report only what was fixed, and exit 0 even when findings remain.",
)
@click.option(
    "--unsafe-fixes/--no-unsafe-fixes",
    default=None,
    help="Also apply fixes that may change behaviour (with --fix or --diff).",
)
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff and write nothing.")
@RULE_OPTIONS
@click.option(
    "--output-format",
    "--format",
    "output_format",
    type=click.Choice(FORMATS),
    default=None,
    envvar="NEURON_MIGRATE_OUTPUT_FORMAT",
    help="Report format (also NEURON_MIGRATE_OUTPUT_FORMAT)  [default: text]",
)
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule instead of the findings.")
@click.option(
    "--show-fixes", is_flag=True, help="List the fixes applied, per file (to stderr for machine-readable formats)."
)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option(
    "--exit-non-zero-on-fix",
    is_flag=True,
    help="Exit 1 when a fix changed a file, even if no findings remain.",
)
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@JOBS_OPTION
@SCOPE_OPTIONS
@click.option(
    "--add-noqa", is_flag=True, help="Add `# noqa: CODE` comments for every finding instead of reporting them."
)
@click.option(
    "--show-suppressed", is_flag=True, help="Also list findings hidden by `# noqa`, per-file-ignores or --baseline."
)
@click.option(
    "--baseline",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Report only findings that are not recorded in this baseline file.",
)
@click.option(
    "--write-baseline",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Record the current findings in this baseline file and exit 0.",
)
@click.option(
    "--since", metavar="REF", help="Report only findings on lines added or changed since git REF (e.g. origin/main)."
)
@click.option(
    "--stdin-filename",
    metavar="NAME",
    help="Check code read from stdin as file NAME; with --fix, print the fixed code.",
)
@click.option(
    "--smoke",
    "smoke_script",
    metavar="SCRIPT",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="After checking (and fixing), run SCRIPT for a few steps on `neuron`, real or emulated (see `neuron-migrate smoke`).",
)
@CACHE_OPTIONS
@click.option(
    "--shard",
    callback=shard_option,
    metavar="K/N",
    help="Check only shard K of N (1-based), split by path; for CI matrices.",
)
@click.option(
    "-o",
    "--output-file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the report to FILE instead of stdout.",
)
@click.option("--show-files", is_flag=True, help="List the files that would be checked, and exit.")
@click.option(
    "--show-settings",
    is_flag=True,
    help="Print the settings (after config and flags) each path is checked with, as TOML, and exit.",
)
@click.option("-w", "--watch", is_flag=True, help="Check again whenever a file changes, clearing the screen first.")
@ALLOW_PLUGINS
def check(paths: tuple[Path, ...], watch: bool, **options: Any) -> None:
    """Check PATHS (default: the current folder) for torch_xla code and APIs TorchNeuron lacks."""
    if watch:
        from neuron_migrate.cli.watch import watch as watching

        watching(paths, options, lambda given: _check_collected(paths, given))
    _check_collected(paths, options)


def _check_collected(paths: tuple[Path, ...], options: dict[str, Any]) -> None:
    from neuron_migrate.run.parallel import fewer_collections

    with fewer_collections():  # the results live until the report is printed: no need to rescan them
        _check(paths, options)


def _check(paths: tuple[Path, ...], options: dict[str, Any]) -> None:
    from neuron_migrate.run import workflow

    cwd = Path.cwd()
    options["fix"] = options["fix"] or options["fix_only"]
    if paths == (Path("-"),) and not options["stdin_filename"]:
        options["stdin_filename"] = "-"  # `check -` reads the code from stdin, as in Ruff
    try:
        request = workflow.request_from(paths, options)
        options["output_format"], options["unsafe_fixes"] = workflow.run_display(request, cwd)
        if options["show_files"] or options["show_settings"]:
            _show(request, options, cwd)
        if options["stdin_filename"]:
            _check_stdin(request, options, cwd)
        results = workflow.check_paths(request, cwd, progress(options))
        if options["write_baseline"]:
            _write_baseline(options["write_baseline"], results)
    except workflow.USER_ERRORS as exc:
        fail(str(exc))
    if not results:
        click.echo(
            "neuron-migrate: warning: no files were checked (no file under the given paths is "
            "Python, a notebook, a packaging file or a shell script, or all are excluded)",
            err=True,
        )
    if options["add_noqa"]:
        _report_noqa(results)
    if options["diff"]:
        write_output(diff(results), None)  # bytes: click would strip escape sequences from a str
        if output_format(options["output_format"]).for_people:  # the other formats list them
            click.echo(unchecked(results), nl=False, err=True)
        if not options["quiet"]:
            click.echo(would_fix(results), err=True)
    smoke_ok = True
    if options["smoke_script"] is not None:
        results, smoke_ok = _smoke(results, options, request, cwd)
    emit(results, options)
    sys.exit(exit_code(results, options) or (EXIT_FINDINGS if not smoke_ok else EXIT_CLEAN))


def _show(request: Any, options: dict[str, Any], cwd: Path) -> NoReturn:
    """`--show-files` / `--show-settings`: what a check would read, and with which settings."""
    from neuron_migrate.output import settings_toml
    from neuron_migrate.run import workflow

    lines: list[str] = []
    if options["show_files"]:
        lines += workflow.files(request, cwd)
    text = "\n".join(lines) + ("\n" if lines else "")
    if options["show_settings"]:
        text += settings_toml.render(workflow.settings_for(request))
    write_output(text, options["output_file"])
    sys.exit(EXIT_CLEAN)


def _smoke(results: list[Any], options: dict[str, Any], request: Any, cwd: Path) -> tuple[list[Any], bool]:
    """`--smoke SCRIPT`: run the (fixed) script; its NM7xx findings join the report."""
    from neuron_migrate.config import config_for
    from neuron_migrate.smoke import (
        SmokeOptions,
        render_text,
        report_findings,
        run_smoke,
    )
    from neuron_migrate.smoke.runner import INSTALL_HINT, torch_available

    if not torch_available():
        fail(INSTALL_HINT)
    version = options["target_version"] or config_for(cwd, request.config_file).target_version or "2.14"
    report = run_smoke(options["smoke_script"], (), SmokeOptions(target_version=version, base_dir=cwd))
    click.echo(render_text(report), nl=False, err=not output_format(options["output_format"]).for_people)
    return join_findings(results, report_findings(report)), report.ok


def join_findings(results: list[Any], extra: Sequence[Any]) -> list[Any]:
    """Results with `extra` findings added to the result of their file (or a new result)."""
    from dataclasses import replace

    from neuron_migrate.catalogue import by_code, load_catalogue
    from neuron_migrate.model import FileResult

    specs = by_code(load_catalogue())
    by_path: dict[str, list[Any]] = {}
    for finding in extra:
        spec = specs.get(finding.code)
        by_path.setdefault(finding.path, []).append(replace(finding, url=finding.url or (spec.url if spec else None)))
    joined = []
    for result in results:
        added = by_path.pop(result.path, [])
        joined.append(replace(result, findings=(*result.findings, *added)) if added else result)
    joined += [FileResult(path, tuple(found)) for path, found in sorted(by_path.items())]
    return joined


def _check_stdin(request: Any, options: dict[str, Any], cwd: Path) -> NoReturn:
    """`--stdin-filename NAME`: with --fix only the code goes to stdout, the report to stderr."""
    from neuron_migrate.fsio import read_stream
    from neuron_migrate.run import workflow
    from neuron_migrate.settings import Settings

    limit = Settings.max_file_bytes
    data = read_stream(sys.stdin.buffer, limit)  # at most limit + 1 bytes: `< /dev/zero` ends too
    if data is None and options["fix"]:  # no fixed code to print: the caller must keep its text
        fail(f"stdin holds more than {limit // 2**20} MiB; check a file that large by its path, or split it")
    result, output = workflow.check_stdin(data, options["stdin_filename"], request, cwd)
    if options["fix"]:
        stdout = sys.stdout.buffer
        stdout.write(output)
        stdout.flush()
        emit([result], options, err=True)
    elif options["diff"]:
        write_output(diff([result], on_disk=False), None)
    else:
        emit([result], options)
    sys.exit(exit_code([result], options))


def _write_baseline(path: Path, results: Sequence[Any]) -> NoReturn:
    from neuron_migrate.run import baseline

    count = baseline.write(path, results)
    noun = "finding" if count == 1 else "findings"
    click.echo(f"Wrote {count} {noun} to the baseline {shown(path)}.")
    sys.exit(EXIT_CLEAN)


def _report_noqa(results: Sequence[Any]) -> NoReturn:
    """`--add-noqa`: say how many directives were written; files that could not be annotated
    (unreadable, unparseable) are listed on stderr and make the exit code 1."""
    from neuron_migrate.engine.formats.textfiles import NOQA_KINDS, file_kind
    from neuron_migrate.output import text as text_output
    from neuron_migrate.output.escape import escaped

    def annotatable(path: str) -> bool:
        kind = file_kind(path)
        return kind is None or kind == "setup_py" or kind in NOQA_KINDS

    results = escaped(results, Escaping.TERMINAL)  # the lines below go to a terminal
    count = sum(1 for r in results if r.changed for f in r.findings if f.category != "tool")
    files = sum(1 for r in results if r.changed)
    problems = [f for r in results for f in r.findings if f.category == "tool"]
    for finding in problems:
        click.echo(text_output.line(finding), err=True)
    skipped = [f for r in results if not annotatable(r.path) for f in r.findings if f.category != "tool"]
    for finding in skipped:
        name = finding.path.rsplit("/", 1)[-1]
        click.echo(
            f"{text_output.line(finding)} (no `# noqa` added: {name} has no inline comments; use "
            f"per-file-ignores or a `# neuron-migrate: noqa: {finding.code}` line)",
            err=True,
        )
    problems += skipped
    click.echo(
        f"Added `# noqa` for {count} finding{'s' if count != 1 else ''} in {files} file{'s' if files != 1 else ''}."
    )
    sys.exit(EXIT_FINDINGS if problems else EXIT_CLEAN)
