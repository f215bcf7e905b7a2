"""Text from the files checked and from project rules, made safe for the format it is shown in.

A message can hold any character: a project rule's TOML may write `\\u001b` or `\\n`, and a
device string copied from the code may hold a raw control character. Shown raw in a terminal,
ESC and BEL drive it (clear the screen, set the title) and a newline starts a line that reads
as a second finding. So every format whose `Escaping` is not JSON (the JSON encoder escapes
them itself) gets messages with such characters written as escapes (`\\x1b`, `\\n`, `\\u202e`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from neuron_migrate.model import FileResult, Finding
from neuron_migrate.output_formats import Escaping


def visible(text: str) -> str:
    """`text` with every character that is not printable (controls, line and paragraph
    separators, format characters such as bidi overrides) written as its Python escape. Lone
    surrogates (bytes of a file name that are not UTF-8) stay: `fsio.report_bytes` shows them
    as each format needs."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or "\udc80" <= c <= "\udcff" else _escape(c) for c in text)


def _escape(char: str) -> str:
    return char.encode("unicode_escape").decode("ascii")


def escaped(results: Sequence[FileResult], escaping: Escaping) -> Sequence[FileResult]:
    """`results` with their messages (and their fixes' messages) made visible, unless the
    format's encoder escapes them (JSON). Results with nothing to escape are returned as they are."""
    if escaping is Escaping.JSON:
        return results
    return [_result(result) for result in results]


def _result(result: FileResult) -> FileResult:
    groups = (result.findings, result.fixed, result.suppressed)
    if all(_clean(f) for group in groups for f in group):
        return result
    return dataclasses.replace(
        result,
        findings=tuple(map(_finding, result.findings)),
        fixed=tuple(map(_finding, result.fixed)),
        suppressed=tuple(map(_finding, result.suppressed)),
    )


def _clean(finding: Finding) -> bool:
    return finding.message.isprintable() and (finding.fix is None or finding.fix.message.isprintable())


def _finding(finding: Finding) -> Finding:
    if _clean(finding):
        return finding
    fix = finding.fix
    if fix is not None:
        fix = dataclasses.replace(fix, message=visible(fix.message))
    return dataclasses.replace(finding, message=visible(finding.message), fix=fix)
