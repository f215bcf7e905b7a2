"""IPython syntax in notebook cells: mask it so the cell parses as Python, and put it back.

A masked line becomes a placeholder call that names every identifier the magic mentions
(`%time xm.step()` -> `__nm_magic_3__(time, xm, step)`), so an import used only by a magic still
counts as used. Backslash-continued magic lines become placeholder comments. Cells are masked
only when they do not parse as they are, so `%` inside strings is never touched.
"""

from __future__ import annotations

import ast
import keyword
import re
import warnings
from collections.abc import Sequence

PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})  # the body is Python
WRITEFILE_MAGICS = frozenset({"writefile", "file"})
_TOKEN = re.compile(r"__nm_magic_(\d+)__(?:\([^()\n]*\))?")
_IDENTIFIER = re.compile(r"[^\W\d]\w*")
_WHOLE_LINE = re.compile(r"^[ \t]*#__nm_magic_(\d+)__$", re.MULTILINE)
_ASSIGNED_MAGIC = re.compile(r"^([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*)([%!].*)$")
_HELP = re.compile(r"^[A-Za-z_][\w.]*\?{1,2}$")


def prepare(source: str, first_id: int) -> tuple[str, tuple[tuple[int, str], ...]] | None:
    """The Python to check for a cell, or None when its `%%` magic runs another language."""
    first = source.split("\n", 1)[0].strip()
    if first.startswith("%%"):
        name, *args = first[2:].split() or [""]
        python_body = name in PYTHON_CELL_MAGICS or (
            name in WRITEFILE_MAGICS and bool(args) and args[-1].endswith(".py")
        )
        if not python_body:
            return None
    if _parses(source):
        return source, ()
    return mask(source, first_id)


def _parses(source: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _magic(line: str) -> tuple[str, str] | None:
    """(text kept, magic text) when `line` is IPython syntax rather than Python."""
    stripped = line.lstrip()
    indent = line[: len(line) - len(stripped)]
    if stripped.startswith(("%", "!", "?")) or _HELP.match(stripped.rstrip()):
        return indent, stripped
    assigned = _ASSIGNED_MAGIC.match(stripped)
    if assigned:
        return indent + assigned.group(1), assigned.group(2)
    return None


def mask(source: str, first_id: int) -> tuple[str, tuple[tuple[int, str], ...]]:
    """Replace IPython lines with placeholders; continuation lines become placeholder comments."""
    lines = source.split("\n")
    magics: list[tuple[int, str]] = []
    out: list[str] = []
    index = 0
    while index < len(lines):
        found = _magic(lines[index])
        if found is None:
            out.append(lines[index])
            index += 1
            continue
        kept, magic = found
        first = first_id + len(magics)
        magics.append((first, magic))
        words = [magic]
        continuation: list[str] = []
        while lines[index].rstrip().endswith("\\") and index + 1 < len(lines):
            index += 1
            ident = first_id + len(magics)
            magics.append((ident, lines[index]))
            words.append(lines[index])
            continuation.append(f"#__nm_magic_{ident}__")
        out.append(f"{kept}__nm_magic_{first}__({', '.join(_names(' '.join(words)))})")
        out.extend(continuation)
        index += 1
    return "\n".join(out), tuple(magics)


def _names(text: str) -> list[str]:
    """The identifiers a magic mentions, as loads the resolver sees (keywords left out)."""
    return list(dict.fromkeys(w for w in _IDENTIFIER.findall(text) if w.isidentifier() and not keyword.iskeyword(w)))


def placeholder_lines(text: str) -> frozenset[int]:
    """1-based lines of `text` that hold a magic placeholder."""
    return frozenset(index + 1 for index, line in enumerate(text.split("\n")) if "__nm_magic_" in line)


def unmask(text: str, magics: Sequence[tuple[int, str]]) -> str | None:
    """Put the IPython lines back; None when a placeholder went missing or was duplicated."""
    originals = dict(magics)
    seen = [int(n) for n in _TOKEN.findall(text)]
    if sorted(seen) != sorted(originals):
        return None
    text = _WHOLE_LINE.sub(lambda m: originals[int(m.group(1))], text)
    return _TOKEN.sub(lambda m: originals[int(m.group(1))], text)
