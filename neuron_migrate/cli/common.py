"""What every command shares: exit codes, the one-line user error, the report's destination
and the progress bar."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click

from neuron_migrate.output_formats import Escaping

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def write_output(text: str, target: Path | None, escaping: Escaping = Escaping.TERMINAL) -> None:
    """The report: to `target` (`--output-file`) when given, else stdout. Bytes either way:
    file names that are not UTF-8 never stop a report (`fsio.report_bytes`). Colour (ANSI) is in
    the text only when it was asked for (`emit._color`)."""
    from neuron_migrate.fsio import report_bytes

    data = report_bytes(text, escaping)
    if target is None:
        click.echo(data, nl=False)
        return
    from neuron_migrate.engine.writeback import OutputRefused
    from neuron_migrate.engine.writeback import write_output as write_file

    try:
        write_file(Path(target), data)
    except OutputRefused as exc:
        fail(f"cannot write {shown(target)}: {exc}; name a regular file or a new path")
    except OSError as exc:
        fail(f"cannot write {shown(target)}: {exc.strerror or exc}")


def shown(path: Path) -> str:
    from neuron_migrate.fsio import visible_name

    return visible_name(os.fspath(path))


def fail(message: str) -> NoReturn:
    """A user error (bad config, git, baseline, flags): one line on stderr, exit 2."""
    click.echo(f"neuron-migrate: error: {message}", err=True)
    sys.exit(EXIT_ERROR)


def progress(options: dict[str, Any]) -> Callable[[int], Callable[[Any], object] | None]:
    """A progress bar on stderr for many files, only on a terminal and outside CI."""
    from neuron_migrate.run import progress as bars

    def start(total: int) -> Callable[[Any], object] | None:
        stream = stderr()
        if options["quiet"] or not bars.wanted(stream, os.environ, total):
            return None
        bar = bars.ProgressBar(stream, total)

        def advance(result: Any) -> None:
            bar.advance()
            if bar.done >= total:
                bar.close()

        return advance

    return start


def stderr() -> Any:
    """The text stream the progress bar draws on (a function, so tests can give it a terminal)."""
    return sys.stderr
