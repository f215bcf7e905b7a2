"""Apply planned fixes: reject overlaps, repair emptied blocks, add imports once, iterate.

Everything here is linear or n log n in the number of edits, so that a file with very many
fixes is applied as fast as a small one per fix (tests/test_fix_scale.py).
"""

from __future__ import annotations

import warnings
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.values import Edit
from neuron_migrate.engine.add_imports import (
    HELPER_END,
    import_edits,
    import_placement,
)
from neuron_migrate.engine.branches import merged_branches
from neuron_migrate.engine.check import Planned, concrete_edits
from neuron_migrate.engine.empty_blocks import repair_empty_blocks
from neuron_migrate.engine.realign import realigned
from neuron_migrate.engine.scoped_imports import scope_imports
from neuron_migrate.model import Finding
from neuron_migrate.settings import Settings


@dataclass(frozen=True)
class Applied:
    """The new text, the findings whose fixes went into it, and the plans whose transform
    declined (not applied: their findings stay unfixed)."""

    text: str
    fixed: tuple[Finding, ...]
    declined: tuple[Planned, ...] = ()


def plan_key(item: Planned) -> tuple[str, str, str]:
    """What a plan does, independent of offsets (they shift between rounds)."""
    plan = item.plan
    if plan is not None and plan.transform is not None:
        change = plan.transform
        edit = f"{change.function}{change.options!r}"
    else:
        edit = plan.edits[0][2] if plan is not None and plan.edits else ""
    return item.finding.code, item.finding.snippet or "", edit


def choose(
    planned: list[Planned],
    settings: Settings,
    reported: Callable[[Finding], bool],
    dropped: AbstractSet[tuple[str, str, str]],
) -> list[Planned]:
    """The plans a fix round applies: fixes the settings allow, of reported findings, less the
    plans that broke the file in an earlier round (`dropped`, by `plan_key`)."""
    return [
        p
        for p in planned
        if p.plan is not None
        and settings.allows(p.applicability.value)
        and reported(p.finding)
        and (not dropped or plan_key(p) not in dropped)
    ]


def apply_once(analysis: Analysis, chosen: list[Planned]) -> Applied:
    """Apply every non-overlapping plan in `chosen` to the analysed text.

    A plan's transform runs first (LibCST), so that every plan is text edits from then on.
    """
    concrete: list[tuple[Planned, tuple[Edit, ...]]] = []
    declined: list[Planned] = []
    for item in chosen:
        found = concrete_edits(analysis, item.plan)  # type: ignore[arg-type]  # callers choose findings with a plan
        if found is None:
            declined.append(item)
        else:
            concrete.append((item, found))
    accepted, shared = _accept(concrete, lambda item: analysis.src.node_span(item.match.node) if item.match else None)
    items = [item for item, _ in accepted]
    planned_edits = [edits for _, edits in accepted]
    edits = merged_branches(analysis, repair_empty_blocks(analysis, items, planned_edits))
    edits.extend(_orphaned_comments(analysis.text, edits))
    scoped = scope_imports(analysis, [(e, item.plan.imports) for item, e in accepted])  # type: ignore[union-attr]
    edits.extend(scoped.local_edits)  # torch imported where the module imports it: in its functions
    imports = scoped.module_requests
    fixed = tuple(item.finding for item in [*items, *shared])
    first = min((e.start for item, found in accepted if item.plan.imports for e in found), default=None)  # type: ignore[union-attr]
    edits.extend(
        import_edits(
            analysis, imports, import_placement(analysis), mark_helpers=True, before=first, inline=scoped.inline
        )
    )
    edits = realigned(analysis, edits)  # continuation lines follow the bracket they were under
    edits = _collapse_blank_lines(analysis.text, edits)
    text = _gap_after_helpers(splice(analysis.text, edits), analysis.src.newline)
    return Applied(text, fixed, tuple(declined))


def _gap_after_helpers(text: str, newline: str) -> str:
    """Exactly two blank lines after an inserted helper (none at the end of the file).

    The helper ends at the module's top level, so the blank lines after it are never in a string.
    """
    at = text.find(HELPER_END)
    if at < 0:
        return text
    rest = text[at + len(HELPER_END) :]
    code = rest.lstrip("\r\n")
    gap = newline * 2 if code else ""
    return text[:at] + gap + code


def splice(text: str, edits: list[Edit]) -> str:
    """`text` with every edit applied, in one pass (edits must not overlap)."""
    pieces: list[str] = []
    last = 0
    for start, end, content in sorted(edits, key=lambda e: (e[0], e[1])):
        pieces.append(text[last:start])
        pieces.append(content)
        last = max(last, end)
    pieces.append(text[last:])
    return "".join(pieces)


