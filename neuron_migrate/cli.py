"""The command line: flags -> Settings -> engine -> output. No migration logic lives here."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from neuron_migrate import __version__
from neuron_migrate.data import available_versions
from neuron_migrate.settings import OUTPUT_FORMATS as FORMATS
from neuron_migrate.settings import TARGETS

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


# Subcommands imported only when used, so start-up (`--version`, pre-commit) skips them.
_LAZY_COMMANDS = {"smoke": ("neuron_migrate.smoke.command", "smoke_command")}


class DefaultCheckGroup(click.Group):
    """`neuron-migrate --fix path/` means `neuron-migrate check --fix path/`, as in Ruff."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        known = (*self.commands, *_LAZY_COMMANDS)
        if not args or (args[0] not in known and args[0] not in ("--help", "-h", "--version")):
            _reject_mistyped_command(args[0] if args else "-", sorted(known))
            args = ["check", *args]
        return super().parse_args(ctx, args)

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Click's own errors (a bad option, a missing value) in our one style:
        `neuron-migrate: error: ...` on stderr and exit code 2."""
        _names_never_stop_output()
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            # With standalone_mode=False, Click returns the code a command exits with
            # (`ctx.exit(1)`) instead of raising: it must reach the shell.
            code = super().main(args, prog_name or "neuron-migrate", complete_var, standalone_mode=False, **extra)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.Abort:
            _fail("aborted")
        except click.ClickException as exc:
            command = (
                exc.ctx.command_path if isinstance(exc, click.UsageError) and exc.ctx is not None else "neuron-migrate"
            )
            _fail(f"{_lower_first(exc.format_message().rstrip('.'))} (see `{command} --help`)")
        sys.exit(code if isinstance(code, int) else EXIT_CLEAN)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *_LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in _LAZY_COMMANDS and name not in self.commands:
            import importlib

            module, attribute = _LAZY_COMMANDS[name]
            self.add_command(getattr(importlib.import_module(module), attribute), name)
        return super().get_command(ctx, name)


def _names_never_stop_output() -> None:
    """Text on stdout keeps the bytes of file names that are not UTF-8 (as `ls` prints them)
    instead of raising UnicodeEncodeError; stderr already escapes them."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None and getattr(sys.stdout, "errors", "") == "strict":
        with contextlib.suppress(ValueError, OSError):
            reconfigure(errors="surrogateescape")


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


def _reject_mistyped_command(word: str, commands: Sequence[str]) -> None:
    """`neuron-migrate chek` is a mistyped command, not a path to check: no such file exists
    and the word is close to a command name, or a bare word that names nothing."""
    if word.startswith("-") or os.path.exists(word):
        return
    import difflib

    close = difflib.get_close_matches(word, commands, n=1, cutoff=0.6)
    if close:
        _fail(f"unknown command '{word}'; did you mean '{close[0]}'?")
    if word.isalpha() and word.islower():
        _fail(f"unknown command '{word}', and no file or folder has that name; commands: {', '.join(commands)}")


def _shard_option(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, int] | None:
    from neuron_migrate.run.shard import ShardError, parse_shard

    try:
        return None if value is None else parse_shard(value)
    except ShardError as exc:
        raise click.BadParameter(str(exc)) from None


def _families_option(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...] | None:
    from neuron_migrate.config import ConfigError, parse_families

    if value is None:
        return None
    try:
        return parse_families([part.strip() for part in value.split(",") if part.strip()], "--from")
    except ConfigError as exc:
        raise click.BadParameter(str(exc).removeprefix("--from: ")) from None


