"""git's wildmatch globs as regular expressions that match in polynomial time, whatever the glob.

`*` and `?` stop at `/`, `**` spans folders only as a whole segment (`**/x`, `x/**`, `a/**/b`),
`[...]` is a class (`!` or `^` negates, `[:alpha:]` and the other POSIX names inside), `\\`
quotes the next character. A settings glob may hold `{a,b}` alternatives (`expand_braces`).

A glob comes from a config file or a `.gitignore` a pull request can change, so its regex must
not backtrack exponentially: `*a*a*a*a*a*a*a*a*b` made the engine try every way to split a
long name. Between two stars of a segment, the text must appear somewhere, and its leftmost
occurrence is as good as any (the next star takes what it skips), so it is matched there
once and for all; so is a group of segments between two `**`. Python's `re` has no atomic
group before 3.11, so "once and for all" is a lookahead (never re-entered) whose text a
backreference then consumes. Only globs with two stars in a segment, or two `**`, need them:
the others translate as plain regexes. A `[` is resolved in constant time (the class ends,
or it is a literal `[`), from positions found in one pass over the segment.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

_CLASSES = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "blank": " \\t",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": " \\t\\n\\r\\f\\v",
    "upper": "A-Z",
    "xdigit": "0-9A-Fa-f",
}
_LONGEST_CLASS = max(map(len, _CLASSES))
MAX_ALTERNATIVES = 1024  # globs one settings glob may expand to with `{a,b}`
_BRACE = re.compile(r"\{([^{}]*,[^{}]*)\}")


class GlobError(ValueError):
    """A glob that cannot be used; the message says why (a clause)."""


def translate(glob: str, tag: str = "") -> str:
    """The regular expression (no anchors) for a wildmatch glob matched against a whole `/` path.

    Group names are made from `tag`: regexes joined into one need different tags."""
    counter = itertools.count()

    def fresh() -> str:
        return f"w{tag}_{next(counter)}"

    segments = glob.split("/")
    out: list[str] = []
    i = 0
    while i < len(segments):
        if segments[i] != "**":
            end = _group_end(segments, i)
            out.append("/".join(_segment(s, fresh) for s in segments[i:end]) + ("/" if end < len(segments) else ""))
            i = end
            continue
        while i < len(segments) and segments[i] == "**":
            i += 1  # `a/**/**/b` is `a/**/b`
        if i == len(segments):
            out.append(".*")  # `x/**`: everything inside x (the `/` came before); `**`: everything
            break
        end = _group_end(segments, i)
        group = "/".join(_segment(s, fresh) for s in segments[i:end])
        if end < len(segments):  # another `**` follows: the group's earliest place is as good as any
            out.append(_atomic(f"(?:[^/]*/)*?{group}/", fresh()))
        else:
            out.append(f"(?:.*/)?{group}")  # `**/x`, `a/**/b`: zero or more folders before
        i = end
    return "".join(out)


def _group_end(segments: list[str], start: int) -> int:
    """The index of the next `**` segment from `start`, or the end."""
    return next((i for i in range(start, len(segments)) if segments[i] == "**"), len(segments))


def _atomic(pattern: str, name: str) -> str:
    """`pattern` matched once and never backtracked into: a lookahead, then its text."""
    return f"(?=(?P<{name}>{pattern}))(?P={name})"


def _segment(segment: str, fresh: Callable[[], str]) -> str:
    """One `/`-free part of a glob: its stars split it into chunks of fixed length."""
    colons, closers = _class_ends(segment) if "[" in segment else ([], [])
    chunks: list[list[str]] = [[]]
    i = 0
    while i < len(segment):
        c = segment[i]
        if c == "*":
            while i + 1 < len(segment) and segment[i + 1] == "*":
                i += 1  # other runs of asterisks are one `*`
            chunks.append([])
        elif c == "?":
            chunks[-1].append("[^/]")
        elif c == "[":
            klass, end = _bracket(segment, i, colons, closers)
            chunks[-1].append(re.escape(c) if klass is None else klass)
            i = i if klass is None else end
        elif c == "\\" and i + 1 < len(segment):
            i += 1
            chunks[-1].append(re.escape(segment[i]))
        else:
            chunks[-1].append(re.escape(c))
        i += 1
    parts = ["".join(chunk) for chunk in chunks]
    if len(parts) == 1:
        return parts[0]
    middle = "".join(_atomic(f"[^/]*?{part}", fresh()) for part in parts[1:-1])  # each at its leftmost place
    return f"{parts[0]}{middle}[^/]*{parts[-1]}"


def _class_ends(segment: str) -> tuple[list[int], list[int]]:
    """For each index: where the next `:]` is (-1: none), and where a class body read from
    there (that index not being its first member) ends with `]` (-1: it does not end)."""
    n = len(segment)
    colons = [-1] * (n + 1)
    for i in range(n - 2, -1, -1):
        colons[i] = i if segment[i] == ":" and segment[i + 1] == "]" else colons[i + 1]
    closers = [-1] * (n + 1)
    for i in range(n - 1, -1, -1):
        if segment[i] == "]":
            closers[i] = i
        else:
            end, _ = _member(segment, i, colons)
            closers[i] = closers[end] if end < n else -1
    return colons, closers


def _member(segment: str, i: int, colons: list[int]) -> tuple[int, str | None]:
    """The class member at `i`: where it ends, and its regex (None for a reversed range)."""
    n = len(segment)
    if segment.startswith("[:", i):
        end = colons[i + 2] if i + 2 < n else -1
        if end != -1 and end - i - 2 <= _LONGEST_CLASS and segment[i + 2 : end] in _CLASSES:
            return end + 2, _CLASSES[segment[i + 2 : end]]
    c = segment[i]
    if c == "\\" and i + 1 < n:
        i += 1
        c = segment[i]
    if i + 2 < n and segment[i + 1] == "-" and segment[i + 2] != "]":
        low, high = c, segment[i + 2]
        if high == "\\" and i + 3 < n:
            high = segment[i + 3]
            i += 1
        return i + 3, (f"{_class_char(low)}-{_class_char(high)}" if low <= high else None)
    return i + 1, _class_char(c)


def _bracket(segment: str, start: int, colons: list[int], closers: list[int]) -> tuple[str | None, int]:
    """A `[...]` class as a regex class and the index of its `]`; None when it is not closed."""
    i = start + 1
    negate = i < len(segment) and segment[i] in "!^"
    if negate:
        i += 1
    if i >= len(segment):
        return None, start
    first_end, first = _member(segment, i, colons)  # a `]` first is a member, not the end
    close = closers[first_end] if first_end < len(segment) else -1
    if close == -1:
        return None, start
    parts = [first]
    i = first_end
    while i < close:
        i, part = _member(segment, i, colons)
        parts.append(part)
    body = "".join(part for part in parts if part)
    if not body:  # only reversed ranges: nothing (or, negated, any character)
        return ("[^/]" if negate else "(?!)"), close
    return (f"[^/{body}]" if negate else f"(?!/)[{body}]"), close


def _class_char(c: str) -> str:
    return "\\" + c if c in "\\]^-[" else c


def expand_braces(glob: str) -> list[str]:
    """`a/{b,c}/*.py` as `a/b/*.py` and `a/c/*.py` (nested braces too); a lone brace is literal.
    GlobError when that makes more than MAX_ALTERNATIVES globs (`{a,b}` twenty times: a million)."""
    done: list[str] = []
    pending = [glob]
    while pending:
        current = pending.pop()
        match = _BRACE.search(current)
        if match is None:
            done.append(current)
        else:
            head, tail = current[: match.start()], current[match.end() :]
            pending.extend(head + choice + tail for choice in reversed(match.group(1).split(",")))
        if len(done) + len(pending) > MAX_ALTERNATIVES:  # each pending glob makes one at least
            raise GlobError(f"its {{...}} alternatives make more than {MAX_ALTERNATIVES:,} globs")
    return done


def check_glob(glob: str) -> None:
    """Raise GlobError when a settings glob cannot be used: it expands to too many globs.
    (Every glob translates to a valid regex; most configs list few, some hundreds of thousands,
    so nothing is compiled here.)"""
    expand_braces(glob)
