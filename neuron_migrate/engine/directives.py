"""Suppression comments: find `# noqa` / `# neuron-migrate: noqa` directives, and the text
edits that remove unused codes from them or add codes to them. Offsets index the file's text."""

from __future__ import annotations

import io
import re
import sys
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
    """Comments, and the lines where a trailing comment can go, as one tokenize pass finds them."""

    comments: tuple[tuple[int, int, int], ...]  # (line, start offset, end offset)
    line_ends: tuple[int, ...] | None  # sorted lines ending in NL/NEWLINE; None: every line

    def comment_line(self, line: int) -> int:
        """Where a comment for a finding starting on `line` goes: the first line >= `line` it can end."""
        if self.line_ends is None:
            return line
        index = bisect_left(self.line_ends, line)
        return self.line_ends[index] if index < len(self.line_ends) else line


def layout_of(src: SourceText) -> Layout:
    """Comments, and the lines that end in NL/NEWLINE, exactly as tokenize finds them; text that
    does not tokenize has no comments (so no directives). The scan is the fast path where it is
    sure of the answer; anything else goes through tokenize."""
    fast = scanned_layout(src) if FAST_PATH else None
    return fast if fast is not None else tokenized_layout(src)


def tokenized_layout(src: SourceText) -> Layout:
    """`layout_of` by one tokenize pass: the reference, and the path for text the scan leaves."""
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


# The scan models the pure-Python tokenizer of Python 3.10 and 3.11. From 3.12 tokenize is the C
# tokenizer: it splits f-strings into parts (a replacement field may hold comments and line
# breaks) and rejects text the old one let through, so there tokenize is the only path.
FAST_PATH = sys.version_info < (3, 12)
# What tokenize's regexes make of the next quote, `#` or backslash outside strings and comments.
# A string's prefix never matters: with any prefix, raw or not, a string ends at the same quote.
# A backslash-newline inside a triple-quoted string is one more escape here, where tokenize starts
# the next line afresh: the same end. `open` (a triple quote never closed) and `odd` (a one-line
# string not closed on its line or continued with a backslash, a backslash that joins nothing)
# are tokenize errors or ERRORTOKENs: left to tokenize.
_LEXEMES = re.compile(
    r"""[^'"#\\]*"""  # the code before it: skipped at the speed of one character class
    r"(?:(?P<long>'''[^'\\]*(?:(?:\\[\s\S]|'(?!''))[^'\\]*)*'''"
    r'|"""[^"\\]*(?:(?:\\[\s\S]|"(?!""))[^"\\]*)*""")'
    r"|(?P<open>'''|\"\"\")"
    r"""|(?P<short>'[^\n'\\]*(?:\\.[^\n'\\]*)*'|"[^\n"\\]*(?:\\.[^\n"\\]*)*")"""
    r"|(?P<comment>#[^\r\n]*)"
    r"|(?P<join>\\\r?\n)"
    r"""|(?P<odd>['"\\])|\Z)"""
)
_CARRIED = "\0"  # starts a skeleton line that goes on with a string or after a backslash join
_BRACKETS = str.maketrans("[{]}", "(())")


def scanned_layout(src: SourceText) -> Layout | None:
    """`layout_of` by a regex pass over the strings, comments and backslash joins, then a pass
    over the lines of what is left (the skeleton); None where tokenize must decide: a form feed,
    a lone carriage return, a NUL, an `open` or `odd` lexeme, a bracket closed before it opened,
    a statement still open at the end, a dedent that tokenize rejects."""
    text = src.text
    if "\f" in text or _CARRIED in text or text.count("\r") != text.count("\r\n"):
        return None
    pieces: list[str] = []
    comments: list[tuple[int, int, int]] = []
    done = 0
    for match in _LEXEMES.finditer(text):
        kind = match.lastgroup
        if kind is None:
            break  # the end of the text
        start, end = match.span(kind)
        if kind == "short":
            lexeme = "S"
        elif kind == "comment":
            comments.append((src.position(start).line, start, end))
            lexeme = "#"
        elif kind == "long":
            lexeme = "S" + "\n\0" * text.count("\n", start, end)
        elif kind == "join":  # kept visible: a statement line of only a join still has its indent read
            lexeme = "\\\n\0"
        else:
            return None
        pieces += (text[done:start], lexeme)
        done = end
    pieces.append(text[done:])
    lines = "".join(pieces).translate(_BRACKETS).split("\n")
    ends = _line_ends(lines, text[text.rfind("\n") + 1 :], "\t" in text)
    return None if ends is None else Layout(tuple(comments), ends)


def _line_ends(lines: list[str], last_text: str, tabs: bool) -> tuple[int, ...] | None:
    """The lines whose line break tokenize reaches (an NL or NEWLINE token), with the implicit
    NEWLINE of a last line that has no break; None on a tokenize error. A break is reached unless
    the next skeleton line is carried; a statement's first line has its indent checked."""
    ends: list[int] = []
    depth = 0
    indents = [0]
    count = len(lines)
    for number, line in enumerate(lines, 1):
        if line[:1] != _CARRIED:
            if number > 1:
                ends.append(number - 1)
            if depth == 0:  # a new statement: tokenize reads its indent
                body = line.lstrip(" \t")
                if not body or body[0] in "#\r":  # blank, or only a comment: NL, and no indent
                    if number < count:
                        continue
                    if body:
                        ends.append(number)  # a comment on the last line, without a break
                    return tuple(ends)  # no last line, or only an indent: tokenize stops before it
                column = len(line) - len(body) if not tabs else _column(line[: len(line) - len(body)])
                if column > indents[-1]:
                    indents.append(column)
                elif column < indents[-1]:
                    if column not in indents:
                        return None  # IndentationError
                    del indents[indents.index(column) + 1 :]
        depth += line.count("(") - line.count(")")
        if depth < 0:
            return None
    if depth or (lines[-1][:1] == _CARRIED and not last_text):
        return None  # EOF in a multi-line statement
    if last_text and not last_text.strip().startswith("#"):
        ends.append(count)  # tokenize's NEWLINE after a last line that has no line break
    return tuple(ends)


def _column(indent: str) -> int:
    """An indent's width as tokenize measures it: a tab goes to the next multiple of 8."""
    column = 0
    for char in indent:
        column = column + 1 if char == " " else (column // 8 + 1) * 8
    return column


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