def _allow_plugins(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        from neuron_migrate import trust

        trust.allow()


_ALLOW_PLUGINS = click.option(
    "--allow-plugins",
    is_flag=True,
    is_eager=True,
    expose_value=False,
    callback=_allow_plugins,
    help="Trust the config: import the Python modules its `plugins` names (also NEURON_MIGRATE_ALLOW_PLUGINS=1).",
)


F = TypeVar("F", bound=Callable[..., Any])


def _options(*options: Callable[[F], F]) -> Callable[[F], F]:
    """Several click options as one decorator, in the order given (as `--help` lists them)."""

    def apply(command: F) -> F:
        for option in reversed(options):
            command = option(command)
        return command

    return apply


# The options `check` and `report` share, written once so the two never drift apart.
_RULE_OPTIONS = _options(
    click.option("--select", multiple=True, help="Rule codes or prefixes to enable (default: all)."),
    click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable."),
    click.option("--extend-select", multiple=True, help="Rule codes or prefixes to enable on top of --select."),
)
_SCOPE_OPTIONS = _options(
    click.option(
        "--exclude",
        multiple=True,
        help="Glob of files or folders to skip; replaces the default excludes (and the config's `exclude`).",
    ),
    click.option(
        "--extend-exclude", multiple=True, help="Glob of files or folders to skip, on top of the default excludes."
    ),
    click.option(
        "--respect-gitignore/--no-respect-gitignore",
        default=None,
        help="Skip files git ignores (.gitignore, .git/info/exclude) when walking folders  [default: respect]",
    ),
    click.option(
        "--target-version",
        type=click.Choice(available_versions()),
        default=None,
        help="torch-neuronx family to check against  [default: 2.14]",
    ),
    click.option(
        "--from",
        "families",
        callback=_families_option,
        metavar="xla,cuda",
        help="Code to migrate from: torch_xla rules (`xla`), CUDA rules (`cuda`), or both  [default: xla]",
    ),
    click.option(
        "--target",
        type=click.Choice(TARGETS),
        default=None,
        help="Write `neuron` code, or device-agnostic `torch.accelerator` code  [default: neuron]",
    ),
    click.option(
        "--config",
        "config_file",
        type=click.Path(path_type=Path, dir_okay=False),
        help="Use this pyproject.toml or neuron-migrate.toml instead of the nearest one.",
    ),
)
_JOBS_OPTION = click.option(
    "-j", "--jobs", type=click.IntRange(min=1), default=None, help="Worker processes  [default: the usable CPU cores]"
)
_CACHE_OPTIONS = _options(
    click.option("--no-cache", is_flag=True, help="Neither read nor write the result cache."),
    click.option(
        "--cache-dir",
        type=click.Path(path_type=Path, file_okay=False),
        envvar="NEURON_MIGRATE_CACHE_DIR",
        help="Result cache folder  [default: ./.neuron_migrate_cache]",
    ),
)


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
@_RULE_OPTIONS
@click.option(
    "--output-format",
    "--format",
    "output_format",
    type=click.Choice(FORMATS),
    default=None,
    help="Report format  [default: text]",
)
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule instead of the findings.")
@click.option(
    "--show-fixes", is_flag=True, help="List the fixes applied, per file (to stderr for machine-readable formats)."
)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@_JOBS_OPTION
@_SCOPE_OPTIONS
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
@_CACHE_OPTIONS
@click.option(
    "--shard",
    callback=_shard_option,
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
    help="Print the settings (after config and flags) each path is checked with, and exit.",
)
@_ALLOW_PLUGINS
def check(paths: tuple[Path, ...], **options: Any) -> None:
    """Check PATHS (default: the current folder) for torch_xla code and APIs TorchNeuron lacks."""
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
        results = workflow.check_paths(request, cwd, _progress(options))
        if options["write_baseline"]:
            _write_baseline(options["write_baseline"], results)
    except workflow.USER_ERRORS as exc:
        _fail(str(exc))
    if not results:
        click.echo(
            "neuron-migrate: warning: no files were checked (no file under the given paths is "
            "Python, a notebook, a packaging file or a shell script, or all are excluded)",
            err=True,
        )
    if options["add_noqa"]:
        _report_noqa(results)
    if options["diff"]:
        click.echo(_diff(results), nl=False)
        if not options["quiet"]:
            click.echo(_would_fix(results), err=True)
    smoke_ok = True
    if options["smoke_script"] is not None:
        results, smoke_ok = _smoke(results, options, request, cwd)
    _emit(results, options)
    sys.exit(_exit_code(results, options) or (EXIT_FINDINGS if not smoke_ok else EXIT_CLEAN))


def _would_fix(results: Sequence[Any]) -> str:
    """`--diff`'s summary on stderr, as Ruff prints it."""
    count = sum(len(r.fixed) for r in results if r.changed)
    files = sum(1 for r in results if r.changed)
    if not count:
        return "No fixes available."
    return f"Would fix {count} finding{'s' if count != 1 else ''} in {files} file{'s' if files != 1 else ''}."


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
    _write_output(text, options)
    sys.exit(EXIT_CLEAN)


def _write_output(text: str, options: dict[str, Any], fmt: str = "text", target: Path | None = None) -> None:
    """The report: to `--output-file` (or `target`) when given, else stdout. Bytes either way:
    file names that are not UTF-8 never stop a report (`fsio.report_bytes`). Colour (ANSI) is in
    the text only when it was asked for (`_color`)."""
    from neuron_migrate.fsio import report_bytes

    data = report_bytes(text, fmt)
    target = target if target is not None else options.get("output_file")
    if target is None:
        click.echo(data, nl=False)
        return
    from neuron_migrate.engine.writeback import OutputRefused, write_output

    try:
        write_output(Path(target), data)
    except OutputRefused as exc:
        _fail(f"cannot write {_shown(target)}: {exc}; name a regular file or a new path")
    except OSError as exc:
        _fail(f"cannot write {_shown(target)}: {exc.strerror or exc}")


def _shown(path: Path) -> str:
    from neuron_migrate.fsio import visible_name

    return visible_name(os.fspath(path))


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
        _fail(INSTALL_HINT)
    version = options["target_version"] or config_for(cwd, request.config_file).target_version or "2.14"
    report = run_smoke(options["smoke_script"], (), SmokeOptions(target_version=version, base_dir=cwd))
    human = options["output_format"] in ("text", "full")
    click.echo(render_text(report), nl=False, err=not human)
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


def _fail(message: str) -> NoReturn:
    """A user error (bad config, git, baseline, flags): one line on stderr, exit 2."""
    click.echo(f"neuron-migrate: error: {message}", err=True)
    sys.exit(EXIT_ERROR)


def _progress(options: dict[str, Any]) -> Callable[[int], Callable[[Any], object] | None]:
    """A progress bar on stderr for many files, only on a terminal and outside CI."""
    from neuron_migrate.run import progress

    def start(total: int) -> Callable[[Any], object] | None:
        stream = _stderr()
        if options["quiet"] or not progress.wanted(stream, os.environ, total):
            return None
        bar = progress.ProgressBar(stream, total)

        def advance(result: Any) -> None:
            bar.advance()
            if bar.done >= total:
                bar.close()

        return advance

    return start


def _stderr() -> Any:
    """The text stream the progress bar draws on (a function, so tests can give it a terminal)."""
    return sys.stderr


def _check_stdin(request: Any, options: dict[str, Any], cwd: Path) -> NoReturn:
    """`--stdin-filename NAME`: with --fix only the code goes to stdout, the report to stderr."""
    from neuron_migrate.fsio import read_stream
    from neuron_migrate.run import workflow
    from neuron_migrate.settings import Settings

    limit = Settings.max_file_bytes
    data = read_stream(sys.stdin.buffer, limit)  # at most limit + 1 bytes: `< /dev/zero` ends too
    if data is None and options["fix"]:  # no fixed code to print: the caller must keep its text
        _fail(f"stdin holds more than {limit // 2**20} MiB; check a file that large by its path, or split it")
    result, output = workflow.check_stdin(data, options["stdin_filename"], request, cwd)
    if options["fix"]:
        stdout = sys.stdout.buffer
        stdout.write(output)
        stdout.flush()
        _emit([result], options, err=True)
    elif options["diff"]:
        click.echo(_diff([result], on_disk=False), nl=False)
    else:
        _emit([result], options)
    sys.exit(_exit_code([result], options))


def _write_baseline(path: Path, results: Sequence[Any]) -> NoReturn:
    from neuron_migrate.run import baseline

    count = baseline.write(path, results)
    noun = "finding" if count == 1 else "findings"
    click.echo(f"Wrote {count} {noun} to the baseline {_shown(path)}.")
    sys.exit(EXIT_CLEAN)


def _report_noqa(results: Sequence[Any]) -> NoReturn:
    """`--add-noqa`: say how many directives were written; files that could not be annotated
    (unreadable, unparseable) are listed on stderr and make the exit code 1."""
    from neuron_migrate.engine.formats.textfiles import NOQA_KINDS, file_kind
    from neuron_migrate.output import text as text_output

    def annotatable(path: str) -> bool:
        kind = file_kind(path)
        return kind is None or kind == "setup_py" or kind in NOQA_KINDS

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


def _emit(results: Sequence[Any], options: dict[str, Any], err: bool = False) -> None:
    """The report on stdout (stderr when stdout carries fixed code), then optional extras."""
    fmt = options["output_format"]
    human = fmt in ("text", "full")
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

            click.echo(report_bytes(report, fmt), nl=False, err=True)
        else:
            _write_output(report, options, fmt)
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
        rules=_catalogue() if fmt == "sarif" else (),  # only SARIF describes the rules
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

    suppressed = sorted((f for r in results for f in r.suppressed), key=lambda f: f.sort_key)
    lines = [f"Suppressed {len(suppressed)} finding{'s' if len(suppressed) != 1 else ''}:"]
    lines.extend(text_output.line(f) for f in suppressed)
    click.echo("\n".join(lines), err=to_stderr)


def _diff(results: Sequence[Any], on_disk: bool = True) -> str:
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


def _exit_code(results: Sequence[Any], options: dict[str, Any]) -> int:
    findings = [f for r in results for f in r.findings]
    if any(f.code in ("NM903", "NM908") for f in findings):
        return EXIT_ERROR
    if options["diff"] and any(r.changed for r in results):
        return EXIT_FINDINGS
    if findings and not options["exit_zero"] and not options.get("fix_only"):
        return EXIT_FINDINGS
    return EXIT_CLEAN


@main.command("report")
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
@_RULE_OPTIONS
@_SCOPE_OPTIONS
@_JOBS_OPTION
@_CACHE_OPTIONS
@click.option("-q", "--quiet", is_flag=True, help="No progress line and no closing message.")
@_ALLOW_PLUGINS
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
            built = collect(paths, options, cwd, smoke=smoke, progress=_progress({"quiet": quiet}))
            if compare_file is not None:
                built = with_comparison(built, compare_file)
            text = report.render(fmt, built)
    except (*workflow.USER_ERRORS, CompareError) as exc:
        _fail(str(exc))
    _write_output(text, {}, fmt, output)
    if output is not None and not quiet:
        click.echo(f"Wrote the {fmt} report to {_shown(output)}", err=True)


def _smoke_report(script: Path, options: dict[str, Any], cwd: Path) -> Any:
    from neuron_migrate.config import config_for
    from neuron_migrate.smoke import SmokeOptions, run_smoke
    from neuron_migrate.smoke.runner import INSTALL_HINT, torch_available

    if not torch_available():
        _fail(INSTALL_HINT)
    version = options["target_version"] or config_for(cwd, options["config_file"]).target_version or "2.14"
    return run_smoke(script, (), SmokeOptions(target_version=version, base_dir=cwd))


_CONFIG_OPTION = click.option(
    "--config", "config_file", type=click.Path(path_type=Path, dir_okay=False),
    help="Read the project's own rules (extend-rules, plugins) from this config instead of the nearest one.",
)  # fmt: skip


def _project_rules(config_file: Path | None) -> Any:
    """The registry with the project's own rules, from the config governing the current folder."""
    from neuron_migrate.config import ConfigError, config_for
    from neuron_migrate.registry import registry

    try:
        return registry(config_for(Path.cwd(), config_file).rule_sources)
    except ConfigError as exc:
        _fail(str(exc))


@main.command("rules")
@click.option(
    "--format",
    "--output-format",
    "fmt",
    type=click.Choice(("text", "json", "markdown")),
    default="text",
    show_default=True,
    help="Output format.",
)
@_CONFIG_OPTION
@_ALLOW_PLUGINS
def rules_command(fmt: str, config_file: Path | None) -> None:
    """List every rule (the project's own too): code, name, severity, fix safety and summary."""
    from neuron_migrate import docs

    click.echo(docs.render_rules(fmt, _project_rules(config_file)), nl=False)


@main.command("explain")
@click.argument("code")
@_CONFIG_OPTION
@_ALLOW_PLUGINS
def explain(code: str, config_file: Path | None) -> None:
    """Explain a rule: what it flags, why, an example and the fix."""
    from neuron_migrate import docs

    rules = _project_rules(config_file)
    text = docs.explain(code.upper(), rules) or docs.explain(code, rules)
    if text is None:
        close = docs.similar(code, rules)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        _fail(f"unknown rule code {code!r}; {hint}run `neuron-migrate rules` to list them")
    click.echo(text, nl=False)


@main.command("version")
def version() -> None:
    """Print the version."""
    click.echo(f"neuron-migrate {__version__}")
