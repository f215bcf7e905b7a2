"""Requirements in packaging files: requirements*.txt, pyproject.toml, setup.cfg and setup.py.

Each reader returns the requirements it finds with their offsets in the file, so findings point
at the right line, plus the span of whole lines a fix may delete when a requirement stands on
its own line(s). Only literal requirements are read; nothing is executed.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

_NAME = re.compile(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(\[[^\]]*\])?\s*")
_CLAUSE = re.compile(r"\s*(~=|===|==|!=|<=|>=|<|>)\s*([0-9][^\s,;)]*)\s*")
_VERSION = re.compile(r"(?:\d+!)?(\d+(?:\.\d+)*)(\.\*)?")
_INDEX_OPTION = re.compile(r"^\s*(?:--extra-index-url|--index-url|-i|--find-links|-f)[\s=]+(\S+)")
# pip's per-requirement options (`--hash`, `--config-settings`/`-C`, `--global-option`): they follow
# the requirement on its line, after whitespace, and are no part of the PEP 508 string.
_REQUIREMENT_OPTION = re.compile(r"\s+(?:--hash|--config-settings|-C|--global-option|--install-option)(?=[=\s]|$)")
_NEURON_URL = re.compile(r"https?://[^\s\"']*neuron", re.IGNORECASE)
_PAD = 8


@dataclass(frozen=True)
class Requirement:
    """One requirement as written, with where it is."""

    name: str  # normalised: lower case, runs of `-_.` as one `-`
    text: str  # the requirement as written, e.g. `torch-neuronx==2.13.*`
    clauses: tuple[tuple[str, str], ...]  # (operator, version)
    url: str | None
    start: int  # offsets of `text` in the file
    end: int
    lines: tuple[int, int] | None = None  # whole lines a fix may delete; None when shared


@dataclass(frozen=True)
class PackageFile:
    """A packaging file's requirements and whether it names the Neuron pip index."""

    requirements: tuple[Requirement, ...]
    index_hint: bool
    can_hold_index: bool  # requirements files and pyproject.toml can name an index; setup files cannot


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_requirement(text: str) -> tuple[str, tuple[tuple[str, str], ...], str | None] | None:
    """(normalised name, version clauses, direct URL) of a PEP 508 string; None if it is not one."""
    found = _NAME.match(text)
    if found is None:
        return None
    rest = text[found.end() :].strip()
    if rest.startswith("@"):
        return normalise(found.group(1)), (), rest[1:].split(";")[0].strip()
    spec = rest.split(";")[0].strip().strip("()")
    clauses = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        clause = _CLAUSE.fullmatch(part)
        if clause is None:
            return None
        clauses.append((clause.group(1), clause.group(2)))
    return normalise(found.group(1)), tuple(clauses), None


def without_options(line: str) -> str:
    """A requirements.txt line without the pip options after its requirement (`--hash=...`)."""
    found = _REQUIREMENT_OPTION.search(line)
    return line[: found.start()].rstrip() if found else line


def _requirement(text: str, start: int, lines: tuple[int, int] | None) -> Requirement | None:
    parsed = parse_requirement(text)
    if parsed is None:
        return None
    return Requirement(parsed[0], text, parsed[1], parsed[2], start, start + len(text), lines)


# -- readers ----------------------------------------------------------------------------------
def _line_offsets(text: str) -> list[tuple[int, str, int]]:
    """(offset, line without its ending, offset of the next line) for every line."""
    out, offset = [], 0
    for line in text.splitlines(keepends=True):
        out.append((offset, line.rstrip("\r\n"), offset + len(line)))
        offset += len(line)
    return out


def read_requirements_txt(text: str) -> PackageFile:
    """pip requirements: one requirement per logical line; `\\` continues a line."""
    found: list[Requirement] = []
    hint = False
    lines = _line_offsets(text)
    index = 0
    while index < len(lines):
        first = index
        while lines[index][1].endswith("\\") and index + 1 < len(lines):
            index += 1
        offset, line, _ = lines[first]
        end = lines[index][2]
        index += 1
        body = re.split(r"(?:^|\s)#", line, maxsplit=1)[0].rstrip().rstrip("\\").rstrip()
        option = _INDEX_OPTION.match(body)
        if option is not None:
            hint = hint or "neuron" in option.group(1).lower()
            continue
        stripped = body.strip()
        if not stripped or stripped.startswith("-"):
            continue
        stripped = without_options(stripped)
        req = _requirement(stripped, offset + line.index(stripped), (offset, end))
        if req is not None:
            found.append(req)
    return PackageFile(tuple(found), hint, can_hold_index=True)


