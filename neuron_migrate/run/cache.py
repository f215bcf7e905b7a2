"""A content-hash cache of per-file check results in `.neuron_migrate_cache/`.

One index file per configuration: its name hashes the tool and Python versions, the code of the
installed package, the rules data, every setting that can change a file's result, and the
working folder (paths in results are shown relative to it). The index maps each display path
to the file's (mtime_ns, size, content digest) and its `FileResult`, encoded by `codec` and
stored with `marshal` behind a checksum (unpickling was the largest cost of a warm run).

The key is computed without loading the rules: the package's modules and the rule files are
stamped by (path, size, mtime_ns), as git stamps its index, and a file modified within the
last `_RACY_NS` is stamped by its content too. Plugins are the exception: their source is
hashed by importing them (`registry.rules_digest`).

A lookup trusts an unchanged (mtime_ns, size) only when the file was older than the time it was
read by more than `_RACY_NS` (the "racy git" rule: a file rewritten within the clock granularity
can keep its mtime); otherwise, or when the stat differs, it reads and hashes the file, and only
an equal content digest is a hit. So a result is never served for content it was not computed
from.

Writes are atomic (temporary file + `os.replace`). Concurrent runs may each write the index;
each merges what is on disk just before it writes, and an entry lost to a race is simply
recomputed next time. An unreadable, truncated or foreign index fails its checksum and is
ignored, never an error.

The contract this relies on: a file's result depends only on its display path, its bytes, the
`Settings` and the rules. Anything else that changes a result (a baseline file, another file's
content) must either be a `Settings` value whose repr changes with it, or be applied to the
results after this cache (in the CLI), as the output formats are.

Only results without edits are cached: a `--fix` run reads entries that have no findings (fixing
such a file changes nothing) and stores its results only when the file is clean and unchanged.
A cached clean result carries no `source`; a result with findings keeps it.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import marshal
import os
import re
import stat
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neuron_migrate import __version__
from neuron_migrate.fsio import INDEX_LIMIT, read_regular
from neuron_migrate.model import FileResult
from neuron_migrate.run import cache_codec as codec
from neuron_migrate.settings import RuleSources, Settings

CACHE_DIR_NAME = ".neuron_migrate_cache"
_MAGIC = b"NMCACHE3"
_RACY_NS = 2_000_000_000  # coarse file systems keep mtimes in (up to) 2 s steps
# Index files of other configurations are pruned when a run saves: beyond the most recent
# `_KEEP_INDICES`, and any not written for `_STALE_S` (a configuration no longer used).
_KEEP_INDICES = 16
_STALE_S = 30 * 24 * 3600
# Settings that never change one file's result: which files are visited, and whether edits are
# applied (fix runs only use entries that have nothing to fix). `unsafe_fixes` does: a check with
# it marks the imports only `--fix --unsafe-fixes` removes (`engine/waiting_imports.with_freed`).
# `enabled` is a function of the selectors, the families and the rules, which are all in the key
# (and a frozenset's repr changes with the hash seed of each process).
_NOT_IN_KEY = frozenset({"exclude", "extend_exclude", "fix", "enabled"})


@dataclass(frozen=True)
class Stamp:
    """What a worker saw of a file's bytes when it computed a result from them."""

    mtime_ns: int
    size: int
    digest: str
    trusted: bool  # the mtime was old enough, when read, to vouch for the content later


def content_digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def read_stamped(path: Path, max_bytes: int) -> tuple[bytes, Stamp] | None:
    """The bytes of a regular file no larger than `max_bytes`, with their stamp; else None."""
    try:
        now = time.time_ns()
        data, info = read_regular(path, max_bytes)
    except OSError:  # missing, unreadable, too large or not a regular file
        return None
    trusted = len(data) == info.st_size and info.st_mtime_ns + _RACY_NS < now
    return data, Stamp(info.st_mtime_ns, info.st_size, content_digest(data), trusted)


def config_key(settings: Settings, cwd: Path, rules_digest: str) -> str:
    """The index name: everything besides a file's path and content that decides its result.

    Every part is spelled the same in every process (no set or frozenset reprs, whose order
    follows the hash seed): `enabled` is left out, as the selectors, the families and the rules
    that decide it are in.
    """
    parts = [
        f"format={_MAGIC!r}",
        f"version={__version__}",
        f"python={sys.version}",
        f"code={_code_stamp()}",
        f"rules={rules_digest}",
        f"cwd={cwd}",
    ]
    for field in dataclasses.fields(settings):
        if field.name not in _NOT_IN_KEY:
            parts.append(f"{field.name}={getattr(settings, field.name)!r}")
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=12).hexdigest()


