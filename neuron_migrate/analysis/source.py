"""Source text: decoding as Python does, newline style, and position arithmetic."""

from __future__ import annotations

import codecs
import functools
import io
import re
import tokenize
from bisect import bisect_right
from dataclasses import dataclass

from neuron_migrate.model import Position

_BOM = codecs.BOM_UTF8


class DecodeError(ValueError):
    """The bytes are not text in the encoding the file declares."""


@dataclass(frozen=True)
class Encoded:
    """How a file's text is stored, so a rewrite can store it the same way."""

    encoding: str = "utf-8"
    bom: bool = False


# Codecs Python accepts in a coding cookie whose decoding takes time quadratic in the size.
_QUADRATIC = frozenset({"punycode", "idna"})
_QUADRATIC_LIMIT = 64 * 1024


def decode(data: bytes) -> tuple[str, Encoded]:
    """Decode Python source bytes honouring a BOM and a PEP 263 coding cookie.

    Raises DecodeError for whatever the declared codec makes of the bytes: any codec the
    cookie names is looked up, and some raise a bare `UnicodeError` (punycode, idna), or are
    no text encoding at all (`rot13`, `hex`: LookupError)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise DecodeError(str(exc)) from None
    bom = data.startswith(_BOM)
    body = data[len(_BOM) :] if bom else data
    name = "utf-8" if encoding == "utf-8-sig" else encoding
    if name in _QUADRATIC and len(body) > _QUADRATIC_LIMIT:
        raise DecodeError(f"decoding {len(body) // 1024:,} KiB of {name} takes time quadratic in its size")
    try:
        text = body.decode(name)
    except Exception as exc:  # noqa: BLE001 - a codec may raise anything; the file is unreadable, not the run
        raise DecodeError(f"cannot decode as {name}: {exc}") from None
    if "\0" in text:  # Python refuses such a file; often UTF-16 saved without a BOM
        raise DecodeError(f"it contains NUL bytes, which {name} text does not (UTF-16 without a BOM?)")
    return text, Encoded(name, bom)


def encode(text: str, how: Encoded) -> bytes:
    """Encode text back the way it was read; whatever the codec raises becomes the
    UnicodeEncodeError the callers report (the file is left as it was)."""
    try:
        data = text.encode(how.encoding)
    except UnicodeEncodeError:
        raise
    except Exception as exc:  # noqa: BLE001 - a codec may raise anything
        raise UnicodeEncodeError(how.encoding, text, 0, len(text), str(exc)) from None
    return _BOM + data if how.bom else data


def newline_of(text: str) -> str:
    """The file's newline style: the first line ending found, else LF."""
    match = re.search(r"\r\n|\r|\n", text)
    return match.group(0) if match else "\n"


