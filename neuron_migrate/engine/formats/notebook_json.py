"""Notebook JSON read and written by position, so everything but a cell's source stays byte-for-byte.

`json` gives values but not where they are; these helpers walk an object or array with
`JSONDecoder.raw_decode` to find the span of each member, and render a new `source` value in the
shape (list or string, one line or indented), indentation, separators and escaping of the old.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from neuron_migrate.analysis.source import newline_of

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


class NotebookError(ValueError):
    """The file is not a notebook this module can read."""


def skip(text: str, index: int) -> int:
    return _WS.match(text, index).end()  # type: ignore[union-attr]  # matches the empty string too


def members(text: str, index: int) -> Iterator[tuple[str, int, int]]:
    """(key, value start, value end) of each member of the JSON object at `text[index]`."""
    if text[index] != "{":
        raise NotebookError("expected a JSON object")
    index = skip(text, index + 1)
    if text[index] == "}":
        return
    while True:
        key, index = _DECODER.raw_decode(text, index)
        index = skip(text, index)
        if text[index] != ":":
            raise NotebookError("expected `:`")
        start = skip(text, index + 1)
        _, end = _DECODER.raw_decode(text, start)
        yield key, start, end
        index = skip(text, end)
        if text[index] == "}":
            return
        if text[index] != ",":
            raise NotebookError("expected `,` or `}`")
        index = skip(text, index + 1)


def items(text: str, index: int) -> Iterator[tuple[int, int]]:
    """(start, end) of each element of the JSON array at `text[index]`."""
    if text[index] != "[":
        raise NotebookError("expected a JSON array")
    index = skip(text, index + 1)
    if text[index] == "]":
        return
    while True:
        _, end = _DECODER.raw_decode(text, index)
        yield index, end
        index = skip(text, end)
        if text[index] == "]":
            return
        if text[index] != ",":
            raise NotebookError("expected `,` or `]`")
        index = skip(text, index + 1)


def member(text: str, index: int, name: str) -> tuple[int, int] | None:
    return next(((s, e) for key, s, e in members(text, index) if key == name), None)


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def _lines(text: str) -> list[str]:
    """A cell's text as the items of its `source` array: one per line, with its own line end
    (`\n`, `\r\n`, or `\r` in a notebook saved with classic Mac line ends)."""
    return _LINE.findall(text)


@dataclass(frozen=True)
class Style:
    """How the notebook's JSON is written, read off the original text."""

    ensure_ascii: bool
    newline: str
    unit: str  # one level of indentation
    indented: bool
    inline_separator: str  # between members of a one-line document: ", " or ","

    @classmethod
    def of(cls, text: str) -> Style:
        escaped = any(int(h, 16) >= 0x80 for h in re.findall(r"\\u([0-9a-fA-F]{4})", text))
        unit = re.match(r"\{\r?\n([ \t]*)", text)
        return cls(
            text.isascii() and escaped,
            newline_of(text),
            unit.group(1) if unit else " ",
            unit is not None,
            _document_separator(text),
        )

    def dumps(self, value: str) -> str:
        return json.dumps(value, ensure_ascii=self.ensure_ascii)


def _document_separator(text: str) -> str:
    """`, ` or `,`: what follows the comma after the document's first member."""
    found = list(members(text, skip(text, 0)))
    if len(found) < 2:
        return ", "
    rest = text[text.index(",", found[0][2]) + 1 :]
    return "," + rest[: len(rest) - len(rest.lstrip(" "))]


def render_source(text: str, span: tuple[int, int], new: str, style: Style) -> str:
    """The JSON for a cell's new `source`, in the shape and indentation of the old value."""
    raw = text[span[0] : span[1]]
    if raw.startswith('"'):
        return style.dumps(new)
    items = [style.dumps(line) for line in _lines(new)]
    if not items:
        return "[]"
    multiline = re.match(r"\[(\r?\n)([ \t]*)", raw)
    if multiline:
        newline, indent = multiline.group(1), multiline.group(2)
        closing = re.search(r"([ \t]*)\]$", raw).group(1)  # type: ignore[union-attr]  # raw is a JSON array
    elif raw == "[]" and style.indented:
        line_start = text.rfind("\n", 0, span[0]) + 1
        closing = text[line_start : skip(text, line_start)].strip("\r\n")
        newline, indent = style.newline, closing + style.unit
    else:
        return "[" + _separator(raw, style).join(items) + "]"
    return "[" + newline + ("," + newline).join(indent + item for item in items) + newline + closing + "]"


def _separator(raw: str, style: Style) -> str:
    """The text between items of a one-line list: read off the list itself, else the document."""
    spans = list(items(raw, 0))
    if len(spans) >= 2:
        return raw[spans[0][1] : spans[1][0]]
    return style.inline_separator
