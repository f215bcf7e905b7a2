"""Keep what a smoke run starts inside the run: end it all, whatever it did, and say why.

No torch. Each rank runs in its own session, but a script can start processes that leave it
(`setsid`, `start_new_session=True`, a double fork). Every process the run starts inherits
a per-run token in its environment, so the runner finds them all in /proc at the end: the
descendants of the ranks, and any process carrying the token, wherever it moved. SIGTERM and
SIGHUP to the runner end the run the same way (its `finally` blocks kill and clean up), and
the runner then exits with 128 + the signal's number, as a shell reports a killed command.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

TOKEN_VARIABLE = "NEURON_MIGRATE_SMOKE_RUN"
_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
_ROUNDS = 20  # kill passes: a process may fork while the previous pass kills its parent
_PROC = Path("/proc")


class SmokeInterrupted(SystemExit):
    """SIGTERM or SIGHUP ended the smoke run; its processes and temporary folder are gone.

    A SystemExit, so that no `except Exception:` on the way up swallows it, and the process
    exits with `code` (128 + the signal's number) and no traceback.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


def new_token() -> str:
    """A fresh token for one smoke run's processes."""
    return secrets.token_hex(16)


@contextlib.contextmanager
def signals_end_the_run() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP raise SmokeInterrupted (once; a second signal
    during the cleanup is ignored, so the cleanup finishes). Only the main thread can."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised: list[int] = []

    def handler(signum: int, frame: object) -> None:
        if not raised:
            raised.append(signum)
            raise SmokeInterrupted(signum)

    previous = {s: signal.signal(s, handler) for s in _SIGNALS}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def end_all(roots: Iterable[int], token: str) -> None:
    """SIGKILL the process groups of `roots`, their descendants and every process whose
    environment carries `token`, until none is left alive (zombies are left to their parents)."""
    roots = tuple(roots)
    for root in roots:
        with contextlib.suppress(OSError):
            os.killpg(root, signal.SIGKILL)
    if not _PROC.is_dir():  # no /proc: the process groups are all that can be found
        return
    marker = f"{TOKEN_VARIABLE}={token}".encode()
    for _ in range(_ROUNDS):
        found = _members(roots, marker) - {os.getpid()}
        if not found:
            return
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _members(roots: tuple[int, ...], marker: bytes) -> set[int]:
    """Live processes of the run: descendants of `roots` (and `roots`), and token carriers."""
    parents: dict[int, int] = {}
    found: set[int] = set()
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        stat = _stat(entry)
        if stat is None or stat[0] in "ZX":  # gone, or a zombie: nothing left to kill
            continue
        pid = int(entry.name)
        parents[pid] = stat[1]
        if pid in roots or _carries(entry, marker):
            found.add(pid)
    return found | _descendants(parents, set(roots))


def _stat(entry: Path) -> tuple[str, int] | None:
    """(state, parent pid) from /proc/PID/stat; None when the process is gone."""
    try:
        text = (entry / "stat").read_text(errors="replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()  # the command name may hold spaces and parens
    return (fields[0], int(fields[1])) if len(fields) > 1 else None


def _carries(entry: Path, marker: bytes) -> bool:
    try:
        return marker in (entry / "environ").read_bytes().split(b"\0")
    except OSError:  # another user's process, or gone
        return False


def _descendants(parents: dict[int, int], roots: set[int]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    found, todo = set(), list(roots)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found