def _toml_strings(text: str) -> list[tuple[int, str]]:
    """(offset, value) of every single-line TOML string literal outside comments."""
    strings: list[tuple[int, str]] = []
    for found in re.finditer(r'#[^\n]*|"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"((?:[^"\\\n]|\\.)*)"|\'([^\'\n]*)\'', text):
        if found.group(0).startswith("#") or found.group(0)[:3] in ('"""', "'''"):
            continue
        value = found.group(1) if found.group(1) is not None else found.group(2)
        strings.append((found.start(), value.replace('\\"', '"')))
    return strings


def read_pyproject(text: str) -> PackageFile:
    """`[project]` dependencies and optional-dependencies, and `[dependency-groups]`; raises ValueError."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(str(exc)) from None
    except RecursionError:
        raise ValueError("the TOML is nested too deeply to read") from None
    project = data.get("project", {}) if isinstance(data.get("project"), dict) else {}
    wanted: list[str] = [d for d in project.get("dependencies", []) if isinstance(d, str)]
    for group in (project.get("optional-dependencies", {}), data.get("dependency-groups", {})):
        if isinstance(group, dict):
            wanted += [d for values in group.values() if isinstance(values, list) for d in values if isinstance(d, str)]
    found: list[Requirement] = []
    offsets: dict[str, deque[int]] = {}  # each string literal's offsets, in order: one lookup per dependency
    for at, value in _toml_strings(text):
        offsets.setdefault(value, deque()).append(at)
    for dependency in wanted:
        free = offsets.get(dependency)
        if not free:
            continue
        offset = free.popleft()
        req = _requirement(dependency, offset + 1, _own_line(text, offset, offset + len(dependency) + 2, ","))
        if req is not None:
            found.append(req)
    content = "\n".join(line for _, line, _ in _line_offsets(text) if not line.lstrip().startswith("#"))
    return PackageFile(tuple(found), bool(_NEURON_URL.search(content)), can_hold_index=True)


_AFTER = re.compile(r"[ \t\r\f\v]*(?P<trailing>,?)[ \t\r\f\v]*(?:#[^\n]*)?(?:\n|\Z)")


def _own_line(text: str, start: int, end: int, trailing: str = "") -> tuple[int, int] | None:
    """The whole line holding text[start:end] when nothing else but `trailing` and a comment is on it.

    Only the blanks before `start` and what follows `end` up to the line's end are read, so a
    long line of many strings (80k dependencies in one array) costs linear time, not quadratic.
    """
    line_start = start
    while line_start > 0 and text[line_start - 1] in " \t\r\f\v":
        line_start -= 1
    if line_start > 0 and text[line_start - 1] != "\n":
        return None  # something else before it on the line
    after = _AFTER.match(text, end)
    if after is None:
        return None
    if after.group("trailing") and after.group("trailing") != trailing:
        return None
    return line_start, after.end()


def read_setup_cfg(text: str) -> PackageFile:
    """`install_requires` in `[options]` and every key of `[options.extras_require]`."""
    found: list[Requirement] = []
    section = ""
    in_list = False
    for offset, line, end in _line_offsets(text):
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            section, in_list = stripped[1:-1].strip(), False
            continue
        if not stripped or stripped.startswith(("#", ";")):
            continue
        continued = line[:1] in (" ", "\t")
        if not continued:
            key, _, value = line.partition("=")
            in_list = (
                section == "options" and key.strip() == "install_requires"
            ) or section == "options.extras_require"
            value = value.split(" #")[0].strip()
            if in_list and value:
                req = _requirement(value, offset + line.index(value, len(key) + 1), None)
                found += [req] if req is not None else []
            continue
        if in_list:
            value = stripped.split(" #")[0].strip()
            req = _requirement(value, offset + line.index(value), (offset, end))
            found += [req] if req is not None else []
    return PackageFile(tuple(found), False, can_hold_index=False)


def read_setup_py(text: str) -> PackageFile:
    """Literal `install_requires` / `extras_require` of `setup(...)`, or a module-level list they name."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return PackageFile((), False, can_hold_index=False)
    lists = {
        t.id: s.value for s in tree.body if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)
    }
    found: list[Requirement] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not _is_setup(node.func):
            continue
        for keyword in node.keywords:
            if keyword.arg in ("install_requires", "extras_require"):
                found += _literal_requirements(text, keyword.value, lists)
    return PackageFile(tuple(found), False, can_hold_index=False)


