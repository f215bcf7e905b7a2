"""A progress bar on stderr for long runs: only on a terminal, never in pipes or CI."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TextIO

THRESHOLD = 20  # runs over this many files show a bar


def wanted(stream: TextIO, env: Mapping[str, str], total: int, threshold: int = THRESHOLD) -> bool:
    """Show a bar for `total` files on `stream`? Only for a TTY, outside CI, for many files."""
    if total <= threshold or env.get("CI") or env.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(callable(isatty) and isatty())


class ProgressBar:
    """`Checking  [#####-----]  12/40  eta 0:00:07  0:00:03 elapsed` with `click.progressbar`, drawn
    only on a terminal (the caller asks `wanted` first); the finished bar stays on its line."""

    def __init__(self, stream: TextIO, total: int, width: int = 30, clock: Callable[[], float] | None = None) -> None:
        import time

        import click

        self.total = max(total, 1)
        self.done = 0
        self._clock = clock or time.monotonic
        self._started = self._clock()
        self._bar = click.progressbar(
            length=self.total,
            label="Checking",
            file=stream,
            width=width,
            show_eta=False,  # click's estimate has no label; `_times` writes both
            show_pos=True,
            show_percent=False,
            item_show_func=self._times,
        )
        self._bar.__enter__()
        self._closed = False

    def _times(self, _: object) -> str:
        """`eta 0:00:07  0:00:03 elapsed`; no estimate before the first file or after the last."""
        elapsed = self._clock() - self._started
        if 0 < self.done < self.total:
            left = elapsed / self.done * (self.total - self.done)
            return f"eta {_clock_time(left)}  {_clock_time(elapsed)} elapsed"
        return f"{_clock_time(elapsed)} elapsed"

    def advance(self, *_: object) -> None:
        """Count one more file and redraw."""
        self.done += 1
        self._bar.update(1)

    def close(self) -> None:
        """Finish the bar (it keeps its last line) so the report starts on a clean line."""
        if not self._closed:
            self._closed = True
            self._bar.__exit__(None, None, None)


def _clock_time(seconds: float) -> str:
    whole = max(int(seconds), 0)
    return f"{whole // 3600}:{whole // 60 % 60:02}:{whole % 60:02}"
