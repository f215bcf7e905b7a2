"""Find the files to check: walk folders, skip excluded and hidden ones."""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from neuron_migrate.engine.formats.kinds import file_kind
from neuron_migrate.settings import Settings

PYTHON_SUFFIXES = (".py", ".ipynb")


@dataclass(frozen=True)
class Target:
    """A file to check and the path to show for it."""

    path: Path
    display: str


def display_path(path: Path, cwd: Path) -> str:
    """`path` relative to `cwd` when inside it, always with forward slashes."""
    return _relative(resolve(path), path, cwd.resolve())


def _relative(resolved: Path, path: Path, resolved_cwd: Path) -> str:
    try:
        return resolved.relative_to(resolved_cwd).as_posix()
    except ValueError:
        return path.as_posix()


def is_excluded(path: Path, patterns: Iterable[str]) -> bool:
    """Whether the file or folder name, or its path, matches an exclude glob."""
    compiled = _exclude_regexes(tuple(patterns))
    if compiled is None:
        return False
    by_name, by_path = compiled
    return by_name.match(os.path.normcase(path.name)) is not None or by_path.match(os.path.normcase(path.as_posix())) is not None


@functools.lru_cache(maxsize=32)
def _exclude_regexes(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str]] | None:
    """One regex for names and one for paths: `pattern`, `*/pattern` or `pattern/*` (as fnmatch)."""
    if not patterns:
        return None
    globs = [os.path.normcase(p) for p in patterns]
    by_name = "|".join(fnmatch.translate(g) for g in globs)
    by_path = "|".join(fnmatch.translate(form) for g in globs for form in (g, f"*/{g}", f"{g}/*"))
    return re.compile(by_name), re.compile(by_path)


def wanted_suffix(path: Path, suffixes: tuple[str, ...]) -> bool:
    """A Python file by suffix, or a packaging file or shell script by name (engine/textfiles)."""
    return path.name.endswith(suffixes) or file_kind(path.as_posix()) is not None


def discover(paths: Iterable[Path], settings: Settings, cwd: Path, suffixes: tuple[str, ...] = PYTHON_SUFFIXES) -> list[Target]:
    """Every file to check under `paths`, sorted and de-duplicated.

    A file named on the command line is checked (even if hidden) unless it matches an exclude
    pattern or is not Python (by suffix or shebang); folders are walked without entering hidden,
    virtualenv or build folders.
    """
    patterns = (*settings.exclude, *settings.extend_exclude)
    seen: dict[str, Target] = {}
    resolved_cwd = cwd.resolve()
    roots = tuple(paths)
    resolved_roots = tuple(resolve(root) for root in roots)
    for root in roots:
        for path in _walk(root, patterns, suffixes):
            resolved = resolve(path)
            if path.is_symlink() and resolved.is_file() and any(_inside(resolved, r) for r in resolved_roots):
                path = resolved  # a link to a file that is checked anyway: fix the target, once
            target = Target(path, _relative(resolved, path, resolved_cwd))
            seen.setdefault(str(resolved) if path.exists() else str(path), target)
    return sorted(seen.values(), key=lambda t: t.display)


def resolve(path: Path) -> Path:
    """`path` with links resolved; a link loop resolves to the link itself (reported NM903 later)."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        return Path(os.path.abspath(path))


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def python_script(path: Path) -> bool:
    """Whether a file without a suffix starts with a Python shebang (pre-commit's `python` type)."""
    if path.suffix:
        return False
    try:
        with path.open("rb") as handle:
            first = handle.readline(256)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def _named(path: Path, suffixes: tuple[str, ...]) -> bool:
    """Whether a path named on the command line is checked.

    A path that is not a regular file (a missing one, say) is, so it becomes an NM903 finding
    later; a file only with a wanted suffix or a Python shebang, so `pre-commit` and shell globs
    may pass any file.
    """
    if wanted_suffix(path, suffixes) or not path.is_file():
        return True
    return python_script(path)


def _walk(root: Path, patterns: tuple[str, ...], suffixes: tuple[str, ...]) -> Iterator[Path]:
    if not root.is_dir() or root.name.endswith(suffixes):
        if not is_excluded(root, patterns) and _named(root, suffixes):
            yield root
        return
    for folder, dirs, files in os.walk(root):
        base = Path(folder)
        dirs[:] = sorted(d for d in dirs if not _skip_dir(base / d, patterns))
        for name in sorted(files):
            path = base / name
            if wanted_suffix(path, suffixes) and not is_excluded(path, patterns):
                yield path
        for name in list(dirs):
            if name.endswith(suffixes):  # a folder named like `x.py` is reported, not walked
                dirs.remove(name)
                yield base / name


def _skip_dir(path: Path, patterns: tuple[str, ...]) -> bool:
    if path.name.startswith(".") or is_excluded(path, patterns):
        return True
    return (path / "pyvenv.cfg").exists()
