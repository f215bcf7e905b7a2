"""An `if`/`elif`/`else` whose branches the fixes made identical is merged into one branch.

`if pt21: init("xla", init_method="xla://")` / `elif pt20: init("xla", init_method="pjrt://")` /
`else: init("xla")` becomes three `init("neuron")` calls once fixed; a reviewer writes one. The
trailing branches that became the same as the `else` block are merged into it, their tests
dropped; when every branch is the same the statement becomes that block, one level out. A test
is dropped only when it only reads (a name, an attribute, a comparison: see
engine/conditions.py), or, for a plain `if`/`else`, kept as a statement when it is a call on one
line. Branches that were the same before the fixes are the user's and are left alone.
"""

from __future__ import annotations

import ast
import textwrap
import warnings
from bisect import bisect_left
from dataclasses import dataclass

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.values import Edit
from neuron_migrate.engine.conditions import is_xla_guard, side_effect_free


@dataclass(frozen=True)
class _Branch:
    test: ast.expr | None  # None: the `else` block
    header: int  # the line of its `if`/`elif`/`else:`
    start: int  # offsets of its block's lines
    end: int


def merged_branches(analysis: Analysis, edits: list[Edit]) -> list[Edit]:
    """`edits`, where those inside an `if` whose branches they make identical become one edit
    that merges them (see the module's docstring)."""
    if not edits:
        return edits
    ordered = sorted(edits, key=lambda e: (e.start, e.end))
    starts = [e.start for e in ordered]
    replaced: list[tuple[int, int, Edit]] = []
    for stmt in analysis.nodes(ast.If):
        start, end = analysis.src.line_start(stmt.lineno), analysis.src.line_start((stmt.end_lineno or 0) + 1)
        first, last = bisect_left(starts, start), bisect_left(starts, end)
        if first == last or not stmt.orelse or _is_elif(analysis, stmt):
            continue
        inside = ordered[first:last]
        if any(e.end > end for e in inside) or any(s <= first < e for s, e, _ in replaced):
            continue
        edit = _merged(analysis, stmt, inside)
        if edit is not None:
            replaced.append((first, last, edit))
    if not replaced:
        return edits
    kept = [e for i, e in enumerate(ordered) if not any(s <= i < t for s, t, _ in replaced)]
    return kept + [edit for _, _, edit in replaced]


def _merged(analysis: Analysis, stmt: ast.If, edits: list[Edit]) -> Edit | None:
    branches = _branches(analysis, stmt)
    if branches is None or not all(any(b.start <= e.start and e.end <= b.end for b in branches) for e in edits):
        return None  # an edit in a test, or a branch sharing its header's line
    old = [_dump(analysis.text[b.start : b.end]) for b in branches]
    new_texts = [_edited(analysis.text, b, edits) for b in branches]
    new = [_dump(text) for text in new_texts]
    if None in new or None in old:
        return None
    same = 1
    while same < len(branches) and new[-1 - same] == new[-1]:
        same += 1
    if same == 1 or all(o == old[-1] for o in old[-same:]):
        return None  # nothing merged, or the user's own identical branches
    kept = len(branches) - same  # the first merged branch's block is written
    dropped = [b.test for b in branches[kept:-1] if b.test is not None]
    src = analysis.src
    if kept:
        if not all(_droppable(t) for t in dropped):
            return None
        header = src.line_start(branches[kept].header)
        indent = src.indent_of(branches[0].header)
        return Edit(header, branches[-1].end, f"{indent}else:{src.newline}{new_texts[kept]}")
    return _whole(analysis, stmt, branches, new_texts[0], dropped)


def _whole(
    analysis: Analysis, stmt: ast.If, branches: list[_Branch], text: str, dropped: list[ast.expr]
) -> Edit | None:
    """The `if` replaced by its one block, one level out (after its test, when that is a call
    that must still run)."""
    src = analysis.src
    prefix = ""
    if not all(_droppable(t) for t in dropped):
        test = dropped[0]
        if len(dropped) != 1 or not isinstance(test, ast.Call) or test.lineno != test.end_lineno:
            return None
        prefix = f"{src.indent_of(stmt.lineno)}{analysis.segment(test)}{src.newline}"
    outer = src.indent_of(stmt.lineno)
    block = _outdented(text, outer)
    if block is None:
        return None
    return Edit(src.line_start(stmt.lineno), branches[-1].end, prefix + block)


def _branches(analysis: Analysis, stmt: ast.If) -> list[_Branch] | None:
    """The chain's branches, the `else` block last; None when it has no `else:` or a block
    shares its header's line."""
    src = analysis.src
    branches: list[_Branch] = []
    current: ast.If = stmt
    while True:
        branches.append(_branch(analysis, current.test, current.lineno, current.body))
        orelse = current.orelse
        if len(orelse) == 1 and isinstance(orelse[0], ast.If) and _is_elif(analysis, orelse[0]):
            current = orelse[0]
            continue
        line = src.else_line(current) if orelse else None
        if line is None:
            return None
        branches.append(_branch(analysis, None, line, orelse))
        break
    if any(b.start <= src.line_start(b.header) for b in branches):
        return None
    return [
        _Branch(b.test, b.header, b.start, src.line_start(after.header) if after is not None else b.end)
        for b, after in zip(branches, [*branches[1:], None])
    ]


def _branch(analysis: Analysis, test: ast.expr | None, header: int, block: list[ast.stmt]) -> _Branch:
    src = analysis.src
    last = block[-1].end_lineno or block[-1].lineno
    return _Branch(test, header, src.line_start(block[0].lineno), src.line_start(last + 1))


def _is_elif(analysis: Analysis, stmt: ast.If) -> bool:
    return analysis.src.line_text(stmt.lineno).lstrip().startswith("elif")


def _edited(text: str, branch: _Branch, edits: list[Edit]) -> str:
    pieces, last = [], branch.start
    for start, end, content in edits:
        if branch.start <= start and end <= branch.end:
            pieces += [text[last:start], content]
            last = end
    return "".join(pieces) + text[last : branch.end]


def _dump(block: str) -> str | None:
    """The block's `ast`, without positions; None when it does not parse alone."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(textwrap.dedent(block))
    except (SyntaxError, ValueError):
        return None
    return ast.dump(tree) if tree.body else None


def _outdented(block: str, outer: str) -> str | None:
    """`block`'s lines moved out to `outer`'s indentation; None when that changes what it means
    (a string spanning lines)."""
    lines = block.splitlines(keepends=True)
    inner = next((line[: len(line) - len(line.lstrip(" \t"))] for line in lines if line.strip()), "")
    if not inner.startswith(outer) or len(inner) == len(outer):
        return None
    moved = "".join(outer + line[len(inner) :] if line.startswith(inner) else line for line in lines)
    return moved if _dump(moved) == _dump(block) and _dump(moved) is not None else None


def _droppable(test: ast.expr) -> bool:
    return is_xla_guard(test) or side_effect_free(test)