@functools.cache
def _code_stamp() -> str:
    """The package's modules, so an edited checkout never reads stale results."""
    return tree_stamp(Path(__file__).resolve().parent.parent, ".py")


def tree_stamp(folder: Path, suffix: str) -> str:
    """A hash of (relative path, size, mtime_ns) of every `suffix` file under `folder`, and of
    the content of those modified within `_RACY_NS` (whose mtime cannot vouch for it yet)."""
    entries: list[str] = []
    recent = time.time_ns() - _RACY_NS
    _stamp_into(entries, str(folder), "", suffix, recent)
    entries.sort()
    return hashlib.blake2b("\n".join(entries).encode(), digest_size=12).hexdigest()


def _stamp_into(entries: list[str], folder: str, prefix: str, suffix: str, recent: int) -> None:
    try:
        listing = list(os.scandir(folder))
    except OSError:
        entries.append(f"{prefix}:unreadable")
        return
    for entry in listing:
        name = prefix + entry.name
        try:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    _stamp_into(entries, entry.path, name + "/", suffix, recent)
                continue
            if not entry.name.endswith(suffix):
                continue
            info = entry.stat()
            line = f"{name}:{info.st_size}:{info.st_mtime_ns}"
            if info.st_mtime_ns >= recent:
                line += ":" + content_digest(read_regular(entry.path, INDEX_LIMIT)[0])
        except OSError:
            line = f"{name}:unreadable"
        entries.append(line)


def rules_stamp(sources: RuleSources) -> str:
    """What the cache key takes from the rules: the shipped rule files and the project's
    `extend-rules` folders by `tree_stamp`, without loading them; with plugins, the registry's
    digest (plugins are imported to hash their source)."""
    if sources.plugins:
        from neuron_migrate import registry

        return registry.rules_digest(sources)
    from neuron_migrate.data import rules_dir

    folders = (str(rules_dir()), *sources.extend_rules)
    return ",".join(tree_stamp(Path(folder), ".toml") for folder in folders)


_Entry = tuple[int, int, str, bool, Any]  # mtime_ns, size, digest, trusted, encoded result


class ResultCache:
    """The index of one configuration, loaded once per run and saved once at its end."""

    def __init__(self, folder: Path, key: str, fixing: bool, cwd: Path) -> None:
        self.folder = folder
        self.started_ns = time.time_ns()
        self.index_path = folder / f"{key}.idx"
        self.fixing = fixing
        self.cwd = cwd  # display paths are relative to it
        self.updates: dict[str, _Entry] = {}

    @functools.cached_property
    def entries(self) -> dict[str, _Entry]:
        """The index on disk, read on first use."""
        return _load(self.index_path)

    def lookup(self, path: Path, display: str) -> FileResult | None:
        """The cached result for the file's current content, or None."""
        entry = self.entries.get(display)
        if entry is None:
            return None
        mtime_ns, size, digest, trusted, encoded = entry
        try:
            info = os.stat(path)
        except OSError:
            return None
        if info.st_size != size:
            return None
        if not (trusted and info.st_mtime_ns == mtime_ns):
            read = read_stamped(path, max_bytes=size)
            if read is None or read[1].digest != digest:
                return None
            stamp = read[1]
            if stamp.trusted != trusted or stamp.mtime_ns != mtime_ns:
                self.updates[display] = (stamp.mtime_ns, stamp.size, digest, stamp.trusted, encoded)
        try:
            result: FileResult = codec.decode(encoded)
        except Exception:  # noqa: BLE001 - an entry this version cannot read is a miss
            return None
        return None if self.fixing and result.findings else result

    def store(self, display: str, stamp: Stamp | None, result: FileResult) -> None:
        """Remember a freshly computed result, if it is one the cache may serve."""
        if stamp is None or result.changed or (self.fixing and result.findings):
            return
        kept = result if result.findings else dataclasses.replace(result, source=None)
        try:
            encoded = codec.encode(kept)
        except TypeError:
            return  # a result this codec cannot carry is recomputed next time
        self.updates[display] = (stamp.mtime_ns, stamp.size, stamp.digest, stamp.trusted, encoded)

    def save(self) -> None:
        """Merge this run's entries into the index on disk, atomically. Never raises OSError."""
        if not self.updates:
            return
        from neuron_migrate.engine.writeback import sweep, write_atomic

        try:
            _prepare(self.folder)
            sweep(self.folder, self.started_ns)  # index temporaries of runs killed mid-write
            merged = _load(self.index_path)  # keep what other runs wrote meanwhile
            merged.update(self.updates)
            for display in [d for d in merged if d not in self.updates and not (self.cwd / d).exists()]:
                del merged[display]  # the file was deleted or renamed
            payload = marshal.dumps(merged)
            write_atomic(self.index_path, _MAGIC + _checksum(payload) + payload)
            prune(self.folder, self.index_path)
        except OSError:
            return  # a read-only or full disk makes the next run slower, not wrong
        self.updates = {}


