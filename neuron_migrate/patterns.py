"""Path patterns: git's wildmatch for `.gitignore`, `exclude`, `extend-exclude` and `per-file-ignores`.

One dialect everywhere, as git writes it (gitignore(5)): `*` and `?` stop at `/`, `**` spans
folders only as a whole segment (`**/x`, `x/**`, `a/**/b`), `[...]` is a class (`!` or `^`
negates), `\\` quotes the next character (`wildmatch.py` translates them to regexes that match in
polynomial time, whatever the glob). Ruff's anchoring for the settings: a pattern without `/`
matches a file or folder name at any depth; one with `/` is relative to the folder it was
written for (the config file's, or the working folder for a command-line option). Settings
patterns also accept `{a,b}` alternatives, as Ruff's globs do; `.gitignore` lines do not.

`.gitignore` files are read as git does: those of the folders from the repository root down to
the file, `.git/info/exclude` below them all; the last matching line wins, `!` re-includes, a
line ending in `/` matches folders only, and nothing inside an ignored folder is re-included.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from neuron_migrate.wildmatch import expand_braces, translate

# -- .gitignore -------------------------------------------------------------------------


@dataclass(frozen=True)
class IgnoreRule:
    """One `.gitignore` line: matched against a path relative to `base` (the file's folder)."""

    regex: re.Pattern[str]
    negate: bool
    dir_only: bool
    base: str  # the folder of the .gitignore, relative to the repository root ("" at the root)

    def matches(self, path: str, is_dir: bool) -> bool:
        """Whether the rule matches `path` (relative to the repository root)."""
        if self.dir_only and not is_dir:
            return False
        if self.base:
            if not path.startswith(self.base + "/"):
                return False
            path = path[len(self.base) + 1 :]
        return self.regex.fullmatch(path) is not None


def parse_gitignore(text: str, base: str = "") -> tuple[IgnoreRule, ...]:
    """The rules of a `.gitignore` file in folder `base` (relative to the repository root)."""
    rules = []
    for raw in text.splitlines():
        rule = _rule(raw, base)
        if rule is not None:
            rules.append(rule)
    return tuple(rules)


def _rule(line: str, base: str) -> IgnoreRule | None:
    if not line or line.startswith("#"):
        return None
    line = _strip_trailing_spaces(line)
    negate = line.startswith("!")
    if negate:
        line = line[1:]
    dir_only = line.endswith("/")
    if dir_only:
        line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    line = line.lstrip("/") if anchored else line
    body = translate(line)
    pattern = body if anchored or line.startswith("**/") else f"(?:.*/)?{body}"
    try:
        regex = re.compile(pattern, re.DOTALL)
    except re.error:
        return None
    return IgnoreRule(regex, negate, dir_only, base)


def _strip_trailing_spaces(line: str) -> str:
    """Trailing spaces go, unless quoted with a backslash (`foo\\ `)."""
    end = len(line)
    while end > 0 and line[end - 1] == " " and not (end >= 2 and line[end - 2] == "\\"):
        end -= 1
    return line[:end]


def decide(rules: Sequence[IgnoreRule], path: str, is_dir: bool) -> bool | None:
    """True (ignored) or False (re-included) by the last rule matching `path`; None when none does."""
    for rule in reversed(rules):
        if rule.matches(path, is_dir):
            return not rule.negate
    return None


def repository_root(path: Path) -> Path | None:
    """The work tree holding `path` (the nearest folder above with a `.git`), else None."""
    current = Path(os.path.abspath(path))
    for folder in (current, *current.parents):
        if (folder / ".git").exists():
            return folder
    return None


class GitIgnore:
    """The ignore rules of one repository, read folder by folder as a walk reaches them."""

    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.abspath(root))
        self._rules: dict[str, tuple[IgnoreRule, ...]] = {"": self._read_info_exclude() + self._read("")}

    def _read_info_exclude(self) -> tuple[IgnoreRule, ...]:
        try:
            text = (self.root / ".git" / "info" / "exclude").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ()
        return parse_gitignore(text)

    def _read(self, folder: str) -> tuple[IgnoreRule, ...]:
        try:
            text = (self.root / folder / ".gitignore").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ()
        return parse_gitignore(text, folder)

    def rules(self, folder: str, has_file: bool = True) -> tuple[IgnoreRule, ...]:
        """Every rule that applies inside `folder` (relative to the root), outermost first.

        `has_file=False`: the caller's listing shows no `.gitignore` there (saves opening it).
        """
        found = self._rules.get(folder)
        if found is None:
            parent = posixpath.dirname(folder)
            own = self._read(folder) if has_file else ()
            found = self._rules[folder] = self.rules(parent) + own
        return found

    def relative(self, path: Path) -> str | None:
        """`path` relative to the root, `/`-separated; None outside it."""
        try:
            return Path(os.path.abspath(path)).relative_to(self.root).as_posix()
        except ValueError:
            return None

    def ignored(self, path: Path, is_dir: bool | None = None) -> bool:
        """Whether git ignores `path`: it, or a folder above it inside the repository, matches."""
        relative = self.relative(path)
        if relative is None or relative in ("", "."):
            return False
        parts = relative.split("/")
        for depth in range(1, len(parts) + 1):
            sub = "/".join(parts[:depth])
            last = depth == len(parts)
            folder = not last or (path.is_dir() if is_dir is None else is_dir)
            if decide(self.rules("/".join(parts[: depth - 1])), sub, folder):
                return True
        return False


