"""Jupyter notebooks: check and fix the code cells of an `.ipynb` as one Python module.

- Code cells are joined (with a marker comment line between them) and checked together, so an
  import in one cell resolves names in the next. A `%%writefile x.py` cell is a file of its
  own, so it is checked as a separate module.
- IPython syntax is masked while parsing and restored afterwards (`engine/magics.py`);
  findings on placeholder lines are artifacts and are dropped. A cell whose `%%` magic runs
  another language (`%%bash`, `%%html`, `%%writefile notes.txt`) is skipped; `%%time`,
  `%%capture` and `%%writefile x.py` cells are checked as Python.
- Findings carry `cell`, 1-based among ALL cells (markdown included, as a notebook UI counts
  them), and positions relative to that cell. Fix edits are relative to the cell holding them.
- `--fix` replaces only the `source` value of changed cells inside the original JSON text
  (`engine/notebook_json.py`): outputs, metadata, key order, indentation and escaping stay
  byte-for-byte, and a notebook that nothing changes in is never rewritten.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from neuron_migrate.engine.check import tool_finding
from neuron_migrate.engine.formats.magics import (
    WRITEFILE_MAGICS,
    placeholder_lines,
    prepare,
    unmask,
)
from neuron_migrate.engine.formats.notebook_json import (
    NotebookError,
    Style,
    items,
    member,
    render_source,
    skip,
)
from neuron_migrate.model import FileResult, Finding, Position
from neuron_migrate.settings import Settings

SUFFIX = ".ipynb"
MARK = "# __neuron_migrate_cell_boundary__"

CheckFn = Callable[[str, str, Settings], FileResult]


def is_notebook(path: str) -> bool:
    return path.endswith(SUFFIX)


@dataclass(frozen=True)
class Cell:
    """A code cell that is checked as Python."""

    number: int  # 1-based among all cells
    span: tuple[int, int]  # offsets of its `source` value in the notebook's JSON text
    source: str  # the cell's text
    masked: str  # the Python the checker sees
    magics: tuple[tuple[int, str], ...]  # placeholder id -> original text
    standalone: bool = False  # a `%%writefile x.py` cell: its own module


# -- reading ---------------------------------------------------------------------------


def code_cells(text: str) -> list[Cell]:
    """Every code cell to check as Python, with its source span in the JSON text."""
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except ValueError as exc:
        raise NotebookError(f"invalid JSON: {exc}") from None
    except RecursionError:
        raise NotebookError("its JSON is nested too deeply to read") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise NotebookError("no `cells` list; only nbformat 4 notebooks are checked")
    if not _is_python(data.get("metadata")):
        return []
    try:
        return _cells(text)
    except (IndexError, ValueError) as exc:
        raise NotebookError(str(exc)) from None
    except RecursionError:
        raise NotebookError("its JSON is nested too deeply to read") from None


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object, refusing a repeated key: which copy counts would be a guess."""
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"the key {json.dumps(key)} appears twice in one object")
            seen.add(key)
    return found


def _is_python(metadata: object) -> bool:
    if not isinstance(metadata, dict):
        return True
    kernel = metadata.get("kernelspec")
    info = metadata.get("language_info")
    language = (
        (kernel.get("language") if isinstance(kernel, dict) else None)
        or (info.get("name") if isinstance(info, dict) else None)
        or "python"
    )
    return str(language).lower() == "python"


def _cells(text: str) -> list[Cell]:
    cells_span = member(text, skip(text, 0), "cells")
    assert cells_span is not None  # json.loads saw the list
    out: list[Cell] = []
    next_id = 0
    for number, (start, end) in enumerate(items(text, cells_span[0]), start=1):
        cell = json.loads(text[start:end])
        span = member(text, start, "source")
        if not isinstance(cell, dict) or cell.get("cell_type") != "code" or span is None:
            continue
        raw = cell.get("source", "")
        if isinstance(raw, list) and all(isinstance(line, str) for line in raw):
            source = "".join(raw)
        elif isinstance(raw, str):
            source = raw
        else:
            raise NotebookError(f"cell {number}: `source` must be a string or a list of strings")
        prepared = prepare(source, next_id)
        if prepared is None:
            continue
        masked, magics = prepared
        next_id += len(magics)
        out.append(Cell(number, span, source, masked, magics, _writes_file(source)))
    return out


def _writes_file(source: str) -> bool:
    words = source.split("\n", 1)[0].strip()[2:].split() if source.lstrip().startswith("%%") else []
    return bool(words) and words[0] in WRITEFILE_MAGICS


# -- joining and splitting -------------------------------------------------------------


def join(cells: Sequence[Cell]) -> tuple[str, list[int]]:
    """The module text for all cells, and the 1-based line where each cell starts."""
    parts: list[str] = []
    starts: list[int] = []
    line = 1
    for cell in cells:
        body = _with_newline(cell.masked)
        starts.append(line)
        parts.append(body + MARK + "\n")
        line += body.count("\n") + 1
    return "".join(parts), starts