_TAG_LINE = b"# neuron-migrate result cache"
_INDEX_NAME = re.compile(r"[0-9a-f]{24}\.idx")  # config_key's blake2b digest, 12 bytes


def ours(folder: Path) -> bool:
    """Whether `folder` is a cache this tool made: its CACHEDIR.TAG (a regular file, not a
    link) carries our line. A shared `--cache-dir` another program tagged is never pruned."""
    try:
        data = read_regular(folder / "CACHEDIR.TAG", 4096)[0] if not (folder / "CACHEDIR.TAG").is_symlink() else b""
    except OSError:
        return False
    return _TAG_LINE in data


def _our_index(path: Path, info: os.stat_result) -> bool:
    """An index file this tool wrote: our name pattern, a regular file (no link), our owner and
    our magic bytes. Anything else in the folder is left alone."""
    if not _INDEX_NAME.fullmatch(path.name) or not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
        return False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        return os.read(fd, len(_MAGIC) - 1) == _MAGIC[:-1]  # NMCACHE<n>: any version of ours
    finally:
        os.close(fd)


def prune(folder: Path, keep: Path, now: float | None = None) -> list[Path]:
    """Delete the index files of configurations not used lately; returns what was deleted.

    Every setting that changes results has its own index, so switching `--select`, targets or
    versions leaves indices behind. `keep` (this run's) always stays; of the others, the most
    recent `_KEEP_INDICES - 1` stay unless none of them was written for `_STALE_S`. Only files
    this tool wrote are candidates (`ours`, `_our_index`), never another program's `*.idx`.
    """
    now = time.time() if now is None else now
    found: list[tuple[float, Path]] = []
    if not ours(folder):
        return []
    for path in folder.glob("*.idx"):
        if path != keep:
            try:
                info = os.lstat(path)
            except OSError:
                continue  # removed meanwhile by another run
            if _our_index(path, info):
                found.append((info.st_mtime, path))
    found.sort(reverse=True)
    doomed = [p for i, (mtime, p) in enumerate(found) if i >= _KEEP_INDICES - 1 or now - mtime > _STALE_S]
    for path in doomed:
        try:
            path.unlink()
        except OSError:
            continue
    return doomed


def _load(path: Path) -> dict[str, _Entry]:
    """The index at `path`; empty when it is missing, damaged or written by another format."""
    try:
        data = read_regular(path, INDEX_LIMIT)[0]
    except OSError:  # missing, unreadable, too large or not a regular file (a planted FIFO)
        return {}
    start = len(_MAGIC) + 12
    payload = data[start:]
    if data[: len(_MAGIC)] != _MAGIC or _checksum(payload) != data[len(_MAGIC) : start]:
        return {}  # only bytes this code wrote reach marshal, which must not see damaged data
    try:
        loaded = marshal.loads(payload)
    except (ValueError, EOFError, TypeError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _checksum(payload: bytes) -> bytes:
    """Length and CRC-32: catches a torn or damaged index (not tampering; the folder is yours)."""
    return len(payload).to_bytes(8, "little") + zlib.crc32(payload).to_bytes(4, "little")


def _prepare(folder: Path) -> None:
    from neuron_migrate.engine.writeback import write_atomic

    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not os.path.lexists(ignore):
        write_atomic(ignore, b"# Created by neuron-migrate; the cache is local and disposable.\n*\n")
    tag = folder / "CACHEDIR.TAG"
    if not os.path.lexists(tag):
        write_atomic(tag, b"Signature: 8a477f597d28d172789f06886806bc55\n" + _TAG_LINE + b"\n")


def default_folder_refusal(folder: Path, cwd: Path) -> str | None:
    """Why the default cache folder must not be used: it is a link to a folder outside the
    project (a planted `.neuron_migrate_cache` pointing at someone else's files). A folder
    given with `--cache-dir` is the user's choice and is used as given."""
    try:
        if not stat.S_ISLNK(os.lstat(folder).st_mode):
            return None
    except OSError:
        return None
    target = Path(os.path.realpath(folder))
    root = cwd.resolve()
    if target == root or root in target.parents:
        return None
    return (
        f"{folder} is a link to {target}, outside this project; the cache is off for this run "
        "(remove the link, or pass --cache-dir to use that folder)"
    )


def open_cache(folder: Path, settings: Settings, cwd: Path) -> ResultCache:
    """The cache for this configuration under `folder` (created on the first save)."""
    return ResultCache(
        folder, config_key(settings, cwd, rules_stamp(settings.rule_sources)), fixing=settings.fix, cwd=cwd
    )
