"""Full text: each finding with its source lines, an underline, and its fix as a diff.

```
train.py:2:18: NM101 [*] Replace `xm.xla_device()` with `torch.device("neuron")`
  |
1 | import torch_xla.core.xla_model as xm
2 | device = xm.xla_device()
  |          ^^^^^^^^^^^^^^^ NM101
3 | model.to(device)
  |
  = safe fix: Rewrite `xm.xla_device`
  @@ -1,3 +1,4 @@
  ...
```
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Mapping, Sequence

from neuron_migrate.analysis.source import SourceText
from neuron_migrate.model import FileResult, Finding, Position
from neuron_migrate.output import text as text_output
from neuron_migrate.output.base import PLAIN, RenderOptions, all_findings, sources
from neuron_migrate.output.color import paint
from neuron_migrate.output.escape import visible

CONTEXT = 1  # lines shown above and below the finding
MAX_SPAN = 4  # lines of a long finding shown before eliding the rest
TAB = "    "
_LINES = re.compile(r"\r\n|\r|\n")


def _width(text: str) -> int:
    """Terminal columns `text` takes: wide East Asian characters count 2, combining marks 0."""
    width = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def _shown(line: str) -> str:
    """A source line for the terminal: tabs as spaces, control characters as their Unicode
    pictures (`␛`, `␇`, as Ruff shows them) and other unprintable ones (a bidi override) as
    escapes, so the code shown can neither drive the terminal nor break the layout."""
    line = line.replace("\t", TAB)
    if line.isprintable():
        return line
    return "".join(_picture(c) for c in line)


def _picture(char: str) -> str:
    if char < " " or char == "\x7f":
        return chr(0x2421) if char == "\x7f" else chr(0x2400 + ord(char))
    return visible(char)


def _underline(line: str, start: int, end: int | None) -> str:
    """Spaces up to code-point column `start`, then carets to `end` (exclusive; None: line end)."""
    before = line[: start - 1]
    marked = line[start - 1 : None if end is None else end - 1]
    return " " * _width(_shown(before)) + "^" * max(_width(_shown(marked)), 1)


def snippet(finding: Finding, text: SourceText, color: bool = False) -> list[str]:
    """The numbered source lines around the finding, with its span underlined; with `color`, as
    Ruff paints them (blue line numbers and bars, red carets)."""
    last_line = max(text.position(len(text.text.rstrip("\r\n"))).line, finding.start.line)
    start, end = finding.start, finding.end
    first = max(start.line - CONTEXT, 1)
    span_end = min(max(end.line, start.line), start.line + MAX_SPAN - 1)
    final = min(span_end + CONTEXT, last_line)
    gutter = len(str(final))
    bar = paint(f"{' ' * gutter} |", color, fg="blue", bold=True)
    out = [bar]
    for number in range(first, final + 1):
        line = text.line_text(number)
        out.append(f"{paint(f'{number:>{gutter}} |', color, fg='blue', bold=True)} {_shown(line)}".rstrip())
        if number == start.line:
            stop = end.column if end.line == start.line and end > start else None
            marks = f"{_underline(line, start.column, stop)} {finding.code}"
            out.append(f"{bar} {paint(marks, color, fg='red', bold=True)}")
        if number == span_end and span_end < end.line:
            out.append(f"{bar} ...")
    out.append(bar)
    return out


def _offset(text: SourceText, position: Position) -> int:
    return text.line_start(position.line) + position.column - 1


def fix_diff(finding: Finding, text: SourceText) -> list[str]:
    """The finding's own edits applied to the file, as unified diff hunks (no file headers)."""
    if finding.fix is None:
        return []
    after = text.text
    for edit in sorted(finding.fix.edits, key=lambda e: (e.start, e.end), reverse=True):
        after = after[: _offset(text, edit.start)] + edit.content + after[_offset(text, edit.end) :]
    lines = difflib.unified_diff(_split(text.text), _split(after), n=CONTEXT, lineterm="")
    return [_shown(line) for line in lines if not line.startswith(("---", "+++"))]


def _split(text: str) -> list[str]:
    """Lines without their endings, split where Python splits them (not at form feeds)."""
    lines = _LINES.split(text)
    return lines[:-1] if lines and lines[-1] == "" else lines


def block(finding: Finding, texts: Mapping[str, SourceText], unsafe_fixes: bool, color: bool = False) -> list[str]:
    """Everything shown for one finding."""
    out = [text_output.line(finding, unsafe_fixes, color)]
    text = texts.get(finding.path) if finding.cell is None else None  # a notebook's text is JSON, not the cell
    if text is not None:
        out += snippet(finding, text, color)
    if finding.fix is not None:
        label = paint(f"{finding.fix.applicability.value} fix", color, fg="cyan", bold=True)
        out.append(f"  = {label}: {finding.fix.message}")
        if text is not None:
            out += [f"  {_diff_line(line, color)}".rstrip() for line in fix_diff(finding, text)]
    if finding.url:
        out.append(f"  = {paint('docs', color, fg='cyan', bold=True)}: {finding.url}")
    return out


def _diff_line(line: str, color: bool) -> str:
    """A line of the fix's diff: removals red, additions green, hunk headers cyan."""
    colours = {"-": "red", "+": "green", "@": "cyan"}
    return paint(line, color and line[:1] in colours, fg=colours.get(line[:1], "reset"))


def render(results: Sequence[FileResult], options: RenderOptions = PLAIN) -> str:
    texts = sources(results)
    out: list[str] = []
    for finding in all_findings(results):
        out += [*block(finding, texts, options.unsafe_fixes, options.color), ""]
    if not options.quiet:
        out.extend(text_output.summary(results, options.unsafe_fixes))
    return "\n".join(out) + ("\n" if out else "")
