"""Suppression comments: find `# noqa` / `# neuron-migrate: noqa` directives, and the text
edits that remove unused codes from them or add codes to them. Offsets index the file's text."""

from __future__ import annotations

import io
import re
import tokenize
from bisect import bisect_left
from dataclasses import dataclass

from neuron_migrate.analysis.source import SourceText

_CODE = r"[A-Za-z]+[0-9]+"
_CODES = rf"(?P<codes>{_CODE}(?:(?:\s*,\s*|\s+){_CODE})*)"
_LINE_DIRECTIVE = re.compile(rf"#\s*noqa(?![\w-])(?:\s*:\s*{_CODES})?", re.IGNORECASE)
_FILE_DIRECTIVE = re.compile(rf"#\s*neuron-migrate\s*:\s*noqa(?![\w-])(?:\s*:\s*{_CODES})?", re.IGNORECASE)
# Both directives, for matching raw text rather than one comment: the same patterns with
# whitespace that never crosses a line (a comment holds no line break), so a match never takes
# its codes from the next line.
RAW_DIRECTIVES = tuple(
    re.compile(d.pattern.replace(r"\s", r"[^\S\r\n]"), d.flags) for d in (_LINE_DIRECTIVE, _FILE_DIRECTIVE)
)


@dataclass(frozen=True)
class Directive:
    """One `# noqa` or `# neuron-migrate: noqa` comment. Offsets index the file's text."""

    line: int
    start: int  # the directive's `#`
    end: int  # just after its last code (or after `noqa` when bare)
    codes_start: int  # where the codes begin (== end when bare)
    codes: tuple[str, ...]  # upper-cased; () means every code
    file_level: bool
    comment_start: int  # the whole comment token that holds the directive
    comment_end: int


@dataclass(frozen=True)
class Layout:
    """Comments, and the lines where a trailing comment can go, from one tokenize pass."""

    comments: tuple[tuple[int, int, int], ...]  # (line, start offset, end offset)
    line_ends: tuple[int, ...] | None  # sorted lines ending in NL/NEWLINE; None: every line

    def comment_line(self, line: int) -> int:
        """Where a comment for a finding starting on `line` goes: the first line >= `line` it can end."""
        if self.line_ends is None:
            return line
        index = bisect_left(self.line_ends, line)
        return self.line_ends[index] if index < len(self.line_ends) else line


def layout_of(src: SourceText) -> Layout:
    """Tokenize once; text that does not tokenize has no comments (so no directives)."""
    comments: list[tuple[int, int, int]] = []
    ends: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(src.text).readline):
            if token.type == tokenize.COMMENT:
                start = src.line_start(token.start[0]) + token.start[1]
                comments.append((token.start[0], start, start + len(token.string)))
            elif token.type in (tokenize.NL, tokenize.NEWLINE):
                ends.add(token.start[0])
    except (tokenize.TokenError, SyntaxError):
        return Layout((), None)  # no trustworthy comments: a `#` may sit inside a string
    return Layout(tuple(comments), tuple(sorted(ends)))


def line_layout(src: SourceText) -> Layout:
    """The layout of a requirements file, shell script or other `#`-comment text file: directives
    found by a line scan; a comment goes on the last line of a backslash continuation."""
    ends = tuple(n for n in range(1, src.text.count("\n") + 2) if not src.line_text(n).rstrip().endswith("\\"))
    return Layout(_scan_comments(src), ends)


def _scan_comments(src: SourceText) -> tuple[tuple[int, int, int], ...]:
    """Comments found without tokenizing: from the first `#` that starts a directive."""
    found = []
    for match in re.finditer(r"[^\r\n]*", src.text):
        text = match.group(0)
        hit = _LINE_DIRECTIVE.search(text) or _FILE_DIRECTIVE.search(text)
        if hit is not None:
            found.append((src.position(match.start()).line, match.start() + hit.start(), match.end()))
    return tuple(dict.fromkeys(found))


def parse_directives(src: SourceText, layout: Layout) -> tuple[Directive, ...]:
    """Every suppression directive in the file's comments."""
    out = []
    for line, start, end in layout.comments:
        comment = src.text[start:end]
        file_hit = _FILE_DIRECTIVE.search(comment)
        hits = [(file_hit, True)] if file_hit else [(m, False) for m in _LINE_DIRECTIVE.finditer(comment)]
        for match, file_level in hits:
            codes = tuple(c.upper() for c in re.split(r"[\s,]+", match.group("codes") or "") if c)
            codes_start = start + (match.start("codes") if match.group("codes") else match.end())
            out.append(
                Directive(line, start + match.start(), start + match.end(), codes_start, codes, file_level, start, end)
            )
    return tuple(out)


def removal_edit(src: SourceText, directive: Directive, keep: tuple[str, ...]) -> tuple[int, int, str]:
    """The (start, end, replacement) offsets that drop the unused codes, or the whole directive."""
    text = src.text
    if keep:
        return directive.codes_start, directive.end, ", ".join(keep)
    rest = text[directive.end : directive.comment_end]
    line_start = src.line_start(directive.line)
    before = text[line_start : directive.start]
    if directive.start == directive.comment_start and rest.strip():
        return directive.start + 1, directive.end, ""  # `# noqa: NM101 why` -> `# why`
    if rest.strip():
        return directive.start - (len(before) - len(before.rstrip())), directive.end, ""
    if not before.strip():  # the comment is alone on its line: drop the line
        return line_start, src.line_start(directive.line + 1), ""
    return directive.start - (len(before) - len(before.rstrip())), directive.comment_end, ""


def noqa_edit(directives: list[Directive], src: SourceText, line: int, codes: set[str]) -> tuple[int, int, str]:
    """The edit that adds `codes` to `line`: merged into its `# noqa: ...`, else a new comment."""
    existing = next((d for d in directives if d.codes), None)
    if existing is not None:
        new = sorted(codes - set(existing.codes))
        return existing.end, existing.end, "".join(f", {c}" for c in new)
    start = src.line_start(line)
    content = src.line_text(line)
    end = start + len(content.rstrip())
    return end, start + len(content), f"  # noqa: {', '.join(sorted(codes))}"
