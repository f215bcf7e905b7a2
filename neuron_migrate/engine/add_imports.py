"""The text of a fix's new imports and helpers, and where in the module it goes.

`check` reports these insertions as part of each finding's fix (`import_edits`), and `--fix`
writes the same text once per round (`engine/apply.py`): each import into its group where isort
and Ruff sort it (`import_placement`), else after all the imports; helpers after the imports.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from dataclasses import dataclass

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.values import Edit, HelperRequest, ImportRequest, Request


def import_anchor(analysis: Analysis, before: int | None = None) -> int:
    """Where new imports go: after the module's last top-level import before other code, and
    before the statement holding offset `before` (the first code that needs them)."""
    body = analysis.tree.body
    last = None
    for index, stmt in enumerate(body):
        if before is not None and analysis.src.line_start((stmt.end_lineno or stmt.lineno) + 1) > before:
            break
        value = stmt.value if isinstance(stmt, ast.Expr) else None
        is_docstring = index == 0 and isinstance(value, ast.Constant) and isinstance(value.value, str)
        guarded_import = isinstance(stmt, ast.Try) and all(
            isinstance(s, (ast.Import, ast.ImportFrom)) for s in stmt.body
        )
        if isinstance(stmt, (ast.Import, ast.ImportFrom)) or is_docstring or guarded_import:
            last = stmt
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            break
    if last is None:
        return _after_header(analysis)
    return analysis.src.line_start((last.end_lineno or last.lineno) + 1)


_Key = tuple[int, int, str, str]  # ImportRequest.sort_key: isort's order


@dataclass(frozen=True)
class ImportPlacement:
    """Where a file's new imports go: into their group's imports, where isort would put them,
    else after all the imports."""

    anchor: int  # after the module's top-level imports
    follows_imports: bool
    groups: tuple[tuple[str, int], ...] = ()  # ("stdlib" or a top-level package, offset after its last import)
    # each group's import statements, in the file's order: (their isort key, offset of their line)
    members: tuple[tuple[str, tuple[tuple[_Key, int], ...]], ...] = ()
    present: frozenset[str] = frozenset()  # the `import x [as y]` statements the module makes already


def import_placement(analysis: Analysis, before: int | None = None) -> ImportPlacement:
    """Computed once per analysis: the import block's end, and where each group of it is
    (all of it before offset `before`, when given). `from __future__` imports are no group:
    nothing goes before them."""
    anchor = import_anchor(analysis, before)
    groups: dict[str, int] = {}
    members: dict[str, list[tuple[_Key, int]]] = {}
    present: set[str] = set()
    for stmt in analysis.tree.body:
        if analysis.src.line_start(stmt.lineno) >= anchor:
            break
        if isinstance(stmt, ast.Import):
            request = ImportRequest(stmt.names[0].name)
            present.update(ImportRequest(a.name, alias=a.asname).statement for a in stmt.names)
        elif isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level and stmt.module != "__future__":
            request = ImportRequest(stmt.module, name=stmt.names[0].name)
        else:
            continue
        group = group_of(request.module)
        groups[group] = analysis.src.line_start((stmt.end_lineno or stmt.lineno) + 1)
        members.setdefault(group, []).append((request.sort_key, analysis.src.line_start(stmt.lineno)))
    return ImportPlacement(
        anchor,
        follows_imports(analysis),
        tuple(sorted(groups.items())),
        tuple(sorted((group, tuple(found)) for group, found in members.items())),
        frozenset(present),
    )


def group_of(module: str) -> str:
    """An import's group: the standard library, or its top-level package."""
    root = module.split(".")[0]
    return "stdlib" if root in sys.stdlib_module_names else root


def import_edits(
    analysis: Analysis,
    requests: tuple[Request, ...],
    placement: ImportPlacement,
    mark_helpers: bool = False,
    before: int | None = None,
    inline: bool = False,
) -> list[Edit]:
    """The insertions that add the imports (and helpers) `requests` ask for.

    `import os` joins the standard-library imports and `import torch...` the torch ones when
    the file has such a group, where isort (and Ruff) would sort it in; the rest (and helpers)
    go after all the imports. All of them come before offset `before`, the first edit that uses
    them, even when imports follow it. An import the module makes already is not added again.
    """
    if not requests:
        return []
    if before is not None and before < placement.anchor:
        placement = import_placement(analysis, before)  # code before the last import uses them
    newline = analysis.src.newline
    by_offset: dict[int, list[ImportRequest]] = {}
    rest: list[Request] = []
    for request in requests:
        if isinstance(request, ImportRequest) and request.statement in placement.present:
            continue
        offset = _sorted_in(placement, request) if isinstance(request, ImportRequest) else None
        if offset is None or offset == placement.anchor:
            rest.append(request)
        else:
            by_offset.setdefault(offset, []).append(request)  # type: ignore[arg-type]  # only imports have a place
    edits = [Edit(at, at, import_lines(found, newline)) for at, found in sorted(by_offset.items())]
    if rest:
        text = import_text(
            tuple(rest),
            newline,
            analysis.text,
            placement.anchor,
            placement.follows_imports,
            analysis.indent_unit(),
            mark_helpers,
            inline,
        )
        edits.append(Edit(placement.anchor, placement.anchor, text))
    return edits


