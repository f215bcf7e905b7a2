"""A progress bar on stderr for long runs: only on a terminal, never in pipes or CI."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TextIO

THRESHOLD = 20  # runs over this many files show a bar


def wanted(stream: TextIO, env: Mapping[str, str], total: int, threshold: int = THRESHOLD) -> bool:
    """Show a bar for `total` files on `stream`? Only for a TTY, outside CI, for many files."""
    if total <= threshold or env.get("CI") or env.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(callable(isatty) and isatty())


class ProgressBar:
    """`[#####-----] 12/40 files`, redrawn in place with `\\r` and erased when done."""

    def __init__(self, stream: TextIO, total: int, width: int = 30) -> None:
        self.stream = stream
        self.total = max(total, 1)
        self.width = width
        self.done = 0
        self._shown = -1
        self._length = 0

    def advance(self, *_: object) -> None:
        """Count one more file; redraw when the bar would change."""
        self.done += 1
        filled = self.width * self.done // self.total
        if filled != self._shown or self.done == self.total:
            self._shown = filled
            self._draw(f"[{'#' * filled}{'-' * (self.width - filled)}] {self.done}/{self.total} files")

    def _draw(self, text: str) -> None:
        self.stream.write("\r" + text + " " * max(self._length - len(text), 0))
        self.stream.flush()
        self._length = len(text)

    def close(self) -> None:
        """Erase the bar so the report starts on a clean line."""
        if self._length:
            self.stream.write("\r" + " " * self._length + "\r")
            self.stream.flush()
            self._length = 0
