"""A memory budget per file: refuse, before parsing, a file whose syntax tree would not fit.

Measured per token that becomes a node: `ast` costs about 1.5 KB for each name, number, string,
attribute dot and opening bracket (nodes, their attribute dicts, the parser's arena: a 2 MB
list of 700k `""` took 1 GB to check, of `()` 1.5 GB), and verifying a fix with LibCST about
9 KB more (the `""` list took 3 GB under `--diff`). The estimate counts those tokens outside
comments with one linear regex pass (possessive runs: a long string costs no backtracking
state); it runs only on files large enough to matter.

The budget is 50 times the file's size, at least 512 MiB, and never more than what the
process's address-space limit (`RLIMIT_AS`, `ulimit -v`) leaves: LibCST's native parser aborts
the whole process when an allocation fails, so a file must not reach it unless it fits.
"""

from __future__ import annotations

import re

MIN_BUDGET = 512 * 1024 * 1024  # bytes any file may use, however small
BUDGET_PER_BYTE = 50  # and otherwise up to 50 times the file's size
CHECK_COST = 2_500  # bytes per counted node to check (`ast`, the analysis, findings: 2.1 KB measured on real code)
FIX_COST = 9_000  # bytes per counted token when a fix is verified with LibCST
_HEADROOM = 0.6  # of the address space left under RLIMIT_AS, what one file may take

# Strings first (each is one node, and what is inside is not counted), then comments (skipped),
# then the tokens that become nodes. Possessive quantifiers: linear, no backtracking stack.
_TOKENS = re.compile(
    r"""(?P<string>[rRbBuUfF]{0,2}(?:'''(?:[^'\\]++|\\.|'(?!''))*+(?:'''|$)"""
    r'''|"""(?:[^"\\]++|\\.|"(?!""))*+(?:"""|$)'''
    r"""|'(?:[^'\\\r\n]++|\\.)*+'?|"(?:[^"\\\r\n]++|\\.)*+"?))"""
    r"|(?P<skip>\#[^\r\n]*+)"
    r"|[A-Za-z_]\w*+|\d[\w.]*+|[(\[{.]",
    re.DOTALL,
)


def count_nodes(text: str) -> int:
    """About how many syntax-tree nodes `text` makes (names, numbers, strings, dots, brackets)."""
    return sum(1 for match in _TOKENS.finditer(text) if match.lastgroup != "skip")


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


def over_budget(text: str, fixing: bool) -> str | None:
    """Why `text` is too big to analyse in memory (a clause for NM904), or None when it fits."""
    cost = FIX_COST if fixing else CHECK_COST
    budget = budget_for(len(text))
    if len(text) // 2 * cost <= budget:  # cheap: most files stop here
        return None  # even one node every two characters fits: skip the count
    nodes = count_nodes(text)
    needed = nodes * cost
    if needed <= budget:
        return None
    return (
        f"analysing its {nodes:,} syntax nodes {'with --fix ' if fixing else ''}needs about "
        f"{needed // 2**20:,} MiB, over the {budget // 2**20:,} MiB memory limit"
    )
