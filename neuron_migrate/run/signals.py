"""Ending a run when it is asked to: SIGTERM (CI cancellation, `timeout`, `docker stop`,
Kubernetes) and SIGHUP (the terminal closed) end it as Ctrl-C does, pool workers included.

In the main process the signal raises `Terminated`, which unwinds the run: a file being
written removes its temporary copy, so no file is torn or half-replaced. A pool is then ended
(`end_workers`): each worker is sent SIGTERM, unwinds the file in hand the same way and exits;
one still running after a grace period is killed; the parent waits for them all, so no worker
writes a file or holds the output pipes once it is gone. A worker also dies with its parent
when the parent is killed outright (Linux: `PR_SET_PDEATHSIG`). The program then exits with
128 + the signal's number, as a shell reports a process the signal ended.

A signal ignored when the program starts (`nohup`) stays ignored.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from types import FrameType

ENDING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))
_GRACE = 3.0  # seconds a worker has to unwind before it is killed


class Terminated(BaseException):
    """The process was asked to end by signal `signum` (not an `Exception`: nothing that
    handles a file's errors may swallow it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def code(self) -> int:
        """The exit code a shell shows for a process this signal ended."""
        return 128 + self.signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


def install() -> None:
    """Make the ending signals raise `Terminated` in this (the main) thread."""
    for signum in ENDING:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _raise_once)


def _raise_once(signum: int, frame: FrameType | None) -> None:
    """Raise `Terminated`; a second signal while the run unwinds is ignored (it cannot be
    stopped twice, and the clean-up it would interrupt is bounded)."""
    for other in ENDING:
        signal.signal(other, signal.SIG_IGN)
    raise Terminated(signum)


def _raise(signum: int, frame: FrameType | None) -> None:
    raise Terminated(signum)


def end_workers() -> None:
    """End this process's pool workers: SIGTERM, a grace period to unwind, then SIGKILL; and
    wait for each, so none outlives this process."""
    import multiprocessing

    children = multiprocessing.active_children()
    for child in children:
        with contextlib.suppress(OSError):
            child.terminate()
    deadline = time.monotonic() + _GRACE
    for child in children:
        child.join(max(0.0, deadline - time.monotonic()))
    for child in children:
        if child.is_alive():
            with contextlib.suppress(OSError):
                child.kill()
            child.join()


def start_worker(parent: int) -> None:
    """In a pool worker, once: die with the parent; ignore Ctrl-C (the parent ends the pool);
    between files, an ending signal exits at once (there is nothing to unwind)."""
    _die_with(parent)
    if hasattr(signal, "SIGINT"):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    for signum in ENDING:
        signal.signal(signum, _exit_now)


def _exit_now(signum: int, frame: FrameType | None) -> None:
    os._exit(128 + signum)


@contextlib.contextmanager
def unwinding() -> Iterator[None]:
    """In a pool worker, around its work on files: an ending signal unwinds the file in hand
    (a write removes its temporary copy) and then the worker exits."""
    before = [signal.signal(signum, _raise) for signum in ENDING]
    try:
        yield
    except Terminated as ended:
        os._exit(ended.code)
    finally:
        for signum, handler in zip(ENDING, before):
            signal.signal(signum, handler)


def _die_with(parent: int) -> None:
    """Ask Linux to send SIGTERM to this process when `parent` (its direct parent) dies, even
    of SIGKILL. Elsewhere, or for a worker another process started, the parent's
    `end_workers` is all there is."""
    if not sys.platform.startswith("linux") or os.getppid() != parent:
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request: nobody would send it
        os._exit(128 + signal.SIGTERM)
