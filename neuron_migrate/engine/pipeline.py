"""Process files: read, check (`engine/planning.py`), fix until nothing changes
(`engine/fix_loop.py`), write atomically."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from neuron_migrate.analysis.source import DecodeError, Encoded, decode, encode
from neuron_migrate.engine import suppress
from neuron_migrate.engine.check import tool_finding
from neuron_migrate.engine.fix_loop import fix_loop
from neuron_migrate.engine.formats import notebook
from neuron_migrate.engine.formats.textfiles import (
    check_text_file,
    file_kind,
    packaging_findings,
)
from neuron_migrate.engine.planning import first_round, reported, ruleset_for
from neuron_migrate.engine.writeback import snapshot, write_back
from neuron_migrate.fsio import NotRegularFile, TooLarge, read_regular
from neuron_migrate.model import FileResult, Finding
from neuron_migrate.settings import Settings


def check_source(text: str, path: str, settings: Settings) -> FileResult:
    """Check (and with `settings.fix`, fix) one file's text. Never raises for bad input."""
    if notebook.is_notebook(path):
        return notebook.check_notebook(text, path, settings, check_python)
    kind = file_kind(path)
    if kind is not None and kind != "setup_py":
        return check_text_file(text, path, settings)
    result = check_python(text, path, settings)
    if kind == "setup_py":
        extra = packaging_findings(result.fixed_source or text, path, settings)
        findings = tuple(sorted((*result.findings, *extra), key=lambda f: f.sort_key))
        return replace(result, findings=findings)
    return result


def check_python(text: str, path: str, settings: Settings) -> FileResult:
    """Check Python text, then apply `# noqa` comments and per-file-ignores."""
    return suppress.finish(_check(text, path, settings), settings)


def _check(text: str, path: str, settings: Settings) -> FileResult:
    ruleset = ruleset_for(settings)
    start = first_round(text, path, settings, ruleset)
    if isinstance(start, FileResult):
        return start
    planned, analysis = start
    if settings.fix:
        return fix_loop(text, path, settings, ruleset, planned, analysis).result
    return FileResult(path, tuple(p.finding for p in reported(analysis, planned, settings, ruleset)), source=text)


def read_source(
    path: Path, display: str, settings: Settings, data: bytes | None = None
) -> tuple[str, Encoded] | Finding:
    """The decoded text of a file (or of `data`, its bytes already read), or the NM9xx finding that says why it cannot be read."""
    if data is None:
        read = read_bytes(path, display, settings)
        if isinstance(read, Finding):
            return read
        data = read
    try:
        return decode(data)
    except DecodeError as exc:
        return tool_finding(display, "NM902", f"Save this file in the encoding it declares; {exc}")


def read_bytes(path: Path, display: str, settings: Settings) -> bytes | Finding:
    """A file's bytes, or the NM9xx finding that says why they cannot be read."""
    try:
        return read_regular(path, settings.max_file_bytes)[0]
    except TooLarge:
        limit = settings.max_file_bytes // (1024 * 1024)
        return tool_finding(display, "NM904", f"Exclude this file or split it; it is larger than {limit} MiB")
    except NotRegularFile as exc:
        if exc.kind == "a folder":
            return tool_finding(display, "NM903", "Rename or exclude this directory; it is named like a Python file")
        return tool_finding(display, "NM903", f"Remove or exclude this file; {exc}")
    except OSError as exc:
        return tool_finding(display, "NM903", f"Make this file readable; {exc.strerror or exc}")


def process_file(
    path: Path, display: str, settings: Settings, write: bool = True, data: bytes | None = None
) -> FileResult:
    """Read (unless `data` holds the bytes), check, maybe fix, and write back one file."""
    if data is None:
        read = read_bytes(path, display, settings)
        if isinstance(read, Finding):
            return FileResult(display, (read,))
        data = read
    seen = snapshot(path, data) if write else None  # what the fix is computed from
    decoded = read_source(path, display, settings, data)
    if isinstance(decoded, Finding):
        return FileResult(display, (decoded,))
    text, how = decoded
    try:
        result = check_source(text, display, settings)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - one file's bug (a plugin's `sys.exit`) must not stop the run
        message = f"Report this bug; neuron-migrate failed on this file: {type(exc).__name__}: {exc}"
        return FileResult(display, (tool_finding(display, "NM908", message.replace("\n", " ")[:300]),), source=text)
    if write and result.changed:
        try:
            problem = write_back(path, encode(result.fixed_source or "", how), seen)
        except (OSError, UnicodeEncodeError) as exc:
            problem = f"Make this file writable; {exc}"
        if problem is not None:
            return _unwritten(text, display, settings, problem)
    return result


def _unwritten(text: str, display: str, settings: Settings, problem: str) -> FileResult:
    """The file was not written: its findings as a check reports them, and why it was skipped."""
    result = check_source(text, display, replace(settings, fix=False, add_noqa=False))
    unfixed = (replace(f, fix=None) for f in result.findings)  # `--fix` could not write them
    findings = sorted((*unfixed, tool_finding(display, "NM903", problem)), key=lambda f: f.sort_key)
    return replace(result, findings=tuple(findings))
