"""Apply planned fixes: reject overlaps, repair emptied blocks, add imports once, iterate."""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass

from neuron_migrate.engine.analyze import Analysis, body_of
from neuron_migrate.engine.check import Planned, import_anchor, import_text
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
        edits.append((anchor, anchor, import_text(imports, analysis.src.newline, analysis.text, anchor)))
    text = analysis.text
    for start, end, content in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:start] + content + text[end:]
    return Applied(text, tuple(item.finding for item in accepted))


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    if a[0] == a[1] or b[0] == b[1]:  # an insertion conflicts only when strictly inside
        return b[0] < a[0] < b[1] or a[0] < b[0] < a[1]
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
            block = body_of(analysis.parent(stmt), stmt) if analysis.parent(stmt) is not None else None
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
