"""What `check` prints once the results are in: the report in its format, the extras
(`--show-fixes`, `--show-suppressed`, the Actions step summary), the diff, and the exit code."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from neuron_migrate.cli.common import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, write_output
from neuron_migrate.output_formats import Escaping, output_format


def would_fix(results: Sequence[Any]) -> str:
    """`--diff`'s summary on stderr, as Ruff prints it."""
    count = sum(len(r.fixed) for r in results if r.changed)
    files = sum(1 for r in results if r.changed)
    if not count:
        return "No fixes available."
    return f"Would fix {count} finding{'s' if count != 1 else ''} in {files} file{'s' if files != 1 else ''}."


def unchecked(results: Sequence[Any]) -> str:
    """`--diff`'s lines for the files it could not read, check or fix (the NM9xx findings, but for
    the unused `# noqa`, which the patch removes), one text line each as `--add-noqa` lists them:
    the patch leaves such a file out, and nothing else in a text report would say why."""
    from neuron_migrate.output import text as text_output
    from neuron_migrate.output.escape import escaped

    shown = escaped(results, Escaping.TERMINAL)
    problems = sorted(
        (f for r in shown for f in r.findings if f.category == "tool" and f.code != "NM910"), key=lambda f: f.sort_key
    )
    return "".join(text_output.line(f) + "\n" for f in problems)


def emit(results: Sequence[Any], options: dict[str, Any], err: bool = False) -> None:
    """The report on stdout (stderr when stdout carries fixed code), then optional extras."""
    fmt = options["output_format"]
    row = output_format(fmt)
    human = row.for_people
    report = None
    if options.get("fix_only"):
        report = "" if options["quiet"] else _fixed_summary(results)
    elif options["statistics"]:
        from neuron_migrate.output import statistics
        from neuron_migrate.output import text as text_output

        as_json = fmt in ("json", "json-lines")
        report = statistics.render(results, options["unsafe_fixes"], as_json=as_json)
        if not as_json and not options["quiet"]:
            report += "\n".join(text_output.summary(results, options["unsafe_fixes"])) + "\n"
    elif not (options["diff"] and human):
        report = _report(fmt, results, options)
    if report is not None:
        if err:
            from neuron_migrate.fsio import report_bytes

            click.echo(report_bytes(report, row.escaping), nl=False, err=True)
        else:
            write_output(report, options.get("output_file"), row.escaping)
    if options["show_fixes"]:
        from neuron_migrate.output import show_fixes

        click.echo(show_fixes.render(results), nl=False, err=err or not human)
    if options["show_suppressed"]:
        _emit_suppressed(results, to_stderr=err or not human)


def _fixed_summary(results: Sequence[Any]) -> str:
    """`--fix-only`: what was fixed; the findings left are for `neuron-migrate check` to list."""
    fixed = sum(len(r.fixed) for r in results)
    left = sum(1 for r in results for _ in r.findings)
    files = sum(1 for r in results if r.changed)
    text = f"Fixed {fixed} finding{'s' if fixed != 1 else ''} in {files} file{'s' if files != 1 else ''}"
    return text + (f" ({left} left; `neuron-migrate check` lists them).\n" if left else ".\n")


def _report(fmt: str, results: Sequence[Any], options: dict[str, Any]) -> str:
    """The report in `fmt`; for `github`, also append the step summary when Actions asks for one."""
    from neuron_migrate.output import RenderOptions, render

    cwd = Path.cwd().resolve()
    render_options = RenderOptions(
        unsafe_fixes=options["unsafe_fixes"],
        quiet=options["quiet"],
        root=_repository_root(cwd).as_posix(),
        cwd=cwd.as_posix(),
        rules=_catalogue() if output_format(fmt).describes_rules else (),
        color=_color(options),
    )
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if fmt == "github" and summary_file:
        _append_step_summary(Path(summary_file), results, render_options)
    return render(fmt, results, render_options)


def _color(options: dict[str, Any]) -> bool:
    """ANSI colour for a report on stdout: a terminal, NO_COLOR and FORCE_COLOR decide."""
    from neuron_migrate.output import color

    return options.get("output_file") is None and color.wanted(sys.stdout, os.environ)


def _catalogue() -> Any:
    from neuron_migrate.catalogue import load_catalogue

    return load_catalogue()


def _repository_root(cwd: Path) -> Path:
    """The nearest folder at or above `cwd` holding `.git` (a folder, or a file in worktrees)."""
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return cwd


def _append_step_summary(path: Path, results: Sequence[Any], options: Any) -> None:
    """Append the Markdown summary, keeping the file under GitHub's 1 MiB limit."""
    from neuron_migrate.fsio import is_regular, visible_name
    from neuron_migrate.output import github

    if os.path.lexists(path) and not is_regular(path):
        click.echo(f"neuron-migrate: warning: {path} is not a regular file; no step summary written", err=True)
        return
    try:
        used = path.stat().st_size if path.exists() else 0
        room = github.SUMMARY_LIMIT - used - 1
        if room < 1024:
            click.echo(f"neuron-migrate: warning: {path} is full; no step summary written", err=True)
            return
        separator = "\n" if used else ""
        text = github.summary(results, root=options.root, cwd=options.cwd, limit=room - len(separator))
        with path.open("ab") as handle:
            handle.write(visible_name(separator + text).encode("utf-8"))
    except OSError as exc:
        click.echo(f"neuron-migrate: warning: cannot write the step summary to {path}: {exc.strerror or exc}", err=True)


def _emit_suppressed(results: Sequence[Any], to_stderr: bool) -> None:
    """The suppressed findings, after the report (on stderr when stdout is machine-readable)."""
    from neuron_migrate.output import text as text_output
    from neuron_migrate.output.escape import escaped

    shown = escaped(results, Escaping.TERMINAL)
    suppressed = sorted((f for r in shown for f in r.suppressed), key=lambda f: f.sort_key)
    lines = [f"Suppressed {len(suppressed)} finding{'s' if len(suppressed) != 1 else ''}:"]
    lines.extend(text_output.line(f) for f in suppressed)
    click.echo("\n".join(lines), err=to_stderr)


def diff(results: Sequence[Any], on_disk: bool = True) -> str:
    """The `--diff` patch; `on_disk`: the results' paths name the files (not stdin)."""
    from neuron_migrate.output import patch

    changed = [r for r in results if r.changed]
    return patch.render((r.path, r.source or "", r.fixed_source or "", on_disk and _has_bom(r.path)) for r in changed)


def _has_bom(path: str) -> bool:
    """Whether the file starts with a UTF-8 byte order mark (the decoded text no longer shows it)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(3) == b"\xef\xbb\xbf"
    except OSError:
        return False


def exit_code(results: Sequence[Any], options: dict[str, Any]) -> int:
    """2 for an I/O or internal error; 1 for changes `--diff` shows, for files a fix changed
    under `--exit-non-zero-on-fix`, or for findings left; else 0. `--exit-zero` wins over all
    but errors, as in Ruff."""
    findings = [f for r in results for f in r.findings]
    if any(f.code in ("NM903", "NM908") for f in findings):
        return EXIT_ERROR
    if options["exit_zero"]:
        return EXIT_CLEAN
    if options["diff"] and any(r.changed for r in results):
        return EXIT_FINDINGS
    if options.get("exit_non_zero_on_fix") and options["fix"] and any(r.changed for r in results):
        return EXIT_FINDINGS
    if findings and not options.get("fix_only"):
        return EXIT_FINDINGS
    return EXIT_CLEAN
