"""Find the files to check: walk folders, skip excluded and hidden ones."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from neuron_migrate.engine.formats.kinds import file_kind
from neuron_migrate.patterns import GitIgnore, PathMatcher, decide, repository_root
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


def is_excluded(path: Path, patterns: Iterable[str] | PathMatcher, is_dir: bool | None = None) -> bool:
    """Whether the file or folder matches an exclude glob: by name, or by path anchored at the
    working folder (config globs come anchored at their file's folder), as Ruff does."""
    matcher = patterns if isinstance(patterns, PathMatcher) else _matcher(tuple(patterns), os.getcwd())
    return bool(matcher) and matcher.match(path, path.is_dir() if is_dir is None else is_dir)


@functools.lru_cache(maxsize=32)
def _matcher(patterns: tuple[str, ...], cwd: str) -> PathMatcher:
    return PathMatcher(patterns, cwd)


def _named_excluded(path: Path, matcher: PathMatcher, cwd: Path) -> bool:
    """A path named on the command line: excluded when it, or a folder above it up to the working
    folder, matches (`build/x.py` with `build` excluded)."""
    if not matcher:
        return False
    if is_excluded(path, matcher):
        return True
    absolute = Path(os.path.abspath(path))
    top = Path(os.path.abspath(cwd))
    return any(matcher.match(parent, True) for parent in absolute.parents if _inside(parent, top) and parent != top)


def wanted_suffix(path: Path, suffixes: tuple[str, ...]) -> bool:
    """A Python file by suffix, or a packaging file or shell script by name (engine/textfiles)."""
    return path.name.endswith(suffixes) or file_kind(path.as_posix()) is not None


def discover(
    paths: Iterable[Path], settings: Settings, cwd: Path, suffixes: tuple[str, ...] = PYTHON_SUFFIXES
) -> list[Target]:
    """Every file to check under `paths`, sorted and de-duplicated.

    A file named on the command line is checked (even if hidden) unless it matches an exclude
    pattern or is not Python (by suffix or shebang); folders are walked without entering hidden,
    virtualenv or build folders.
    """
    patterns = _matcher((*settings.exclude, *settings.extend_exclude), os.path.abspath(cwd))
    seen: dict[str, Target] = {}
    resolved_cwd = cwd.resolve()
    roots = tuple(paths)
    resolved_roots = tuple(resolve(root) for root in roots)
    for root, resolved_root in zip(roots, resolved_roots):
        ignore = _gitignore(root) if settings.respect_gitignore else None
        for path, known in _walk(root, resolved_root, patterns, suffixes, ignore, cwd):
            if known is not None:  # a plain file found in a walked folder: no link to follow
                seen.setdefault(str(known), Target(path, _relative(known, path, resolved_cwd)))
                continue
            resolved = resolve(path)
            if path.is_symlink() and _excluded_target(resolved, roots, resolved_roots, patterns):
                continue  # a link into an excluded (or hidden, or virtualenv) folder: not checked
            if path.is_symlink() and resolved.is_file() and any(_inside(resolved, r) for r in resolved_roots):
                path = resolved  # a link to a file that is checked anyway: fix the target, once
            if not path.exists():  # a dangling link or a missing file: shown by its own name
                resolved = Path(os.path.abspath(path))
            target = Target(path, _relative(resolved, path, resolved_cwd))
            seen.setdefault(str(resolved) if path.exists() else str(path), target)
    return sorted(seen.values(), key=lambda t: t.display)


def resolve(path: Path) -> Path:
    """`path` with links resolved; a link loop resolves to the link itself (reported NM903 later)."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        return Path(os.path.abspath(path))


def _excluded_target(
    resolved: Path, roots: tuple[Path, ...], resolved_roots: tuple[Path, ...], patterns: tuple[str, ...]
) -> bool:
    """Whether a link's target lies in a folder (or is a file) the walk would not enter: matched
    by an exclude glob, hidden, or a virtualenv, under one of the roots; so a link cannot carry
    `--fix` into a folder the user excluded."""
    for root, resolved_root in zip(roots, resolved_roots):
        if not _inside(resolved, resolved_root) or resolved == resolved_root:
            continue
        parts = resolved.relative_to(resolved_root).parts
        base = root if root.is_dir() else root.parent
        for depth in range(len(parts)):
            shown = base.joinpath(*parts[: depth + 1])
            if is_excluded(shown, patterns):
                return True
            if depth < len(parts) - 1 and _skip_dir(shown, patterns):
                return True
    return False


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


def _gitignore(root: Path) -> tuple[GitIgnore, str] | None:
    """The repository's ignore rules and `root`'s folder relative to it; None outside a repository."""
    folder = root if root.is_dir() else root.parent
    top = repository_root(folder)
    if top is None:
        return None
    rules = GitIgnore(top)
    relative = rules.relative(folder)
    return (rules, "" if relative in (None, ".") else relative) if relative is not None else None


def _walk(
    root: Path,
    resolved_root: Path,
    patterns: PathMatcher,
    suffixes: tuple[str, ...],
    ignore: tuple[GitIgnore, str] | None = None,
    cwd: Path = Path("."),
) -> Iterator[tuple[Path, Path | None]]:
    """Each path to check under `root`, with its resolved path when the walk knows it already
    (a file that is not a link, in a folder reached through no link), else None.

    A path named on the command line is checked even when git ignores it (as in Ruff); what a
    walk finds is skipped when `.gitignore` says so (`ignore`: the rules and the folder's path).
    """
    if not root.is_dir() or root.name.endswith(suffixes):
        if not _named_excluded(root, patterns, cwd) and _named(root, suffixes):
            yield root, None
        return
    yield from _walk_folder(root, resolved_root, patterns, suffixes, ignore)


def _walk_folder(
    base: Path,
    resolved: Path,
    patterns: PathMatcher,
    suffixes: tuple[str, ...],
    ignore: tuple[GitIgnore, str] | None = None,
) -> Iterator[tuple[Path, Path | None]]:
    """`os.walk` top-down without following links, on `os.scandir` entries: whether an entry
    is a link or a folder comes from the listing, so a plain file costs no system call."""
    try:
        with os.scandir(base) as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except OSError:
        return  # as os.walk: an unreadable folder is skipped
    dirs: list[os.DirEntry[str]] = []
    files: list[os.DirEntry[str]] = []
    for entry in entries:
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        (dirs if is_dir else files).append(entry)
    ignore = _nested(ignore, base, entries)
    listed = any(e.name == ".gitignore" for e in files)
    rules = ignore[0].rules(ignore[1], listed) if ignore is not None else ()
    folder = ignore[1] if ignore is not None else None
    for entry in files:
        path = base / entry.name
        if wanted_suffix(path, suffixes) and not is_excluded(path, patterns, False):
            if rules and decide(rules, _join(folder, entry.name), False):
                continue
            yield path, None if _is_link(entry) else resolved / entry.name
    walk = []
    for entry in dirs:
        path = base / entry.name
        if _skip_dir(path, patterns) or rules and decide(rules, _join(folder, entry.name), True):
            continue
        if entry.name.endswith(suffixes):  # a folder named like `x.py` is reported, not walked
            yield path, None
        elif not _is_link(entry):  # as os.walk, a link to a folder is not followed
            walk.append((path, resolved / entry.name))
    for path, resolved_path in walk:
        below = (ignore[0], _join(folder, path.name)) if ignore is not None and folder is not None else None
        yield from _walk_folder(path, resolved_path, patterns, suffixes, below)


def _is_link(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return True  # resolved the slow way, which copes


def _nested(
    ignore: tuple[GitIgnore, str] | None, base: Path, entries: list[os.DirEntry[str]]
) -> tuple[GitIgnore, str] | None:
    """The ignore state inside `base`: a folder with a `.git` of its own (a nested repository or
    a submodule) starts over with its own rules, as git does not look into it from outside."""
    if ignore is None or not ignore[1] or not any(e.name == ".git" for e in entries):
        return ignore
    return GitIgnore(base), ""


def _join(folder: str | None, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _skip_dir(path: Path, patterns: PathMatcher) -> bool:
    if path.name.startswith(".") or is_excluded(path, patterns, True):
        return True
    return (path / "pyvenv.cfg").exists()
