"""Apply planned fixes: reject overlaps, repair emptied blocks, add imports once, iterate."""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass

from neuron_migrate.analysis.analyze import Analysis, body_of
from neuron_migrate.engine.check import (
    Planned,
    follows_imports,
    import_anchor,
    import_text,
)
from neuron_migrate.model import Finding


@dataclass(frozen=True)
class Applied:
    """The new text and the findings whose fixes went into it."""

    text: str
    fixed: tuple[Finding, ...]


def apply_once(analysis: Analysis, chosen: list[Planned]) -> Applied:
    """Apply every non-overlapping plan in `chosen` to the analysed text."""
    accepted: list[Planned] = []
    taken: list[tuple[int, int]] = []
    for item in sorted(chosen, key=lambda p: min(e[0] for e in p.plan.edits)):  # type: ignore[union-attr]
        spans = [(s, e) for s, e, _ in item.plan.edits]  # type: ignore[union-attr]
        if any(_overlaps(span, other) for span in spans for other in taken):
            continue  # applied in the next round, once the text has settled
        accepted.append(item)
        taken.extend(spans)
    edits = _repair_empty_blocks(analysis, accepted)
    imports = tuple(sorted({key for item in accepted for key in item.plan.imports}))  # type: ignore[union-attr]
    if imports:
        anchor = import_anchor(analysis)
        text = import_text(imports, analysis.src.newline, analysis.text, anchor, follows_imports(analysis))
        edits.append((anchor, anchor, text))
    edits = _collapse_blank_lines(analysis.text, edits)
    text = analysis.text
    for start, end, content in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:start] + content + text[end:]
    return Applied(text, tuple(item.finding for item in accepted))


def _collapse_blank_lines(text: str, edits: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Deleting whole lines between two blank lines would leave a double gap; drop one blank."""
    deletions = sorted((s, e) for s, e, c in edits if not c and s < e)
    merged: list[list[int]] = []
    for start, end in deletions:
        if merged and merged[-1][1] == start:
            merged[-1][1] = end
        else:
            merged.append([start, end])
    extra = []
    for start, end in merged:
        at_line_start = start == 0 or text[start - 1] in "\r\n"
        before_blank = start == 0 or _blank_line_before(text, start)
        after = _line_at(text, end)
        if at_line_start and before_blank and after is not None and not after[1].strip():
            if not any(s <= end < e or (s == end and c) for s, e, c in edits):
                extra.append((end, end + len(after[1]) + len(after[0]), ""))
    return edits + extra


def _blank_line_before(text: str, start: int) -> bool:
    previous_end = start - (2 if text[max(start - 2, 0) : start] == "\r\n" else 1)
    line_start = max(text.rfind("\n", 0, previous_end), text.rfind("\r", 0, previous_end)) + 1
    return not text[line_start:previous_end].strip()


def _line_at(text: str, start: int) -> tuple[str, str] | None:
    """(line ending, line text) of the line starting at `start`, or None at the end of text."""
    if start >= len(text):
        return None
    for index in range(start, len(text)):
        if text[index] in "\r\n":
            ending = "\r\n" if text[index : index + 2] == "\r\n" else text[index]
            return ending, text[start:index]
    return "", text[start:]


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two edit spans conflict.

    An insertion conflicts with another insertion at the same point, and with a replaced span it
    lies in or touches, because each was planned against the text as it was: `, dynamic=False`
    after a removed `mode="..."` would leave `f(, dynamic=False)`, and two arguments added to an
    empty call would run together. The later plan is re-planned in the next round.
    """
    a_insert, b_insert = a[0] == a[1], b[0] == b[1]
    if a_insert and b_insert:
        return a[0] == b[0]
    if a_insert:
        return b[0] <= a[0] <= b[1]
    if b_insert:
        return a[0] <= b[0] <= a[1]
    return a[0] < b[1] and b[0] < a[1]


def _repair_empty_blocks(analysis: Analysis, accepted: list[Planned]) -> list[tuple[int, int, str]]:
    """Edits of the accepted plans; a block whose statements are all deleted keeps a `pass`."""
    edits: list[tuple[int, int, str]] = []
    deleted: dict[int, list[tuple[int, ast.stmt]]] = {}
    blocks: dict[int, list[ast.stmt]] = {}
    for item in accepted:
        plan = item.plan
        assert plan is not None
        for stmt in plan.deletes:
            parent = analysis.parent(stmt)
            block = body_of(parent, stmt) if parent is not None else None
            if block is not None:
                deleted.setdefault(id(block), []).append((len(edits), stmt))
                blocks[id(block)] = block
        edits.extend(plan.edits)
    for key, entries in deleted.items():
        block = blocks[key]
        if len(entries) < len(block) or analysis.parent(block[0]) is analysis.tree:
            continue
        index, stmt = entries[-1]
        start, end, _ = edits[index]
        indent = analysis.src.indent_of(stmt.lineno)
        edits[index] = (start, end, f"{indent}pass{analysis.src.newline}")
    return edits


def verify(text: str, filename: str) -> str | None:
    """Why `text` is not valid Python (compile and LibCST parse), or None when it is."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    import libcst  # only fixing needs it; imported here to keep start-up fast

    try:
        libcst.parse_module(text)
    except libcst.ParserSyntaxError as exc:
        return f"LibCST cannot parse the result: {str(exc).splitlines()[0]}"
    return None