def _accept(
    chosen: list[tuple[Planned, tuple[Edit, ...]]], span_of: Callable[[Planned], tuple[int, int] | None]
) -> tuple[list[tuple[Planned, tuple[Edit, ...]]], list[Planned]]:
    """The plans that conflict with no earlier one, in order of their first edit; and the plans
    fixed by an accepted one: those whose edits are exactly its edits (one edit that fixes several
    findings, such as one rank guard for consecutive prints), and those whose edits all lie inside
    a span it deletes (the `"xla"` in a `set_replication(...)` statement that goes), and those
    whose code (`span_of`: the finding's span) lies inside a span it replaces with code that does
    not hold theirs (the `torch_xla.device()` in an `autocast(...)` rewritten as
    `torch.autocast("neuron", ...)`): their code is gone, so a later round has nothing left to
    fix, and `--fix` counts them as the check did. A replacement that keeps their code (a call
    rewritten around its arguments) leaves them to the next round, which fixes them there.

    Each plan comes with its edits (a transform's already made: it claims its whole span, as
    its edit replaces all of it). `taken` stays sorted and its spans never overlap (only touch),
    so each new span is checked against its neighbours only.
    """
    accepted: list[tuple[Planned, tuple[Edit, ...]]] = []
    shared: list[Planned] = []
    seen: set[tuple[Edit, ...]] = set()
    taken: list[tuple[int, int]] = []
    replaced: list[Edit] = []  # the spans accepted edits replace, with what replaces them
    for item, edits in sorted(chosen, key=lambda pair: min(e.start for e in pair[1])):
        if edits in seen:
            shared.append(item)
            continue
        spans = [(start, end) for start, end, _ in edits]
        if any(_conflicts(span, taken) for span in spans):
            if _replaced_away(edits, span_of(item), replaced, item.finding.snippet):
                shared.append(item)  # inside code another plan deletes or rewrites without it
            continue  # applied in the next round, once the text has settled
        accepted.append((item, edits))
        seen.add(edits)
        replaced.extend(edit for edit in edits if edit.start < edit.end)
        for span in spans:
            insort(taken, span)
    return accepted, shared


def _replaced_away(edits: tuple[Edit, ...], span: tuple[int, int] | None, replaced: list[Edit], snippet: str) -> bool:
    """Whether a plan's code is gone with accepted edits: each of its edits inside a span they
    delete, or its finding's `span` inside one they replace with code that does not hold `snippet`
    (the finding's own code; whitespace aside, as a rewrite may lay it out anew)."""
    if all(any(_within(start, end, s, e) and not new.strip() for s, e, new in replaced) for start, end, _ in edits):
        return True
    if span is None:
        return False
    outer = next((new for s, e, new in replaced if s <= span[0] and span[1] <= e), None)
    own = "".join(snippet.split())
    return outer is not None and bool(own) and own not in "".join(outer.split())


def _within(start: int, end: int, outer_start: int, outer_end: int) -> bool:
    """Whether an edit lies inside a span: an insertion strictly (one at either end of a deleted
    span adds code beside it, as a keyword added before a call's `)` next to a removed one)."""
    if start == end:
        return outer_start < start < outer_end
    return outer_start <= start and end <= outer_end


