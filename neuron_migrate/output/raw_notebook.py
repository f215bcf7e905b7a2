"""Notebook findings re-expressed against the raw `.ipynb` JSON, for formats a CI tool reads.

A notebook finding carries its cell and a position inside that cell; SARIF, rdjson, GitLab and
GitHub annotations place it by line and column of the file itself, and a bot applies their
replacements to the file's bytes. This module maps a cell position to the line and column where
that character is written in the JSON (inside its string literal, escapes counted), and a fix's
edits to replacements of the JSON text. A fix that cannot be written that way (an edit touching
masked IPython syntax, a cell whose `source` list does not hold one line per string) is left
out: a bot must never write Python into the JSON.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import pairwise

from neuron_migrate.engine.formats.notebook import Cell, code_cells
from neuron_migrate.engine.formats.notebook_json import NotebookError, Style, items
from neuron_migrate.model import FileResult, Finding, Position, TextEdit

_MAGIC = "__nm_magic_"


@dataclass(frozen=True)
class _Element:
    """One JSON string of a cell's `source`: its decoded span in the cell and its raw token span."""

    begin: int
    end: int
    token_start: int
    token_end: int


@dataclass(frozen=True)
class CellMap:
    """Where each character of one cell's source is written in the notebook's JSON text."""

    cell: Cell
    offsets: tuple[int, ...]  # raw offset of each decoded character, and of the end
    line_starts: tuple[int, ...]  # decoded offset where each line of the cell starts
    elements: tuple[_Element, ...]
    listed: bool  # `source` is a JSON list (else one string)

    def offset(self, position: Position) -> int | None:
        """The decoded offset of a (line, column) in the cell; None past its end."""
        if not 1 <= position.line <= len(self.line_starts):
            return None
        value = self.line_starts[position.line - 1] + position.column - 1
        return value if value < len(self.offsets) else None


def _string_offsets(text: str, start: int) -> tuple[list[int], int]:
    """The raw offset of each character a JSON string literal at `text[start]` decodes to, and its end."""
    out: list[int] = []
    index = start + 1
    while text[index] != '"':
        out.append(index)
        if text[index] != "\\":
            index += 1
        elif text[index + 1] != "u":
            index += 2
        else:
            unit = int(text[index + 2 : index + 6], 16)
            index += 6
            if 0xD800 <= unit < 0xDC00 and text.startswith("\\u", index):  # a surrogate pair: one character
                index += 6
    return out, index


def cell_map(text: str, cell: Cell) -> CellMap | None:
    """The map for one cell; None when its `source` decodes to something other than the cell text."""
    start, end = cell.span
    spans = list(items(text, start)) if text[start] == "[" else [(start, end)]
    offsets: list[int] = []
    elements: list[_Element] = []
    for token_start, token_end in spans:
        chars, closing = _string_offsets(text, token_start)
        elements.append(_Element(len(offsets), len(offsets) + len(chars), token_start, token_end))
        offsets.extend(chars)
        last = closing
    if len(offsets) != len(cell.source):
        return None
    offsets.append(last if spans else start)
    line_starts = [0] + [i + 1 for i, c in enumerate(cell.source) if c == "\n"]
    return CellMap(cell, tuple(offsets), tuple(line_starts), tuple(elements), text[start] == "[")