def _is_setup(func: ast.AST) -> bool:
    return (isinstance(func, ast.Name) and func.id == "setup") or (
        isinstance(func, ast.Attribute) and func.attr == "setup"
    )


def _literal_requirements(text: str, value: ast.AST, lists: Mapping[str, ast.AST]) -> list[Requirement]:
    if isinstance(value, ast.Name) and value.id in lists:
        value = lists[value.id]
    values = [*value.values] if isinstance(value, ast.Dict) else [value]
    found: list[Requirement] = []
    starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
    for item in values:
        if isinstance(item, ast.Name) and item.id in lists:
            item = lists[item.id]
        if not isinstance(item, (ast.List, ast.Tuple)):
            continue
        for element in item.elts:
            if (
                isinstance(element, ast.Constant)
                and isinstance(element.value, str)
                and element.lineno == element.end_lineno
            ):
                line = text[starts[element.lineno - 1] :].split("\n", 1)[0]
                column = len(line.encode("utf-8")[: element.col_offset].decode("utf-8", "ignore"))
                req = _requirement(element.value, starts[element.lineno - 1] + column + 1, None)
                found += [req] if req is not None else []
    return found


# -- versions ----------------------------------------------------------------------------------
def _release(version: str) -> tuple[tuple[int, ...], bool] | None:
    """(release numbers, is a `.*` wildcard) of a version; pre/post/local parts are ignored."""
    found = _VERSION.match(version)
    if found is None:
        return None
    return tuple(int(p) for p in found.group(1).split(".")), found.group(2) is not None


def pad(numbers: tuple[int, ...]) -> tuple[int, ...]:
    return (numbers + (0,) * _PAD)[:_PAD]


def _bump(numbers: tuple[int, ...]) -> tuple[int, ...]:
    return (*numbers[:-1], numbers[-1] + 1)


def _just_above(numbers: tuple[int, ...]) -> tuple[int, ...]:
    """The smallest padded release above `numbers`: an inclusive bound made exclusive."""
    return _bump(pad(numbers))


def bounds(clauses: tuple[tuple[str, str], ...]) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
    """(lowest allowed, first excluded above) release, padded; None where a side is open."""
    low: tuple[int, ...] | None = None
    high: tuple[int, ...] | None = None
    for operator, version in clauses:
        parsed = _release(version)
        if parsed is None or operator == "!=":
            continue
        numbers, wildcard = parsed
        lo, hi = None, None
        if operator in ("==", "==="):
            lo, hi = numbers, _bump(numbers) if wildcard else _just_above(numbers)
        elif operator == "~=" and len(numbers) > 1:
            lo, hi = numbers, _bump(numbers[:-1])
        elif operator in (">=", ">"):
            lo = numbers
        elif operator == "<":
            hi = numbers
        elif operator == "<=":
            hi = _just_above(numbers)
        if lo is not None and (low is None or pad(lo) > low):
            low = pad(lo)
        if hi is not None and (high is None or pad(hi) < high):
            high = pad(hi)
    return low, high


def below(clauses: tuple[tuple[str, str], ...], family: str) -> bool:
    """Whether the clauses allow no version of `family` (e.g. "2.13") or later."""
    _, high = bounds(clauses)
    return high is not None and high <= pad(tuple(int(p) for p in family.split(".")))


def family_of(clauses: tuple[tuple[str, str], ...]) -> str | None:
    """The `major.minor` family the clauses pin to, when they allow exactly one."""
    low, high = bounds(clauses)
    if low is None or high is None or high <= low:
        return None
    if high <= pad((low[0], low[1] + 1)):
        return f"{low[0]}.{low[1]}"
    return None