def _conflicts(span: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    """Whether `span` overlaps any span in the sorted, non-overlapping list `taken`."""
    start, end = span
    index = bisect_left(taken, (start, start))
    for other in taken[index:]:  # spans starting at or after `start`: stop past `end`
        if other[0] > end:
            break
        if _overlaps(span, other):
            return True
    for position in range(index - 1, -1, -1):  # spans starting before: ends do not decrease
        other = taken[position]
        if _overlaps(span, other):
            return True
        if other[1] < start:
            break
    return False


def _deleted_runs(edits: list[Edit]) -> list[list[int]]:
    """The spans the edits delete outright, sorted, with touching deletions joined into one."""
    merged: list[list[int]] = []
    for start, end in sorted((s, e) for s, e, c in edits if not c and s < e):
        if merged and merged[-1][1] == start:
            merged[-1][1] = end
        else:
            merged.append([start, end])
    return merged


def _collapse_blank_lines(text: str, edits: list[Edit]) -> list[Edit]:
    """Deleting whole lines between two runs of blank lines would join them into one wider gap:
    the wider run is kept (two blank lines between top-level definitions stay two, PEP 8), so
    as many blank lines as the run before holds go from the run after. Deleting the first lines
    of a block (after its `...:` header line, or of the file) before a blank line would open the
    block with it: that blank line goes. Only blank lines right after a deletion go, and none
    that another edit touches."""
    merged = _deleted_runs(edits)
    ordered = sorted(edits, key=lambda e: (e[0], e[1]))
    starts = [e[0] for e in ordered]
    extra = []
    for start, end in merged:
        if start and text[start - 1] not in "\r\n":
            continue  # not at a line start
        before = 1 if start == 0 or _header_line_before(text, start) else _blank_lines_before(text, start)
        stop = end
        while before:
            after = _line_at(text, stop)
            if after is None or after[1].strip() or _edit_at(ordered, starts, stop):
                break
            stop += len(after[1]) + len(after[0])
            before -= 1
        if stop > end:
            extra.append(Edit(end, stop, ""))
    return edits + extra


def _blank_lines_before(text: str, start: int) -> int:
    """How many blank lines end right before offset `start` (a line start)."""
    count = 0
    while start > 0 and _blank_line_before(text, start):
        count += 1
        start = _previous_line_start(text, start)
    return count


def _previous_line_start(text: str, start: int) -> int:
    previous_end = start - (2 if text[max(start - 2, 0) : start] == "\r\n" else 1)
    return max(text.rfind("\n", 0, previous_end), text.rfind("\r", 0, previous_end)) + 1


def _orphaned_comments(text: str, edits: list[Edit]) -> list[Edit]:
    """Deletions of the comment blocks whose subject was deleted code.

    A block of comment lines right above deleted whole lines (a statement replaced by the `pass`
    that keeps its block counts as deleted) goes with them when it is glued to them: the line
    above it is code (a block's header, a statement, or a line deleted too), as in
    `# NOTE: avoid a hang` over `xm.mark_step()` over `break`. One that starts a paragraph (after
    a blank line) is a section header over the code after the deletion and stays, unless the
    deletion ends the paragraph too (`# sync the graph` over a final `xm.mark_step()`). The
    file's first comment lines are its header; pragmas (`# noqa`, `# type:`, `# fmt:`) and a
    shebang or coding line are kept.
    """
    merged = _deleted_runs([e if not _placeholder(e.text) else Edit(e.start, e.end, "") for e in edits])
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    ordered = sorted(edits, key=lambda e: (e[0], e[1]))
    starts = [e[0] for e in ordered]
    extra: list[Edit] = []
    for start, end in merged:
        first = bisect_left(offsets, start)
        if first >= len(lines) or offsets[first] != start or bisect_left(offsets, end) >= len(offsets):
            continue  # not whole lines
        indent = _indent(lines[first]) if lines[first].strip() else None
        top = first
        while top > 0 and lines[top - 1].lstrip().startswith("#") and _indent(lines[top - 1]) == indent:
            top -= 1
        if top == 0 or top == first or any(_is_pragma(line) for line in lines[top:first]):
            continue  # (the file's first comment lines are its header, whatever follows them)
        above = lines[top - 1]
        glued = bool(above.strip())  # code, a block's header or a deleted line: not a section header
        after = bisect_left(offsets, end)
        below = lines[after] if after < len(lines) else ""
        ends_paragraph = not below.strip() or (indent is not None and len(_indent(below)) < len(indent))
        untouched = not _edit_at(ordered, starts, offsets[top]) and not any(offsets[top] < s < start for s in starts)
        if (glued or ends_paragraph) and untouched:
            extra.append(Edit(offsets[top], start, ""))
    return extra


def _placeholder(content: str) -> bool:
    """Whether an edit's new text is only the `pass` that keeps an emptied block valid."""
    return content.split("#", 1)[0].strip() == "pass" and not _breaks(content.rstrip("\r\n"))


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _breaks(text: str) -> bool:
    return "\n" in text or "\r" in text


def _is_pragma(line: str) -> bool:
    body = line.strip().lstrip("#").strip().lower()
    return body.startswith(("noqa", "type:", "fmt:", "pylint:", "pragma", "!", "-*-")) or "coding" in body


def _edit_at(ordered: list[Edit], starts: list[int], offset: int) -> bool:
    """Whether an edit covers `offset`, or inserts text exactly there (edits do not overlap)."""
    first, last = bisect_left(starts, offset), bisect_right(starts, offset)
    if any(content or s < e for s, e, content in ordered[first:last]):
        return True
    return first > 0 and ordered[first - 1][1] > offset  # only the nearest earlier span can reach it


def _header_line_before(text: str, start: int) -> bool:
    """Whether the line before `start` opens a block (`def f():`, `) -> None:`, `if x:  # why`)."""
    previous_end = start - (2 if text[max(start - 2, 0) : start] == "\r\n" else 1)
    line_start = max(text.rfind("\n", 0, previous_end), text.rfind("\r", 0, previous_end)) + 1
    code = text[line_start:previous_end].split("#", 1)[0].rstrip()
    return code.endswith(":")  # a whole statement follows: only a block's header ends so


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


def verify(text: str, filename: str) -> str | None:
    """Why `text` is not valid Python, or None when it is: CPython compiles it.

    Compiling is the whole test. A LibCST parse of the result would cost more than the rest of a
    fix run's LibCST work and only add LibCST's own limits; the next run needs none.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None
