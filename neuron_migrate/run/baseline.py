"""Baseline files for gradual adoption: record today's findings, then report only new ones.

A finding is keyed by (path, rule code, normalised snippet) with a count, never by line, so it
survives code moving around and being reformatted. Paths are stored relative to the baseline file's folder, so the
file works from any current folder. When a key occurs more often than recorded, the first
occurrences (in file order) count as known and the later ones are reported.
"""

from __future__ import annotations

import io
import json
import os
import tokenize
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import cast

from neuron_migrate.engine.writeback import OutputRefused, write_output
from neuron_migrate.fsio import BASELINE_LIMIT, json_escape_surrogates, read_text_regular, visible_name
from neuron_migrate.model import FileResult, Finding

FORMAT = "neuron-migrate-baseline"
VERSION = 1

Key = tuple[str, str, str]
_LAYOUT = frozenset(
    {tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
)


class BaselineError(ValueError):
    """The baseline file cannot be read or is not a neuron-migrate baseline."""


def normalise(snippet: str) -> str:
    """The snippet's tokens without layout, comments or trailing commas, so a formatter run
    (reindenting, rewrapping, magic trailing commas) keeps the match. Text that does not
    tokenize (a truncated snippet) falls back to collapsing whitespace."""
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(snippet).readline) if t.type not in _LAYOUT]
    except (tokenize.TokenError, SyntaxError):
        return " ".join(snippet.split())
    out: list[str] = []
    previous: tokenize.TokenInfo | None = None
    for token in tokens:
        if token.string in (")", "]", "}") and out and out[-1] == ",":
            out.pop()
        if previous is not None and _wordy(previous) and _wordy(token):
            out.append(" ")
        out.append(token.string)
        previous = token
    return "".join(out)


def _wordy(token: tokenize.TokenInfo) -> bool:
    return token.type in (tokenize.NAME, tokenize.NUMBER, tokenize.STRING)


def _relative(path: str, root: Path) -> str:
    return Path(os.path.relpath(os.path.abspath(path), root)).as_posix()


def key(finding: Finding, root: Path) -> Key:
    return (_relative(finding.path, root), finding.code, normalise(finding.snippet))


def build(findings: Iterable[Finding], root: Path) -> dict[str, object]:
    """The baseline document for `findings`, deterministic (sorted keys, no timestamps)."""
    counts = Counter(key(f, root) for f in findings)
    entries = [{"path": p, "code": c, "snippet": s, "count": n} for (p, c, s), n in sorted(counts.items())]
    return {"format": FORMAT, "version": VERSION, "findings": entries}


def write(path: Path, results: Sequence[FileResult]) -> int:
    """Record every remaining finding of `results` in `path`; returns how many."""
    findings = [f for r in results for f in r.findings]
    document = build(findings, path.resolve().parent)
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    try:  # a name that is not UTF-8 is kept as a `\udcXX` escape, which `load` reads back as it was
        write_output(path, json_escape_surrogates(text).encode("utf-8"))
    except OutputRefused as exc:
        raise BaselineError(
            f"{visible_name(str(path))}: cannot write the baseline: {exc}; name a regular file or a new path"
        ) from None
    except OSError as exc:
        raise BaselineError(f"{visible_name(str(path))}: cannot write the baseline: {exc.strerror or exc}") from None
    return len(findings)


def load(path: Path) -> Counter[Key]:
    """The recorded counts per key; BaselineError names the file and what is wrong."""
    try:
        data = json.loads(read_text_regular(path, BASELINE_LIMIT))
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read the baseline: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise BaselineError(f"{path}: the baseline is not valid JSON: {exc}") from None
    except RecursionError:
        raise BaselineError(f"{path}: the baseline is nested too deeply to read") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
        raise BaselineError(f"{path}: not a {FORMAT} file of version {VERSION}; write one with --write-baseline")
    entries = data.get("findings", [])
    if not isinstance(entries, list):
        raise BaselineError(f"{path}: `findings` must be a list of entries")
    counts: Counter[Key] = Counter()
    for index, entry in enumerate(entries):
        fields = [entry.get(name) for name in ("path", "code", "snippet", "count")] if isinstance(entry, dict) else []
        if (
            len(fields) != 4
            or not all(isinstance(f, str) for f in fields[:3])
            or type(fields[3]) is not int
            or fields[3] < 0
        ):
            raise BaselineError(
                f"{path}: entry {index + 1} needs `path`, `code`, `snippet` and a non-negative integer `count`"
            )
        counts[cast(Key, tuple(fields[:3]))] += fields[3]  # three strings: checked above
    return counts


def apply(results: Sequence[FileResult], known: Counter[Key], root: Path) -> list[FileResult]:
    """Move findings recorded in the baseline to `suppressed`; keep the new ones."""
    budget = Counter(known)
    out = []
    for result in results:
        kept: list[Finding] = []
        matched: list[Finding] = []
        for finding in sorted(result.findings, key=lambda f: f.sort_key):
            k = key(finding, root)
            if budget[k] > 0:
                budget[k] -= 1
                matched.append(finding)
            else:
                kept.append(finding)
        out.append(
            replace(result, findings=tuple(kept), suppressed=(*result.suppressed, *matched)) if matched else result
        )
    return out