# -- settings patterns (exclude, extend-exclude, per-file-ignores) ------------------------


@dataclass(frozen=True)
class PathPattern:
    """A settings glob: by name (no `/`) or by path anchored at a folder, translated to a regex
    on first use (a config may list hundreds of thousands; most never meet a path they could match)."""

    glob: str
    by_name: bool
    dir_only: bool

    @functools.cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(translate(self.glob), re.DOTALL)

    @property
    def folder(self) -> str:
        """For a path pattern, the literal folder every path it matches lies in (with its `/`):
        the text before the first wildcard, up to its last `/`."""
        special = re.search(r"[*?\[\\]", self.glob)
        literal = self.glob if special is None else self.glob[: special.start()]
        return literal[: literal.rfind("/") + 1]


def compile_pattern(glob: str, anchor: str) -> list[PathPattern]:
    """The patterns for one settings glob; relative globs with a `/` are anchored at `anchor`."""
    out = []
    for one in expand_braces(os.path.normcase(glob)):
        dir_only = one.endswith("/") and len(one) > 1
        one = one.rstrip("/") if dir_only else one
        one = one.replace(os.sep, "/") if os.sep != "/" else one
        if "/" not in one:
            out.append(PathPattern(one, True, dir_only))
            continue
        if not posixpath.isabs(one) and not re.match(r"^[A-Za-z]:/", one):
            one = posixpath.join(_escape_glob(anchor), one)
        one = posixpath.normpath(one)
        out.append(PathPattern(one, False, dir_only))
    return out


def _escape_glob(path: str) -> str:
    """A folder path as a glob matching only itself."""
    return re.sub(r"([*?\[\\])", r"\\\1", os.path.normcase(path).replace(os.sep, "/"))


_JOINED_NAMES = 256  # by-name globs joined into one regex; beyond, each is tried alone


class PathMatcher:
    """Settings globs compiled once; `match` says whether a path matches any of them."""

    def __init__(self, globs: Iterable[str], anchor: str | os.PathLike[str]) -> None:
        root = os.path.abspath(anchor)
        self.patterns = tuple(p for g in globs for p in compile_pattern(g, root))
        self._by_name = [p for p in self.patterns if p.by_name]
        # Path patterns by the literal folder they start with: a path meets only those of its
        # own folders, so 500k `gen123/*.py` patterns cost a dict lookup per folder of a path.
        self._by_folder: dict[str, list[PathPattern]] = {}
        for pattern in self.patterns:
            if not pattern.by_name:
                self._by_folder.setdefault(pattern.folder, []).append(pattern)

    def __bool__(self) -> bool:
        return bool(self.patterns)

    @functools.cached_property
    def _names(self) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
        """The by-name patterns as one regex for folders and one for files (the dir-only ones
        left out), when there are few enough to join; a path's name fullmatches the union
        exactly when it fullmatches one of them."""
        if not self._by_name or len(self._by_name) > _JOINED_NAMES:
            return None, None
        joined = [
            re.compile("|".join(f"(?:{translate(p.glob, str(i))})" for i, p in enumerate(chosen)), re.DOTALL)
            if chosen
            else None
            for chosen in (self._by_name, [p for p in self._by_name if not p.dir_only])
        ]
        return joined[0], joined[1]

    def match(self, path: str | os.PathLike[str], is_dir: bool = False) -> bool:
        absolute = os.path.normcase(os.path.abspath(path)).replace(os.sep, "/")
        name = absolute.rsplit("/", 1)[-1]
        if self._by_name and len(self._by_name) <= _JOINED_NAMES:
            union = self._names[0 if is_dir else 1]
            if union is not None and union.fullmatch(name):
                return True
            candidates = []
        else:
            candidates = [*self._by_name]
        cut = absolute.find("/")
        while cut >= 0:  # every folder of the path, from the root down ("/", "/a/", "/a/b/", ...)
            candidates += self._by_folder.get(absolute[: cut + 1], ())
            cut = absolute.find("/", cut + 1)
        for pattern in candidates:
            if pattern.dir_only and not is_dir:
                continue
            if pattern.regex.fullmatch(name if pattern.by_name else absolute):
                return True
        return False