def _with_newline(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def split(text: str, count: int) -> tuple[list[str], list[int]] | None:
    """The cell bodies of a joined module and their start lines; None when the markers moved."""
    pieces = re.split(rf"^{re.escape(MARK)}\n", text, flags=re.MULTILINE)
    if len(pieces) != count + 1 or pieces[-1]:
        return None
    starts: list[int] = []
    line = 1
    for piece in pieces[:-1]:
        starts.append(line)
        line += piece.count("\n") + 1
    return pieces[:-1], starts


# -- mapping findings ------------------------------------------------------------------


def _locate(position: Position, starts: Sequence[int]) -> tuple[int, Position]:
    index = max(bisect_right(starts, position.line) - 1, 0)
    return index, Position(position.line - starts[index] + 1, position.column)


def to_cells(finding: Finding, cells: Sequence[Cell], starts: Sequence[int]) -> Finding:
    """A finding on the joined module, moved to its cell and the line within that cell."""
    index, start = _locate(finding.start, starts)
    _, end = _locate(finding.end, starts)
    fix = finding.fix
    if fix is not None:
        edits = tuple(replace(e, start=_locate(e.start, starts)[1], end=_locate(e.end, starts)[1]) for e in fix.edits)
        requires = tuple(replace(r, start=_locate(r.start, starts)[1]) for r in fix.requires)
        fix = replace(fix, edits=edits, requires=requires)
    return replace(finding, cell=cells[index].number, start=start, end=end, fix=fix)


def rewrite(text: str, changes: Sequence[tuple[Cell, str]]) -> str | None:
    """The notebook JSON with changed cells' sources replaced; None when a magic went missing."""
    style = Style.of(text)
    replacements: list[tuple[tuple[int, int], str]] = []
    for cell, body in changes:
        restored = unmask(body, cell.magics)
        if restored is None:
            return None
        if cell.masked and not cell.masked.endswith("\n") and restored.endswith("\n"):
            restored = restored[:-1]
        if restored != cell.source:
            replacements.append((cell.span, render_source(text, cell.span, restored, style)))
    for (start, end), value in sorted(replacements, reverse=True):
        text = text[:start] + value + text[end:]
    return text


# -- the check -------------------------------------------------------------------------


def units(cells: Sequence[Cell]) -> list[list[Cell]]:
    """The modules to check: the notebook's cells together, and each `%%writefile` cell alone."""
    joined = [c for c in cells if not c.standalone]
    return ([joined] if joined else []) + [[c] for c in cells if c.standalone]


@dataclass(frozen=True)
class UnitResult:
    """One module's findings moved to cells, and its new cell bodies (None: unchanged)."""

    result: FileResult
    changes: tuple[tuple[Cell, str], ...] | None


def check_unit(cells: Sequence[Cell], path: str, settings: Settings, check: CheckFn) -> UnitResult:
    """Check the joined cells with `check` and map everything back to cells."""
    joined, starts = join(cells)
    result = _without_artifacts(check(joined, path, settings), joined)
    if result.fixed_source is None:
        return UnitResult(_mapped(result, cells, starts, starts), None)
    pieces = split(result.fixed_source, len(cells))
    if pieces is None or any(unmask(body, c.magics) is None for c, body in zip(cells, pieces[0])):
        unfixed = _without_artifacts(check(joined, path, replace(settings, fix=False, add_noqa=False)), joined)
        problem = tool_finding(
            path, "NM906", "Fix this notebook by hand; the fixes could not be mapped back to its cells"
        )
        mapped = _mapped(unfixed, cells, starts, starts)
        return UnitResult(replace(mapped, findings=(*mapped.findings, problem)), None)
    return UnitResult(_mapped(result, cells, starts, pieces[1]), tuple(zip(cells, pieces[0])))


def _without_artifacts(result: FileResult, joined: str) -> FileResult:
    """Drop findings on placeholder lines: they point at masked IPython syntax, not Python."""
    final = placeholder_lines(result.fixed_source if result.fixed_source is not None else joined)

    def keep(findings: tuple[Finding, ...]) -> tuple[Finding, ...]:
        return tuple(f for f in findings if f.start.line not in final)

    return replace(result, findings=keep(result.findings), suppressed=keep(result.suppressed))


def check_notebook(text: str, path: str, settings: Settings, check: CheckFn) -> FileResult:
    """Check (and maybe fix) a notebook's code cells with `check`, the Python pipeline."""
    try:
        cells = code_cells(text)
    except NotebookError as exc:
        return FileResult(path, (tool_finding(path, "NM911", f"Fix this notebook; {exc}"),), source=text)
    done = [check_unit(unit, path, settings, check) for unit in units(cells)]
    changes = [change for unit in done for change in unit.changes or ()]
    fixed_text = rewrite(text, changes) if changes else None
    return FileResult(
        path,
        findings=_sorted(f for unit in done for f in unit.result.findings),
        fixed=_sorted(f for unit in done for f in unit.result.fixed),
        source=text,
        fixed_source=fixed_text if fixed_text != text else None,
        suppressed=_sorted(f for unit in done for f in unit.result.suppressed),
        gone=_sorted(f for unit in done for f in unit.result.gone),
    )


def _sorted(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    return tuple(sorted(findings, key=lambda f: f.sort_key))


def _cells_of(findings: Sequence[Finding], cells: Sequence[Cell], starts: Sequence[int]) -> tuple[Finding, ...]:
    return tuple(to_cells(f, cells, starts) for f in findings)


def _mapped(result: FileResult, cells: Sequence[Cell], before: Sequence[int], after: Sequence[int]) -> FileResult:
    """`result` with findings moved to cells: fixed ones by the original layout, the rest by the final one."""
    return FileResult(
        result.path,
        findings=_cells_of(result.findings, cells, after),
        fixed=_cells_of(result.fixed, cells, before),
        suppressed=_cells_of(result.suppressed, cells, after),
        gone=_cells_of(result.gone, cells, before),
    )
