"""The program: `python -m neuron_migrate` and the `neuron-migrate` console script run `run()`."""

from __future__ import annotations

import atexit
import contextlib
import os
import sys

from neuron_migrate.cli import main
from neuron_migrate.run import signals


def run() -> None:
    """Run the CLI; SIGTERM and SIGHUP end it as Ctrl-C does, pool workers included, with
    one line on stderr and exit code 128 + the signal's number (see `run/signals.py`)."""
    signals.install()
    try:
        _run()
    except signals.Terminated as ended:
        with contextlib.suppress(OSError, ValueError):  # a terminal hung up, a closed pipe
            sys.stderr.write(f"neuron-migrate: error: stopped by {ended.name}\n")
            sys.stderr.flush()
        raise SystemExit(ended.code) from None


def _run() -> None:
    """Run the CLI, then end the process without tearing the interpreter down.

    A check keeps its rules, caches and results alive to the end, and Python's own exit then
    frees them and every module one by one, after the last line was printed: a noticeable share
    of a short run such as a pre-commit hook's (docs/performance.md). So once the command has
    finished and said all it has to say, the process flushes its output, runs the exit handlers
    (what `atexit` and `weakref.finalize` registered) and leaves with `os._exit`, as mypy does.
    Any other ending (a crash, a message as the exit code, a thread or child process still
    running, output that cannot be flushed) takes Python's ordinary exit, unchanged.
    """
    try:
        main(prog_name="neuron-migrate")
    except SystemExit as exc:
        code = 0 if exc.code is None else exc.code
        if not isinstance(code, int) or not _quick_exit_is_safe():
            raise
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):  # a closed pipe or stream: Python's exit reports it as always
            raise exc from None
        atexit._run_exitfuncs()
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()  # what an exit handler printed
            sys.stderr.flush()
        os._exit(code & 0xFF)  # as the shell sees `sys.exit(code)`


def _quick_exit_is_safe() -> bool:
    """Nothing is left that Python's exit would wait for: no other thread, no child process.
    (Neither module is imported here: a command that never used them left neither behind.)"""
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        return False
    multiprocessing = sys.modules.get("multiprocessing")
    return multiprocessing is None or not multiprocessing.active_children()


if __name__ == "__main__":
    run()
