"""`--diff`: a unified diff that `git apply` and `patch -p1` accept as written.

Lines are split on LF only, so a CR of a CRLF file stays in its line (and in the patch, as git
writes it) and a form feed or U+2028 inside a line does not end it; a last line without a newline
is followed by `\\ No newline at end of file`, without which neither tool applies the hunk.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

NO_NEWLINE = "\\ No newline at end of file\n"


def lines(text: str) -> list[str]:
    """`text` split after each LF; the last line keeps no ending when the text has none."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def file_patch(path: str, before: str, after: str, context: int = 3, bom: bool = False) -> str:
    """The diff of one file, `a/<path>` to `b/<path>`; empty when nothing changed.

    `bom`: the file starts with a UTF-8 byte order mark, which the decoded texts lack; it is put
    back at the start of both, so the first line of a hunk matches the file's bytes.
    """
    if bom:
        before, after = "\ufeff" + before, "\ufeff" + after
    out = []
    # A name with a space ends at a tab, as GNU diff writes it (with a date): `patch` reads a name
    # up to the first space otherwise; git reads both.
    end = "\t" if " " in path else ""
    for line in difflib.unified_diff(lines(before), lines(after), f"a/{path}{end}", f"b/{path}{end}", n=context):
        out.append(line if line.endswith("\n") else line + "\n" + NO_NEWLINE)
    return "".join(out)


def render(changes: Iterable[tuple[str, str, str, bool]]) -> str:
    """The patch for every (path, text before, text after, starts with a BOM), in the order given."""
    return "".join(file_patch(path, before, after, bom=bom) for path, before, after, bom in changes)
