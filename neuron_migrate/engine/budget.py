"""A memory budget per file: refuse, before parsing, a file whose syntax tree would not fit.

Measured per name or number token: `ast` costs about 1.4 KB (nodes, their attribute dicts, the
parser's arena) and verifying a fix with LibCST about 9 KB more, so a 2 MB literal list of a million ints took 1 GB to check and 5.5 GB to fix. The
estimate counts names and numbers outside strings and comments with one linear regex pass; it
runs only on files large enough to matter.
"""

from __future__ import annotations

import re

MIN_BUDGET = 512 * 1024 * 1024  # bytes any file may use, however small
BUDGET_PER_BYTE = 50  # and otherwise up to 50 times the file's size
CHECK_COST = 1_500  # bytes of `ast` per counted token
FIX_COST = 9_000  # bytes per counted token when a fix is verified with LibCST

# Strings and comments first, so that the words inside them are not counted; then the tokens
# that become nodes. Every branch is linear: no nested quantifiers.
_TOKENS = re.compile(
    r"""(?P<skip>[rRbBuUfF]{0,2}(?:'''(?:[^'\\]|\\.|'(?!''))*(?:'''|$)"""
    r'''|"""(?:[^"\\]|\\.|"(?!""))*(?:"""|$)'''
    r"""|'(?:[^'\\\r\n]|\\.)*'?|"(?:[^"\\\r\n]|\\.)*"?)|\#[^\r\n]*)"""
    r"|[A-Za-z_]\w*|\d[\w.]*",
    re.DOTALL,
)


def over_budget(text: str, fixing: bool) -> str | None:
    """Why `text` is too big to analyse in memory (a clause for NM904), or None when it fits."""
    cost = FIX_COST if fixing else CHECK_COST
    budget = max(MIN_BUDGET, BUDGET_PER_BYTE * len(text))
    if len(text) // 2 * cost <= budget:  # cheap: most files stop here
        return None  # even one token every two characters fits: skip the count
    tokens = sum(1 for match in _TOKENS.finditer(text) if match.lastgroup is None)
    needed = tokens * cost
    if needed <= budget:
        return None
    return (
        f"analysing its {tokens:,} tokens {'with --fix ' if fixing else ''}needs about "
        f"{needed // 2**20:,} MiB, over the {budget // 2**20:,} MiB memory limit"
    )
