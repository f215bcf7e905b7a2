"""A budget per file: refuse, before parsing, a file whose parse would not fit in memory or time.

What the parsers spend was measured per thing the text holds, and the estimate counts those
things in one linear pass (strings and comments found whole, the code between them counted
by the regex engine):
- a token that becomes a node (name, number, string, attribute dot, opening bracket): `ast`
  and the analysis about 2.5 KB and 5 us, LibCST (a fix) about 9 KB and 35 us more;
- an f-string placeholder: a node for its `{` and one per token of its expression; CPython
  before 3.12 parses each with a parser of its own (about 20 us), and locates each by
  rescanning its f-string from the start, so one f-string of `n` placeholders and `m`
  characters costs time in `n * m` (a 480 KB one took 30 s);
- a line: nothing to `ast`, about 100 bytes of line tables to the check, and to LibCST an
  `EmptyLine` or whitespace node of about 330 bytes and 6 us (4 MB of blank lines: 1.3 GB);
  a comment about 4 us more.

The memory budget is 50 times the file's size, at least 512 MiB, and never more than what the
process's address-space limit (`RLIMIT_AS`, `ulimit -v`) leaves: LibCST's native parser aborts
the whole process when an allocation fails, so a file must not reach it unless it fits. The
time budget is 5 s of estimated parsing for each parse; a file any real code could be fits
both (real code is refused for memory first).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

MIN_BUDGET = 512 * 1024 * 1024  # bytes any file may use, however small
BUDGET_PER_BYTE = 50  # and otherwise up to 50 times the file's size
SECONDS_BUDGET = 2.5  # estimated CPU seconds one parse of a file may take
CHECK_COST = 2_500  # bytes per counted node to check (`ast`, the analysis, findings: 2.1 KB measured on real code)
FIX_COST = 9_000  # bytes per counted token when a fix is verified with LibCST
CHECK_LINE_COST = 100  # bytes per line to check (line tables)
FIX_LINE_COST = 400  # bytes per line with LibCST (an `EmptyLine` or whitespace node)
CHECK_NODE_SECONDS = 5e-6
FIX_NODE_SECONDS = 35e-6
FIX_LINE_SECONDS = 6e-6
FIX_COMMENT_SECONDS = 4e-6
PLACEHOLDER_SECONDS = 20e-6
# CPython before 3.12 rescans an f-string for each placeholder: seconds per placeholder and character.
FSTRING_SCAN_SECONDS = 4e-10 if sys.version_info < (3, 12) else 0.0
_HEADROOM = 0.6  # of the address space left under RLIMIT_AS, what one file may take

# After escapes are blanked (`_ESCAPE`), a quote always ends its string: strings and comments
# are matched whole with single-character repeats only, so the regex engine keeps no
# backtracking state per character (linear time and memory, on every supported Python).
_ESCAPE = re.compile(r"\\.", re.DOTALL)
# A piece starts with a quote, `#` or a string prefix letter, so the engine skips to those
# characters; the lookbehinds then tell a comment, a string and its prefix apart.
_QUOTED = r"""(?:'''.*?(?:'''|\Z)|\"\"\".*?(?:\"\"\"|\Z)|'[^'\r\n]*'?|"[^"\r\n]*"?)"""
_PIECES = re.compile(
    r"[rRbBuUfF'\"#]"
    r"(?:(?<=\#)(?P<comment>[^\r\n]*)"
    r"|(?<=')(?:''.*?(?:'''|\Z)|[^'\r\n]*'?)"
    r"|(?<=\")(?:\"\".*?(?:\"\"\"|\Z)|[^\"\r\n]*\"?)"
    rf"|(?<!\w[rRbBuUfF])(?P<prefixed>[rRbBuUfF]?){_QUOTED})"
    r"[\s,;:=+\-*/%<>!|&^~@)\]}]*",  # and what follows that is no token: most pieces leave no code between
    re.DOTALL,
)
_INERT = " \t\r\n\f\v,;:=+-*/%<>!|&^~@)]}"
_TOKENS = re.compile(r"[^\W\d]\w*|\d[\w.]*|[(\[{.]")  # outside strings: each becomes a node
_DOUBLED = re.compile(r"\{\{|\}\}")  # literal braces of an f-string
_LITERAL = re.compile(r"(?:\A|(?<=\}))[^{}]+")  # an f-string's text outside its placeholders


@dataclass(frozen=True)
class Estimate:
    """What a text holds that its parsers pay for."""

    nodes: int = 0  # tokens that become syntax nodes, f-string placeholders and their expressions included
    lines: int = 0
    comments: int = 0
    placeholders: int = 0  # f-string placeholders
    fstring_scan: int = 0  # sum over f-strings of placeholders times length

    def memory(self, fixing: bool) -> int:
        """Bytes the check (or a fix) of the text needs."""
        if fixing:
            return self.nodes * FIX_COST + self.lines * FIX_LINE_COST
        return self.nodes * CHECK_COST + self.lines * CHECK_LINE_COST

    def seconds(self, fixing: bool) -> dict[str, float]:
        """CPU seconds one parse (with LibCST too when `fixing`) takes, by what it is spent on."""
        spent = {
            "syntax nodes": self.nodes * (CHECK_NODE_SECONDS + (FIX_NODE_SECONDS if fixing else 0.0)),
            "f-string placeholders": self.placeholders * PLACEHOLDER_SECONDS + self.fstring_scan * FSTRING_SCAN_SECONDS,
        }
        if fixing:
            spent["lines"] = self.lines * FIX_LINE_SECONDS + self.comments * FIX_COMMENT_SECONDS
        return spent


def estimate(text: str) -> Estimate:
    """Count what `text` holds that its parsers pay for (see the module docstring)."""
    clean = _ESCAPE.sub("  ", text) if "\\" in text else text
    nodes = comments = placeholders = scan = 0
    last = 0
    for piece in _PIECES.finditer(clean):
        if piece.start() > last:
            nodes += _count(clean[last : piece.start()])
        last = piece.end()
        if piece.lastgroup == "comment":
            comments += 1
            continue
        nodes += 1
        literal = piece.group()
        if piece.group("prefixed") is not None and "f" in literal[:2].lower():
            literal = literal.rstrip(_INERT)
            inner, fields = _fstring(literal)
            nodes += inner
            placeholders += fields
            scan += fields * len(literal)
    nodes += _count(clean[last:])
    lines = text.count("\n") + text.count("\r") - text.count("\r\n")
    return Estimate(nodes, lines, comments, placeholders, scan)


def _count(code: str) -> int:
    """The tokens of `code` (no string, no comment) that become nodes, counted by the regex engine."""
    return _TOKENS.subn("", code)[1] if code else 0


def _fstring(literal: str) -> tuple[int, int]:
    """The nodes of an f-string's placeholders (each `{` and its expression's tokens), and how
    many placeholders it has (nested ones in a format spec included)."""
    fields = _LITERAL.sub(" ", _DOUBLED.sub("", literal))
    count = fields.count("{")
    return (_count(fields), count) if count else (0, 0)


def address_space_left() -> int | None:
    """Bytes the process may still map under RLIMIT_AS; None when unlimited (or unknown)."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return None
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        with open("/proc/self/statm", "rb") as handle:
            pages = int(handle.read().split()[0])
        import os

        used = pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return soft // 2  # cannot tell what is used: assume half
    return max(soft - used, 0)


