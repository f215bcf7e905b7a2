"""Reading files the tool did not write: only regular files, and never more than a limit.

Every file the tool reads on the user's behalf (sources, configs, baselines, `extend-rules`
files, the cache index) goes through `read_regular`. It never blocks and never reads without
bound: a FIFO, a device node or a socket is refused before any byte is read (`os.open` with
`O_NONBLOCK`, so opening a FIFO with no writer returns at once, then `os.fstat` on the open
descriptor, so a file swapped for a special one after a `stat` is still caught), and at most
`limit + 1` bytes are read, so a file that grows while it is read is refused too.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from neuron_migrate.output_formats import Escaping

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
_CHUNK = 1 << 20


class NotRegularFile(OSError):
    """The path names a FIFO, a device, a socket or a folder: nothing the tool reads."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        super().__init__(f"it is {kind}, not a regular file")
        self.path = os.fspath(path)
        self.kind = kind


class TooLarge(OSError):
    """The file holds more than the limit allows."""

    def __init__(self, path: str | os.PathLike[str], limit: int) -> None:
        super().__init__(f"it is larger than {limit:,} bytes")
        self.path = os.fspath(path)
        self.limit = limit


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words for a message."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def read_regular(path: str | os.PathLike[str], limit: int) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file at `path` (links followed) and its `fstat`.

    Raises NotRegularFile for anything else, TooLarge past `limit` bytes, OSError otherwise.
    """
    before = os.stat(path)  # refuse a device before opening it: opening some has side effects
    if not stat.S_ISREG(before.st_mode):
        raise NotRegularFile(path, kind_of(before.st_mode))
    fd = os.open(path, _FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(path, kind_of(info.st_mode))
        if info.st_size > limit:
            raise TooLarge(path, limit)
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise TooLarge(path, limit)
        return b"".join(chunks), info
    finally:
        os.close(fd)


def read_text_regular(path: str | os.PathLike[str], limit: int) -> str:
    """`read_regular` decoded as UTF-8 (UnicodeDecodeError when it is not)."""
    return read_regular(path, limit)[0].decode("utf-8")


def read_stream(stream: object, limit: int) -> bytes | None:
    """At most `limit` bytes of a binary stream (stdin); None when it holds more."""
    data: bytes = stream.read(limit + 1)  # type: ignore[attr-defined]
    return None if len(data) > limit else data


def is_regular(path: Path) -> bool:
    """Whether `path` (links followed) is a regular file; False when it cannot be stat'ed."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


CONFIG_LIMIT = 16 * 1024 * 1024  # a config, rule or baseline file beyond this is refused
BASELINE_LIMIT = 256 * 1024 * 1024
INDEX_LIMIT = 1024 * 1024 * 1024


# -- names that are not UTF-8 ----------------------------------------------------------------
# A file name is bytes on POSIX; Python decodes it with `os.fsdecode`, which keeps each byte
# that is not UTF-8 as a lone surrogate (U+DC80..U+DCFF). Such a string cannot be encoded as
# UTF-8, so every report is turned into bytes here: JSON documents get the surrogate as a JSON
# `\udcXX` escape (valid JSON that decodes back to the same name), XML and HTML a visible `\xNN`,
# and plain text the original bytes (as `ls` and `git` print them).
_SURROGATES = re.compile("[\udc80-\udcff]")


def json_escape_surrogates(text: str) -> str:
    """JSON text with each lone surrogate written as a `\\udcXX` escape (only names hold them)."""
    return _SURROGATES.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def visible_name(name: str) -> str:
    """A name with each byte that is not UTF-8 shown as `\\xNN` (for markup and messages)."""
    return _SURROGATES.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", name)


def report_bytes(text: str, escaping: Escaping) -> bytes:
    """A rendered report as the bytes to print or write, whatever its file names hold."""
    if escaping is Escaping.JSON:
        text = json_escape_surrogates(text)
    elif escaping is Escaping.MARKUP:
        text = visible_name(text)
    return text.encode("utf-8", "surrogateescape")