class RawNotebook:
    """One notebook's text with a map per code cell, built once per file."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._newlines = [i for i, c in enumerate(text) if c == "\n"]
        try:
            cells = code_cells(text)
        except NotebookError:
            cells = []
        maps = ((c.number, cell_map(text, c)) for c in cells)
        self.cells = {number: m for number, m in maps if m is not None}
        self.style = Style.of(text) if self.cells else None

    def position(self, offset: int) -> Position:
        """A raw offset as a 1-based line and code-point column of the file."""
        line = bisect_right(self._newlines, offset - 1)
        line_start = self._newlines[line - 1] + 1 if line else 0
        return Position(line + 1, offset - line_start + 1)

    def raw(self, finding: Finding) -> Finding | None:
        """The finding placed in the raw file, with a fix only where it is written against the JSON.

        None when the finding's cell has no map (the caller keeps the finding as it was).
        """
        if finding.cell is None or finding.cell not in self.cells:
            return None
        cells = self.cells[finding.cell]
        start, end = cells.offset(finding.start), cells.offset(finding.end)
        if start is None or end is None:
            return None
        fix = finding.fix
        if fix is not None:
            edits = self._edits(cells, fix.edits)
            fix = replace(fix, edits=edits) if edits else None
        return replace(
            finding,
            start=self.position(cells.offsets[start]),
            end=self.position(cells.offsets[max(end, start)]),
            fix=fix,
            message=f"cell {finding.cell}: {finding.message}",
            cell=None,
        )

    # -- fixes ------------------------------------------------------------------------------

    def _edits(self, cells: CellMap, edits: Sequence[TextEdit]) -> tuple[TextEdit, ...] | None:
        out: list[tuple[int, int, str]] = []
        for edit in edits:
            raw = self._edit(cells, edit)
            if raw is None:
                return None
            out.append(raw)
        out.sort()
        if any(a[1] > b[0] for a, b in pairwise(out)):
            return None  # two edits widened onto one line: not expressible as separate replacements
        return tuple(TextEdit(self.position(s), self.position(e), content) for s, e, content in out)

    def _edit(self, cells: CellMap, edit: TextEdit) -> tuple[int, int, str] | None:
        """One edit as (raw start, raw end, raw text); None when it cannot be written against the JSON."""
        start, end = cells.offset(edit.start), cells.offset(edit.end)
        source = cells.cell.source
        if start is None or end is None or end < start or _MAGIC in edit.content:
            return None
        if not _unmasked(cells, edit.start.line, edit.end.line):
            return None
        assert self.style is not None
        if cells.listed and not _one_line_each(cells):
            return None  # `--fix` writes such a list back one line per item: a local edit would differ
        element = _element_at(cells.elements, start)
        one_line = "\n" not in edit.content and "\n" not in source[start:end]
        if not cells.listed or (one_line and element is not None and end <= element.end):
            return cells.offsets[start], cells.offsets[end], self.style.dumps(edit.content)[1:-1]
        return self._lines(cells, start, end, edit.content)

    def _lines(self, cells: CellMap, start: int, end: int, content: str) -> tuple[int, int, str] | None:
        """Replace the whole list items the edit touches with the new lines, one JSON string each."""
        assert self.style is not None
        elements = cells.elements
        first = _index_at(elements, start)
        last = _index_at(elements, end - 1) if end > start else first
        if first is None or last is None:
            return None
        source = cells.cell.source
        new = source[elements[first].begin : start] + content + source[end : elements[last].end]
        lines = new.splitlines(keepends=True)
        if lines:
            separator = self._separator(cells)
            text = separator.join(self.style.dumps(line) for line in lines)
            return elements[first].token_start, elements[last].token_end, text
        if last + 1 < len(elements):
            return elements[first].token_start, elements[last + 1].token_start, ""
        if first > 0:
            return elements[first - 1].token_end, elements[last].token_end, ""
        return cells.cell.span[0], cells.cell.span[1], "[]"

    def _separator(self, cells: CellMap) -> str:
        """What stands between two items of the cell's `source` list, as `--fix` writes it."""
        elements = cells.elements
        if len(elements) >= 2:
            return self.text[elements[0].token_end : elements[1].token_start]
        assert self.style is not None
        multiline = re.match(r"\[(\r?\n)([ \t]*)", self.text[cells.cell.span[0] : cells.cell.span[1]])
        return "," + multiline.group(1) + multiline.group(2) if multiline else self.style.inline_separator


def _element_at(elements: Sequence[_Element], offset: int) -> _Element | None:
    index = _index_at(elements, offset)
    if index is None and elements and offset == elements[-1].end:
        return elements[-1]
    return elements[index] if index is not None else None


def _index_at(elements: Sequence[_Element], offset: int) -> int | None:
    return next((i for i, e in enumerate(elements) if e.begin <= offset < e.end), None)


def _one_line_each(cells: CellMap) -> bool:
    """Whether every item of the list is one line: what `--fix` writes back, so both agree."""
    lines = [cells.cell.source[e.begin : e.end] for e in cells.elements]
    whole = all(line.endswith("\n") and line.count("\n") == 1 for line in lines[:-1])
    return whole and (not lines or lines[-1].count("\n") == lines[-1].endswith("\n") and lines[-1] != "")


def _unmasked(cells: CellMap, first: int, last: int) -> bool:
    """Whether lines `first`..`last` of the cell read the same in the checked text as in the file."""
    masked = cells.cell.masked.split("\n")
    source = cells.cell.source.split("\n")
    return masked[first - 1 : last] == source[first - 1 : last]


def raw_findings(findings: Sequence[Finding], texts: dict[str, str]) -> list[Finding]:
    """Each notebook finding placed in its raw file (others as they are), in the same order."""
    notebooks: dict[str, RawNotebook] = {}
    out = []
    for finding in findings:
        if finding.cell is None or finding.path not in texts:
            out.append(finding)
            continue
        notebook = notebooks.get(finding.path)
        if notebook is None:
            notebook = notebooks[finding.path] = RawNotebook(texts[finding.path])
        out.append(notebook.raw(finding) or finding)
    return out


def notebook_texts(results: Sequence[FileResult]) -> dict[str, str]:
    """Each notebook's text as its remaining findings see it: after fixes when `--fix` changed it."""
    out = {}
    for result in results:
        text = result.fixed_source if result.fixed_source is not None else result.source
        if result.path.endswith(".ipynb") and text is not None:
            out[result.path] = text
    return out
