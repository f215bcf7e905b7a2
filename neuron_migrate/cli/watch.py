"""`check --watch`: check, then check again whenever a file it checks (or a config) changes,
clearing the screen first, as `ruff check --watch` does. Ctrl-C ends it."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click

from neuron_migrate.cli.common import EXIT_CLEAN, fail

# What the terminal's `clear` capability writes on xterm and its kin (cursor home, erase the
# screen, erase the scroll-back), as Ruff's `clearscreen` does.
CLEAR = "\x1b[H\x1b[2J\x1b[3J"
POLL_S = 0.3  # how often the files are stat'ed for a change
_REFUSED = ("stdin_filename", "add_noqa", "write_baseline", "show_files", "show_settings", "smoke_script")
_CONFIGS = ("pyproject.toml", "neuron-migrate.toml")


def watch(paths: tuple[Path, ...], options: dict[str, Any], check_once: Callable[[dict[str, Any]], None]) -> NoReturn:
    """Run `check_once` on a copy of `options` now and after every change, until Ctrl-C."""
    refused = [name for name in _REFUSED if options.get(name)]
    if refused or paths == (Path("-"),):
        flag = "--" + (refused[0].replace("_", "-").removesuffix("-script") if refused else "stdin-filename")
        fail(f"--watch checks files as they change; it does not take {flag}")
    _announce("Starting check in watch mode...")
    try:
        while True:
            _run(check_once, options)
            _announce("Watching for file changes.", clear=False)
            seen = snapshot(paths, options)
            while snapshot(paths, options) == seen:
                time.sleep(POLL_S)
            _announce("File change detected...")
    except KeyboardInterrupt:
        sys.exit(EXIT_CLEAN)


def _run(check_once: Callable[[dict[str, Any]], None], options: dict[str, Any]) -> None:
    """One check, whose exit (code or user error) ends only that run."""
    with contextlib.suppress(SystemExit):
        check_once(dict(options))
    sys.stdout.flush()


def _announce(text: str, clear: bool = True) -> None:
    if clear and sys.stdout.isatty():
        click.echo(CLEAR, nl=False)
    click.echo(f"[{time.strftime('%H:%M:%S')}] {text}")


def snapshot(paths: tuple[Path, ...], options: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """(mtime, size) of every file the check would read, and of the configs beside the paths
    and the current folder; a file that appears or goes changes it too."""
    from neuron_migrate.run import workflow

    cwd = Path.cwd()
    try:
        names = workflow.files(workflow.request_from(paths, dict(options)), cwd)
    except workflow.USER_ERRORS:
        names = []
    folders = {cwd, *(p if p.is_dir() else p.parent for p in (paths or (Path("."),)))}
    names += [str(folder / name) for folder in folders for name in _CONFIGS]
    stamps = {}
    for name in names:
        try:
            stat = os.stat(cwd / name)
        except OSError:
            continue
        stamps[name] = (stat.st_mtime_ns, stat.st_size)
    return stamps