def _sorted_in(placement: ImportPlacement, request: ImportRequest) -> int | None:
    """Where `request` goes in its group: before the first of its imports that sorts after it,
    else after the group's last import; None when the module has no such group."""
    group = group_of(request.module)
    key = request.sort_key
    for found_group, members in placement.members:
        if found_group == group:
            later = next((at for found, at in members if found > key), None)
            return later if later is not None else dict(placement.groups)[group]
    return None


def import_lines(requests: Iterable[Request], newline: str) -> str:
    """The import statements among `requests`, once each, in isort's order, each on its line."""
    wanted = {r for r in requests if isinstance(r, ImportRequest)}
    return "".join(r.statement + newline for r in sorted(wanted, key=lambda r: r.sort_key))


def follows_imports(analysis: Analysis) -> bool:
    """Whether new imports join an existing import block (else they open one)."""
    return any(isinstance(s, (ast.Import, ast.ImportFrom)) for s in analysis.tree.body)


def _after_header(analysis: Analysis) -> int:
    """After a shebang, coding cookie and leading comments."""
    offset = 0
    line = 1
    while True:
        text = analysis.src.line_text(line)
        if text.startswith("#") and analysis.src.line_start(line + 1) > offset:
            offset = analysis.src.line_start(line + 1)
            line += 1
            continue
        return offset


def import_text(
    requests: tuple[Request, ...],
    newline: str,
    text: str,
    anchor: int,
    after_imports: bool = True,
    unit: str = "    ",
    mark_helpers: bool = False,
    inline: bool = False,
) -> str:
    """The import lines (and helper definitions, indented by `unit`) that `requests` ask for, ready to insert.

    With `mark_helpers`, a helper ends with `HELPER_END`, where `apply` makes two blank lines once
    every other edit is in (a statement deleted after the imports changes the gap).
    """
    out = import_lines(requests, newline)
    for source in helper_sources(requests, inline):
        out += newline + newline + _reindent(source, unit).rstrip("\n").replace("\n", newline) + newline
    if anchor == len(text) and text and not text.endswith(("\n", "\r")):
        return newline + out
    if not after_imports and anchor < len(text) and not text.startswith(("\n", "\r"), anchor):
        gap = 2 if text.startswith(("def ", "class ", "async def ", "@"), anchor) else 1
        out += newline * gap  # keep the inserted block apart from the code after it
    elif any(isinstance(r, HelperRequest) for r in requests):
        out += HELPER_END if mark_helpers else newline * max(0, 2 - _blank_lines_at(text, anchor))
    return out


def helper_sources(requests: tuple[Request, ...], inline: bool = False) -> list[str]:
    """The source of each helper among `requests`, in the order `checks.helpers.HELPERS` lists
    the helpers (then by module name). With `inline`, each helper imports torch's module in its
    own body (a module whose torch imports are all local)."""
    from neuron_migrate.checks.helpers import HELPERS, helper_text
    from neuron_migrate.engine.scoped_imports import inline_imports

    order = {name: index for index, name in enumerate(HELPERS)}
    helpers = sorted(
        {r for r in requests if isinstance(r, HelperRequest)}, key=lambda r: (order.get(r.name, len(order)), r)
    )
    out = []
    for request in helpers:
        source = helper_text(request)
        if source is not None and inline:
            source = inline_imports(source, request.module) or source
        if source is not None:
            out.append(source)
    return out


HELPER_END = "\x00helper-end\x00"  # cannot occur in Python source; `apply` sets the gap there


def _blank_lines_at(text: str, offset: int, most: int = 2) -> int:
    """How many blank lines start at `offset` (up to `most`); the end of the text counts as enough."""
    count = 0
    for line in text[offset : offset + 400].splitlines(keepends=True)[:most]:
        if line.strip():
            break
        count += 1
    return most if offset >= len(text) else count


def _reindent(code: str, unit: str) -> str:
    """`code`, written with four-space steps, indented with `unit` steps instead."""
    if unit == "    ":
        return code
    lines = []
    for line in code.split("\n"):
        stripped = line.lstrip(" ")
        lines.append(unit * ((len(line) - len(stripped)) // 4) + stripped)
    return "\n".join(lines)
