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


def line_layout(src: SourceText, kind: str | None = None) -> Layout:
    """The layout of a requirements file, shell script, `pyproject.toml` or `setup.cfg`:
    directives found by one linear scan that knows where the format's comments start (never
    inside a TOML string or a quoted shell word); a comment goes on the last line of a backslash
    continuation, and never on a line that ends inside a multi-line string."""
    comment_at, inside = _comment_starts(src.text, kind)
    ends = tuple(
        n
        for n in range(1, src.text.count("\n") + 2)
        if n not in inside and not src.line_text(n).rstrip().endswith("\\")
    )
    return Layout(_scan_comments(src, comment_at), ends)


def _scan_comments(src: SourceText, comment_at: dict[int, int] | None) -> tuple[tuple[int, int, int], ...]:
    """The comments holding a directive: from the line's comment start (`comment_at`, by line
    start offset; None: anywhere on the line, for formats without a scanner)."""
    found = []
    text = src.text
    for match in re.finditer(r"[^\r\n]*", text):
        begin = match.start()
        if comment_at is not None:
            if begin not in comment_at:
                continue
            begin = comment_at[begin]
        hit = _LINE_DIRECTIVE.search(text, begin, match.end()) or _FILE_DIRECTIVE.search(text, begin, match.end())
        if hit is not None:
            found.append((src.position(match.start()).line, hit.start(), match.end()))
    return tuple(dict.fromkeys(found))


_TOML_TOKENS = re.compile(r'"""|\'\'\'|["\'#\n\\]')
_SHELL_TOKENS = re.compile(r"[\"'#\n\\]")
_SHELL_WORD_START = frozenset(" \t;|&()<>")


def _comment_starts(text: str, kind: str | None) -> tuple[dict[int, int] | None, set[int]]:
    """Where each line's comment starts, by the offset of the line's start, and the lines that
    end inside a multi-line string; one pass over the quote, `#`, backslash and newline
    characters (linear in the file, however long its lines)."""
    if kind in ("requirements", "setup_cfg"):
        return _simple_comments(text, kind), set()
    if kind not in ("pyproject", "shell"):
        return None, set()
    tokens = _TOML_TOKENS if kind == "pyproject" else _SHELL_TOKENS
    starts: dict[int, int] = {}
    inside: set[int] = set()
    line, line_start = 1, 0
    state: str | None = None  # the open quote
    skip = -1  # a backslash escapes the next character
    in_comment = False
    for match in tokens.finditer(text):
        at, token = match.start(), match.group()
        if token == "\n":
            if state in ('"""', "'''") or (kind == "shell" and state is not None):
                inside.add(line)
            elif state is not None:
                state = None  # an unterminated one-line TOML string ends with its line
            line, line_start, in_comment = line + 1, at + 1, False
            continue
        if in_comment or at < skip:
            continue
        if token == "\\":
            if state != "'" and state != "'''":
                skip = at + 2
        elif state is None:
            if token == "#":
                if kind == "pyproject" or at == line_start or text[at - 1] in _SHELL_WORD_START:
                    starts[line_start] = at
                    in_comment = True
            else:
                state = token
        elif token == state or (kind == "pyproject" and len(state) == 1 and token[:1] == state):
            state = None
    return starts, inside


def _simple_comments(text: str, kind: str) -> dict[int, int]:
    """requirements files: `#` at a line's start or after whitespace (pip: `pkg @ url#egg=x` is
    no comment); setup.cfg: only whole-line comments (configparser keeps `#` in values)."""
    starts: dict[int, int] = {}
    pattern = r"(?m)^[ \t]*#" if kind == "setup_cfg" else r"(?m)(?:^|[ \t])#"
    for match in re.finditer(pattern, text):
        at = match.end() - 1
        line_start = text.rfind("\n", 0, at) + 1
        starts.setdefault(line_start, at)
    return starts


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
