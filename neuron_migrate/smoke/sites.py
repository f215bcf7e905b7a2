"""Which source line of the user's own code caused something. Imports no torch."""

from __future__ import annotations

import functools
import linecache
import os
import re
import sysconfig
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import CodeType, FrameType, TracebackType

_FRAME_LINE = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<function>[^\n]+)')
_LIBRARY_MARKERS = ("site-packages", "dist-packages")
MAX_SITES = 5  # user lines kept per op, per collective and per rank-merged op
# Code objects and (code, line) pairs remembered; beyond, each op's site is built again.
MAX_CACHED_SITES = 100_000


@dataclass(frozen=True, order=True)
class Site:
    """A line in a user file. `line` and `column` are 1-based; `code` is the stripped text."""

    path: str
    line: int
    function: str = ""
    column: int = 1
    code: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "line": self.line,
            "function": self.function,
            "column": self.column,
            "code": self.code,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Site:
        return cls(
            path=str(data["path"]),
            line=int(str(data["line"])),
            function=str(data.get("function", "")),
            column=int(str(data.get("column", 1))),
            code=str(data.get("code", "")),
        )


def make_site(path: str, line: int, function: str) -> Site:
    """A Site with the source text of `path:line` (read through linecache)."""
    text = linecache.getline(path, line).rstrip("\n")
    stripped = text.lstrip()
    return Site(path, line, function, len(text) - len(stripped) + 1, stripped.rstrip())


@dataclass(frozen=True)
class UserFiles:
    """Decides whether a file is the user's: under one of `roots`, not a library or ours."""

    roots: tuple[str, ...]
    excluded: tuple[str, ...] = ()

    @classmethod
    def for_script(cls, script: str, extra_roots: Iterable[str] = ()) -> UserFiles:
        here = os.path.dirname(os.path.abspath(__file__))
        package = os.path.dirname(here)  # neuron_migrate/
        stdlib = sysconfig.get_paths().get("stdlib", "")
        roots = (
            os.path.dirname(os.path.abspath(script)),
            *map(os.path.abspath, extra_roots),
        )
        excluded = tuple(p for p in (package, stdlib) if p)
        return cls(tuple(_as_dir(r) for r in roots), tuple(_as_dir(e) for e in excluded))

    def contains(self, filename: str) -> bool:
        return _is_user_file(filename, self.roots, self.excluded)


def _as_dir(path: str) -> str:
    return os.path.join(os.path.normpath(path), "")


@functools.lru_cache(maxsize=4096)
def _is_user_file(filename: str, roots: tuple[str, ...], excluded: tuple[str, ...]) -> bool:
    if not filename or filename.startswith("<"):
        return False
    path = os.path.normpath(os.path.abspath(filename))
    if any(marker in path.split(os.sep) for marker in _LIBRARY_MARKERS):
        return False
    if any(path.startswith(e) for e in excluded):
        return False
    return any(path.startswith(r) for r in roots)


def site_from_stack(frame: FrameType | None, files: UserFiles) -> Site | None:
    """The innermost frame at or above `frame` that lies in a user file."""
    while frame is not None:
        code = frame.f_code
        if files.contains(code.co_filename):
            return make_site(code.co_filename, frame.f_lineno, code.co_name)
        frame = frame.f_back
    return None


@dataclass
class SiteFinder:
    """`site_from_stack` for code run per op: a cheap walk, and each Site built only once.

    Whether a code object is the user's is decided once per code object, and the Site of a
    `(code, line)` pair (its source text read through linecache) once per pair, so finding the
    user line of the millionth op at a line costs a walk up to the first user frame and two
    dictionary lookups. Holds code objects and Sites only, never frames or tensors.
    """

    files: UserFiles
    _user_code: dict[CodeType, bool] = field(default_factory=dict)
    _sites: dict[tuple[CodeType, int], Site] = field(default_factory=dict)

    def site(self, frame: FrameType | None) -> Site | None:
        """The innermost frame at or above `frame` that lies in a user file."""
        user_code = self._user_code
        while frame is not None:
            code = frame.f_code
            mine = user_code.get(code)
            if mine is None:
                mine = self.files.contains(code.co_filename)
                if len(user_code) < MAX_CACHED_SITES:
                    user_code[code] = mine
            if mine:
                return self._site_of(code, frame.f_lineno)
            frame = frame.f_back
        return None

    def _site_of(self, code: CodeType, line: int) -> Site:
        key = (code, line)
        found = self._sites.get(key)
        if found is None:
            found = make_site(code.co_filename, line, code.co_name)
            if len(self._sites) < MAX_CACHED_SITES:
                self._sites[key] = found
        return found


def format_site(site: Site) -> str:
    """`site` as one entry of `traceback.format_stack()` (path, line, function, source)."""
    entry = f'  File "{site.path}", line {site.line}, in {site.function}\n'
    return entry + (f"    {site.code}\n" if site.code else "")


def site_from_formatted_stack(lines: Iterable[str], files: UserFiles) -> Site | None:
    """The innermost user frame of a `traceback.format_stack()` list (autograd anomaly data)."""
    found: Site | None = None
    for chunk in lines:
        match = _FRAME_LINE.search(chunk)
        if match and files.contains(match["path"]):
            found = make_site(match["path"], int(match["line"]), match["function"].strip())
    return found


def traceback_sites(tb: TracebackType | None, files: UserFiles) -> list[Site]:
    """Every frame of a traceback that lies in a user file, outermost first."""
    found: list[Site] = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if files.contains(code.co_filename):
            found.append(make_site(code.co_filename, tb.tb_lineno, code.co_name))
        tb = tb.tb_next
    return found