def budget_for(size: int) -> int:
    """The bytes one file of `size` characters may use."""
    budget = max(MIN_BUDGET, BUDGET_PER_BYTE * size)
    left = address_space_left()
    if left is not None:
        budget = min(budget, int(left * _HEADROOM))
    return budget


def refusals(text: str, fix: bool) -> tuple[str | None, str | None]:
    """Why `text` is too costly to check, and (when `fix`) to fix: clauses for NM904, None when it fits."""
    modes = (False, True) if fix else (False,)
    budget = budget_for(len(text))
    if all(_fits_anyway(len(text), fixing, budget) for fixing in modes):
        return None, None  # cheap: most files stop here
    found = estimate(text)
    check = _why(found, False, budget)
    return check, (_why(found, True, budget) if fix and check is None else None)


def over_budget(text: str, fixing: bool) -> str | None:
    """Why `text` is too costly to analyse (with `fixing`, to fix too): a clause for NM904, or None."""
    check, fix = refusals(text, fixing)
    return check or fix


def _fits_anyway(size: int, fixing: bool, budget: int) -> bool:
    """Whether a text of `size` characters fits whatever it holds: each node, line, comment or
    placeholder takes a character at least (a node costs more than a line), and an f-string
    holds at most one placeholder every three characters."""
    node = CHECK_NODE_SECONDS + (FIX_NODE_SECONDS if fixing else 0.0)
    line = FIX_LINE_SECONDS + FIX_COMMENT_SECONDS if fixing else 0.0
    placeholder = (PLACEHOLDER_SECONDS + 2 * CHECK_NODE_SECONDS) / 3  # `{x}` is three characters
    seconds = size * max(node, line, placeholder) + size // 3 * size * FSTRING_SCAN_SECONDS
    return size * (FIX_COST if fixing else CHECK_COST) <= budget and seconds <= SECONDS_BUDGET


def _why(found: Estimate, fixing: bool, budget: int) -> str | None:
    with_fix = "with --fix " if fixing else ""
    needed = found.memory(fixing)
    if needed > budget:
        counted = f"{found.nodes:,} syntax nodes"
        if found.lines * (FIX_LINE_COST if fixing else CHECK_LINE_COST) > needed // 2:
            counted = f"{found.lines:,} lines"
        return (
            f"analysing its {counted} {with_fix}needs about {needed // 2**20:,} MiB, "
            f"over the {budget // 2**20:,} MiB memory limit"
        )
    spent = found.seconds(fixing)
    seconds = sum(spent.values())
    if seconds <= SECONDS_BUDGET:
        return None
    most = max(spent, key=lambda kind: spent[kind])
    count = {"syntax nodes": found.nodes, "f-string placeholders": found.placeholders, "lines": found.lines}[most]
    return (
        f"parsing its {count:,} {most} {with_fix}takes about {seconds:,.0f} s of CPU, "
        f"over the {SECONDS_BUDGET:g} s limit"
    )
