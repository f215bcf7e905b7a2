"""What every renderer shares: the options, the format names and helpers over results."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from neuron_migrate.model import FileResult, Finding, Safety

if TYPE_CHECKING:
    from neuron_migrate.analysis.source import SourceText
    from neuron_migrate.catalogue import RuleSpec

TOOL_NAME = "neuron-migrate"
TOOL_URL = "https://github.com/neuron-migrate/neuron-migrate"


@dataclass(frozen=True)
class RenderOptions:
    """What the renderers need from outside the results; gathered by the CLI."""

    unsafe_fixes: bool = False
    quiet: bool = False
    root: str | None = None  # repository root, absolute, forward slashes
    cwd: str | None = None  # the folder the results' paths are relative to, absolute
    rules: tuple[RuleSpec, ...] = ()  # the catalogue, for rule metadata (SARIF)
    color: bool = False  # ANSI colour in the text report (output/color.py decides)


PLAIN = RenderOptions()  # no root, no rules, no colour: what a renderer draws when given nothing


def printable_path(path: str) -> str:
    """`path` for one line of text output: control characters (a newline in a file name) escaped."""
    if path.isprintable():
        return path
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in path)


def code_span(text: str) -> str:
    """`text` as one Markdown code span that nothing in it can end (CommonMark: a fence of more
    backticks than the longest run inside), control characters and non-UTF-8 bytes shown escaped."""
    from neuron_migrate.fsio import visible_name

    text = printable_path(visible_name(text))
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def all_findings(results: Sequence[FileResult]) -> list[Finding]:
    """Every remaining finding, sorted by (path, notebook cell, line, column, code)."""
    return sorted((f for r in results for f in r.findings), key=lambda f: f.sort_key)


def all_fixed(results: Sequence[FileResult]) -> list[Finding]:
    return sorted((f for r in results for f in r.fixed), key=lambda f: f.sort_key)


def all_gone(results: Sequence[FileResult]) -> list[Finding]:
    """The findings `--fix` neither fixed nor left: their code went with other fixes."""
    return sorted((f for r in results for f in r.gone), key=lambda f: f.sort_key)


def applicable(finding: Finding, unsafe_fixes: bool) -> bool:
    """Whether `--fix` (with `--unsafe-fixes` when given) would resolve this finding.

    True also for an import `--fix` removes once the fixes of its uses are made (`Fix.requires`);
    not for one where that cannot be known before they are made (`maybe_applicable`).
    """
    fix = finding.fix
    return fix is not None and fix.certain and (fix.applicability is Safety.SAFE or unsafe_fixes)


def maybe_applicable(finding: Finding, unsafe_fixes: bool) -> bool:
    """Whether `--fix` may resolve this finding: its fix waits on others, and whether it then
    applies is known only once they are made (`[~]`)."""
    fix = finding.fix
    return fix is not None and not fix.certain and (fix.applicability is Safety.SAFE or unsafe_fixes)


def needs_unsafe(finding: Finding, unsafe_fixes: bool) -> bool:
    """Whether only `--unsafe-fixes` would apply this finding's fix."""
    fix = finding.fix
    return fix is not None and fix.applicability is Safety.UNSAFE and not unsafe_fixes


def repo_path(path: str, root: str | None, cwd: str | None) -> str:
    """`path` (as shown, relative to `cwd` or absolute) relative to the repository root.

    Falls back to `path` itself when either folder is unknown or the file lies outside the root.
    """
    if root is None:
        return path
    absolute = path if PurePath(path).is_absolute() else posixpath.join(cwd or root, path)
    absolute = posixpath.normpath(PurePath(absolute).as_posix())
    root = posixpath.normpath(root)
    if absolute == root or not absolute.startswith(root.rstrip("/") + "/"):
        return path
    return absolute[len(root.rstrip("/")) + 1 :]


def sources(results: Sequence[FileResult]) -> dict[str, SourceText]:
    """Each file's text, indexed for line lookups, keyed by path (files that could be read)."""
    # Imported here: only the formats that quote lines need it.
    from neuron_migrate.analysis.source import SourceText

    return {r.path: SourceText(r.source) for r in results if r.source is not None}


def line_of(finding: Finding, texts: Mapping[str, SourceText], line: int | None = None) -> str | None:
    """The text of the finding's first line (or of `line` in its file).

    None when the file could not be read, or for a notebook cell, whose lines are not the
    lines of the file's text.
    """
    text = texts.get(finding.path)
    if text is None or finding.cell is not None:
        return None
    return text.line_text(finding.start.line if line is None else line)


def byte_column(line_text: str | None, column: int) -> int:
    """A 1-based code-point column as a 1-based UTF-8 byte column on a line with this text.

    Without the text (None) the column is returned unchanged.
    """
    if line_text is None:
        return column
    return len(line_text[: column - 1].encode("utf-8")) + 1


def line_hashes(findings: Sequence[Finding], texts: Mapping[str, SourceText]) -> list[tuple[str, int]]:
    """For each finding: a hash of its rule and whitespace-free line text, and its occurrence.

    The line number is left out, so the pair survives code moving up or down; the occurrence
    (1-based, counted in file order among equal hashes) keeps repeated lines apart.
    """
    seen: dict[tuple[str, str], int] = {}
    out = []
    for finding in findings:
        context = line_of(finding, texts)
        if context is None:
            context = f"{finding.cell}:{finding.snippet}" if finding.cell is not None else finding.snippet
        normal = re.sub(r"\s+", "", context)
        digest = _sha256(f"{finding.code}\0{normal}".encode()).hexdigest()[:16]
        seen[(finding.path, digest)] = seen.get((finding.path, digest), 0) + 1
        out.append((digest, seen[(finding.path, digest)]))
    return out


def located_message(finding: Finding) -> str:
    """The message, prefixed with the notebook cell for formats that have no place for it."""
    return f"cell {finding.cell}: {finding.message}" if finding.cell is not None else finding.message


def _sha256(data: bytes) -> Any:
    import hashlib  # only fingerprinting formats need it: start-up skips it

    return hashlib.sha256(data)
