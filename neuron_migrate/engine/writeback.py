"""Writing a fixed file back without surprising its owner.

`--fix` writes a file only when replacing it keeps everything but its content: it never turns
a symbolic link into a copy, never splits hard links, never changes the owner or group it
cannot restore, never writes a file its permissions make read-only, and never overwrites an
edit made while the file was being checked. Any of these skips the file with a reason.

The new content goes to a temporary file next to the original, named
`.<name>.neuron-migrate-<pid>-<random>.tmp` (the name cut to fit the file system's longest
name), which is renamed over it. A run killed mid-write
leaves that file behind; the next run removes it once its process is gone (`sweep`).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

TEMP_TAG = ".neuron-migrate-"
_TEMP = re.compile(r"^\..*\.neuron-migrate-(\d+)-[^/]*\.tmp$")


@dataclass(frozen=True)
class Snapshot:
    """What the bytes a result was computed from looked like on disk."""

    size: int
    mtime_ns: int
    digest: bytes


def snapshot(path: Path, data: bytes) -> Snapshot | None:
    """The snapshot of `path` as read into `data`; None when it cannot be stat'ed."""
    try:
        info = path.stat()
    except OSError:
        return None
    return Snapshot(info.st_size, info.st_mtime_ns, hashlib.sha256(data).digest())


def write_back(path: Path, data: bytes, read: Snapshot | None) -> str | None:
    """Replace `path` with `data` atomically; or the reason (an NM903 message) it was skipped."""
    try:
        link = path.lstat()
    except OSError as exc:
        return f"Make this file readable; {exc.strerror or exc}"
    if stat.S_ISLNK(link.st_mode):
        return "Fix the link's target by hand; `--fix` does not replace a symbolic link with a copy"
    if link.st_nlink > 1:
        return f"Fix this file by hand; it has {link.st_nlink} hard links and `--fix` does not split them"
    if not os.access(path, os.W_OK):
        return "Make this file writable to fix it; the file is read-only"
    return _replace(path, data, link, read)


def _replace(path: Path, data: bytes, info: os.stat_result, read: Snapshot | None) -> str | None:
    temp = _temp_for(path)
    try:
        with open(temp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if not _same_owner(temp, info):
            Path(temp).unlink(missing_ok=True)
            return "Fix this file as its owner; rewriting it would change its owner or group"
        os.chmod(temp, stat.S_IMODE(info.st_mode))  # after chown, which clears setuid and setgid
        if stat.S_IMODE(os.stat(temp).st_mode) != stat.S_IMODE(info.st_mode):
            Path(temp).unlink(missing_ok=True)
            return "Fix this file by hand; its setuid, setgid or sticky bits cannot be kept on a new copy"
        copy_xattrs(path, temp)
        if read is not None and _changed(path, read):
            Path(temp).unlink(missing_ok=True)
            return "Run `--fix` again; the file changed while it was being fixed"
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return None


def copy_xattrs(source: Path, target: str) -> None:
    """Copy the extended attributes (ACLs, labels, `user.*`) the platform lets us read and set;
    one that cannot be set (a `security.*` label without the privilege) is left out."""
    listxattr = getattr(os, "listxattr", None)
    if listxattr is None:  # not Linux
        return
    try:
        names = listxattr(source)
    except OSError:
        return
    for name in names:
        try:
            os.setxattr(target, name, os.getxattr(source, name))
        except OSError:
            continue


_TEMP_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)


def _temp_for(path: Path) -> str:
    """A new empty file beside `path`, readable and writable by its owner only, as
    `tempfile.mkstemp` makes it (whose import, with shutil, bz2, lzma and random, cost a report
    or a fix more than the write itself)."""
    for _ in range(100):
        suffix = f"{TEMP_TAG}{os.getpid()}-{os.urandom(6).hex()}.tmp"
        room = _name_max(path.parent) - 1 - len(suffix)  # a 255-byte name must still get one
        temp = os.path.abspath(os.path.join(path.parent, "." + os.fsdecode(os.fsencode(path.name)[:room]) + suffix))
        try:
            fd = os.open(temp, _TEMP_FLAGS, 0o600)
        except FileExistsError:
            continue
        os.close(fd)
        return temp
    raise FileExistsError(f"no free temporary file name beside {path}")


