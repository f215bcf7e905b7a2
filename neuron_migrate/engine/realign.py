"""Continuation lines kept aligned with the bracket they were aligned with.

A fix that changes the width of code before an opening bracket (`xm.all_reduce(` becoming
`_all_reduce(`, `'xla'` becoming `'neuron'` earlier on the line, `xu.SampleGenerator(data=(...`
becoming `[(...`) moves the bracket, and the lines aligned under the first thing after it
(pycodestyle's visual indent) would be left where they were, under- or over-indented. In a
statement whose every visually indented line was aligned with its bracket, the edited
statement's visually indented lines are aligned with theirs again. Hanging indents (a bracket
that ends its line), lines that start by closing a bracket, and statements that were not
aligned to begin with are left as they are.
"""

from __future__ import annotations

import ast
import io
import tokenize
from bisect import bisect_right
from collections import defaultdict

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.values import Edit

_OPEN, _CLOSE = "([{", ")]}"
_SKIPPED = (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
_FSTRING = {
    getattr(tokenize, name): step
    for name, step in (("FSTRING_START", 1), ("FSTRING_END", -1))
    if hasattr(tokenize, name)
}
_MAX_LINES = 200  # a longer statement is left as the edits leave it (each realigned line re-reads it)


def realigned(analysis: Analysis, edits: list[Edit]) -> list[Edit]:
    """`edits`, where those inside a statement spanning lines whose continuation lines were
    aligned become one edit of the whole statement, its continuation lines aligned again."""
    statements = _multiline_statements(analysis)
    if not statements:
        return edits
    src = analysis.src
    firsts = [first for first, _ in statements]
    groups: dict[tuple[int, int], list[Edit]] = defaultdict(list)
    rest: list[Edit] = []
    for edit in edits:
        index = bisect_right(firsts, src.position(edit.start).line) - 1
        span = statements[index] if index >= 0 else None
        if span is not None and src.line_start(span[0]) <= edit.start and edit.end <= src.line_start(span[1] + 1):
            groups[span].append(edit)
        else:
            rest.append(edit)
    for (first, last), inside in groups.items():
        start, end = src.line_start(first), src.line_start(last + 1)
        text = _statement_text(analysis.text[start:end], start, inside)
        if text is None:
            rest += inside
        else:
            rest.append(Edit(start, end, text))
    return rest


def _statement_text(old: str, offset: int, edits: list[Edit]) -> str | None:
    """The statement's text once `edits` are made, realigned; None when nothing needs it."""
    if not any(_moves(edit) for edit in edits) or old.count("\n") > _MAX_LINES or not _aligned(old):
        return None
    pieces, last = [], 0
    for start, end, content in sorted(edits, key=lambda e: (e.start, e.end)):
        pieces += [old[last : start - offset], content]
        last = max(last, end - offset)
    new = "".join(pieces) + old[last:]
    fixed = _realign(new)
    return fixed if fixed != new else None


def _moves(edit: Edit) -> bool:
    """Whether code after `edit` can change column: it changes the width of what it replaces."""
    start, end, content = edit
    return (end - start) != len(content) or "\n" in content or "\r" in content


def _multiline_statements(analysis: Analysis) -> list[tuple[int, int]]:
    """(first, last line) of every simple statement, and every compound statement's header, that
    spans lines; sorted, and they never nest."""
    spans = []
    for stmt in analysis.nodes(ast.stmt):
        body = getattr(stmt, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            last = body[0].lineno - 1  # the header ends before its block (or shares its line)
        else:
            last = stmt.end_lineno or stmt.lineno
        if last > stmt.lineno:
            spans.append((stmt.lineno, last))
    return sorted(spans)


def _aligned(text: str) -> bool:
    """Whether every visually indented line of `text` stands under its bracket's first item."""
    found = _misaligned(text)
    return found is not None and not found


def _realign(text: str) -> str:
    """`text` with each visually indented line moved under its bracket's first item, in order
    (a moved line moves the brackets it opens)."""
    for _ in range(text.count("\n") + 1):
        found = _misaligned(text)
        if not found:
            return text
        row, indent, column = found[0]
        lines = text.splitlines(keepends=True)
        lines[row - 1] = " " * column + lines[row - 1][indent:]
        text = "".join(lines)
    return text


def _misaligned(text: str) -> list[tuple[int, int, int]] | None:
    """(row, indent, bracket column) of each line indented visually but not under its bracket's
    first item; None when `text` does not tokenize, or a line is indented with tabs."""
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type not in _SKIPPED]
    except (tokenize.TokenError, SyntaxError):
        return None
    lines = text.splitlines()
    found: list[tuple[int, int, int]] = []
    stack: list[int] = []  # per open bracket: the column of its first item (-1: hanging)
    row = 0
    inside_fstring = 0  # Python 3.12 tokenizes an f-string's parts: its lines are the string's
    for index, token in enumerate(tokens):
        if token.type in _FSTRING:
            inside_fstring += _FSTRING[token.type]
            row = max(row, token.end[0])
            continue
        if inside_fstring:
            row = max(row, token.end[0])
            continue
        if token.start[0] > row:
            if "\t" in lines[token.start[0] - 1][: token.start[1]]:
                return None
            if stack and stack[-1] >= 0 and token.string[:1] not in _CLOSE and token.start[1] != stack[-1]:
                found.append((token.start[0], token.start[1], stack[-1]))
        row = max(row, token.end[0])
        if token.type == tokenize.OP and token.string in _OPEN:
            following = tokens[index + 1] if index + 1 < len(tokens) else None
            same_line = following is not None and following.start[0] == token.end[0]
            stack.append(following.start[1] if same_line and following is not None else -1)
        elif token.type == tokenize.OP and token.string in _CLOSE and stack:
            stack.pop()
    return found