@dataclass
class SourceText:
    """A file's text with fast conversion between offsets, lines and columns.

    `ast` reports columns as UTF-8 byte offsets; everything else here counts code points.
    """

    text: str

    @functools.cached_property
    def _starts(self) -> list[int]:
        """The offset where each line starts (computed on first use: most files need none)."""
        text = self.text
        if "\r" in text:
            return [0, *(match.end() for match in re.finditer(r"\r\n|\r|\n", text))]
        starts = [0]
        append, find = starts.append, text.find
        at = find("\n")
        while at >= 0:
            append(at + 1)
            at = find("\n", at + 1)
        return starts

    @functools.cached_property
    def newline(self) -> str:
        """The first line ending's style (found once: a long first line took a scan per finding)."""
        return newline_of(self.text)

    def line_start(self, line: int) -> int:
        """Offset of the first character of 1-based `line` (end of text past the last line)."""
        if line - 1 < len(self._starts):
            return self._starts[line - 1]
        return len(self.text)

    def line_text(self, line: int) -> str:
        """The text of 1-based `line` without its line ending."""
        start = self.line_start(line)
        end = self.line_start(line + 1) if line < len(self._starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    @functools.cached_property
    def _ascii(self) -> bool:
        return self.text.isascii()

    def offset(self, line: int, byte_col: int) -> int:
        """Offset of an `ast` position (1-based line, UTF-8 byte column); in ASCII text without
        copying the line (a long line took a copy per node)."""
        if self._ascii:
            return self.line_start(line) + byte_col
        line_text = self.line_text(line)
        if line_text.isascii():
            return self.line_start(line) + byte_col
        prefix = line_text.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore")
        return self.line_start(line) + len(prefix)

    def position(self, offset: int) -> Position:
        """The 1-based line and code-point column of an offset."""
        index = bisect_right(self._starts, offset) - 1
        return Position(index + 1, offset - self._starts[index] + 1)

    def node_span(self, node: object) -> tuple[int, int]:
        """Start and end offsets of an `ast` node."""
        # Any located node (stmt, expr, arg, keyword, alias, ...): they share no base class with positions.
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]  # as above
        return start, end

    def segment(self, node: object) -> str:
        start, end = self.node_span(node)
        return self.text[start:end]

    def indent_of(self, line: int) -> str:
        text = self.line_text(line)
        return text[: len(text) - len(text.lstrip(" \t"))]

    def else_line(self, stmt: object) -> int | None:
        """The line of the `else:` of an `if` (or loop, `try`) `stmt` with an `else` block: the
        last line before that block holding code; None when it is not a bare `else:` (an `elif`,
        or `else: x` on one line)."""
        body, orelse = stmt.body, stmt.orelse  # type: ignore[attr-defined]  # a statement with both blocks
        line = orelse[0].lineno - 1
        while line > (body[-1].end_lineno or body[-1].lineno):
            code = self.line_text(line).split("#", 1)[0].strip()
            if code:
                return line if code == "else:" else None
            line -= 1
        return None


STRING_START = re.compile(r"([rRfFbBuU]*)('''|\"\"\"|'|\")")
_OTHER_QUOTE = {'"': "'", "'": '"'}


def fit_quotes(code: str, quotes: tuple[str, ...]) -> str | None:
    """`code` with its string literals requoted so it can sit inside f-strings using `quotes`.

    Before Python 3.12 an f-string's expressions may not contain its own quote character, nor a
    backslash: `f"dev {torch.device("neuron")}"` does not compile, `f"dev {torch.device('neuron')}"`
    does. None when no spelling fits.
    """
    forbidden = {q[0] for q in quotes}
    if not any(q in code for q in forbidden):
        return code
    if "\\" in code or len(forbidden) > 1:
        return None
    (quote,) = forbidden
    other = _OTHER_QUOTE[quote]
    pieces: list[str] = []
    last = 0
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    offsets = [0]
    for line in code.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    for token in tokens:
        if token.type != tokenize.STRING:
            continue
        start = offsets[token.start[0] - 1] + token.start[1]
        end = offsets[token.end[0] - 1] + token.end[1]
        found = STRING_START.match(token.string)
        if found is None or found.group(2) != quote or other in token.string:
            continue
        prefix = found.group(1)
        body = token.string[len(prefix) + 1 : -1]
        pieces.append(code[last:start] + prefix + other + body + other)
        last = end
    pieces.append(code[last:])
    result = "".join(pieces)
    return None if quote in result else result


_PRAGMAS = ("noqa", "type:", "pylint:", "pragma:", "fmt:", "isort:", "nm:", "pyright:", "mypy:", "ruff:")


def kept_comments(code: str) -> list[str]:
    """The comments in `code` worth keeping when it is deleted: all but tool pragmas (`# noqa`)."""
    comments = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.COMMENT:
                body = token.string.lstrip("#").strip()
                if body and not body.lower().startswith(_PRAGMAS):
                    comments.append(token.string)
    except (tokenize.TokenError, SyntaxError):
        return []
    return comments