def _name_max(folder: Path) -> int:
    """The longest file name, in bytes, the folder's file system takes (255 when it cannot say)."""
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (AttributeError, OSError, ValueError):
        return 255


def _same_owner(temp: str, info: os.stat_result) -> bool:
    """Give the temporary file the original's owner and group; False when that is not allowed."""
    mine = os.stat(temp)
    if (mine.st_uid, mine.st_gid) == (info.st_uid, info.st_gid):
        return True
    try:
        os.chown(temp, info.st_uid, info.st_gid)
    except OSError:
        return False
    return True


def _changed(path: Path, read: Snapshot) -> bool:
    """Whether `path` no longer holds the bytes the result was computed from."""
    try:
        info = path.stat()
        if (info.st_size, info.st_mtime_ns) != (read.size, read.mtime_ns):
            return True
        from neuron_migrate.fsio import read_regular

        return hashlib.sha256(read_regular(path, read.size)[0]).digest() != read.digest
    except OSError:
        return True


def write_atomic(path: Path, data: bytes) -> None:
    """Write a file this tool owns (cache, baseline) via a recognisable temporary file."""
    temp = _temp_for(path)
    try:
        with open(temp, "wb") as handle:
            handle.write(data)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


class OutputRefused(OSError):
    """An output path (`-o`, `--write-baseline`) that is neither a regular file nor a new path."""


def output_target(path: Path) -> Path:
    """The file a report or baseline named `path` is written to: `path` itself when it is a
    regular file or does not exist, the link's target when it is a symbolic link to a regular
    file. Raises OutputRefused for anything else: a FIFO, a device, a socket, a folder or a
    dangling link is never replaced by a regular file (as root, that destroyed `/dev/full`)."""
    from neuron_migrate.fsio import kind_of

    try:
        link = os.lstat(path)
    except FileNotFoundError:
        return path
    if stat.S_ISLNK(link.st_mode):
        real = Path(os.path.realpath(path))
        try:
            info = os.stat(real)
        except OSError:
            raise OutputRefused(f"it is a symbolic link to {real}, which does not exist; remove the link") from None
        if not stat.S_ISREG(info.st_mode):
            raise OutputRefused(f"it is a symbolic link to {kind_of(info.st_mode)}, not to a regular file")
        return real
    if not stat.S_ISREG(link.st_mode):
        raise OutputRefused(f"it is {kind_of(link.st_mode)}, not a regular file")
    return path


def write_output(path: Path, data: bytes) -> Path:
    """Write a report or baseline the user named, atomically and only once it is complete:
    a failure leaves the old file whole. Keeps an existing file's mode (and owner, where
    allowed); a new file gets the mode `open` would give it. Returns the file written."""
    target = output_target(path)
    try:
        before: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        before = None
    temp = _temp_for(target)
    try:
        with open(temp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if before is not None:
            os.chmod(temp, stat.S_IMODE(before.st_mode))
            try:
                if (before.st_uid, before.st_gid) != (os.getuid(), os.getgid()):
                    os.chown(temp, before.st_uid, before.st_gid)
            except OSError:
                pass  # not allowed: the report is ours now
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temp, 0o666 & ~umask)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return target


def sweep(folder: Path, started_ns: int = 0) -> int:
    """Remove this tool's temporary files in `folder` whose writing process is gone (or that this
    process's id left before `started_ns`, from an earlier run with the same id); how many."""
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        match = _TEMP.match(entry.name)
        if match is None:
            continue
        try:
            if _in_use(int(match.group(1)), entry, started_ns) or not entry.is_file(follow_symlinks=False):
                continue
            os.unlink(entry.path)
            removed += 1
        except OSError:
            continue
    return removed


def _in_use(pid: int, entry: os.DirEntry[str], started_ns: int) -> bool:
    """Whether the process that named the file may still be writing it."""
    if pid == os.getpid():
        return entry.stat(follow_symlinks=False).st_mtime_ns >= started_ns
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # someone else's process, or a pid we cannot ask about: leave the file
    return True
