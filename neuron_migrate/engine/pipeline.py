"""Process files: read, check, fix until nothing changes, verify, write atomically."""

from __future__ import annotations

import ast
import warnings
from dataclasses import replace
from pathlib import Path

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.source import DecodeError, Encoded, decode, encode
from neuron_migrate.engine import suppress
from neuron_migrate.engine.apply import apply_once, verify
from neuron_migrate.engine.budget import over_budget
from neuron_migrate.engine.check import (
    Planned,
    analyze,
    build_ruleset,
    enabled_codes,
    findings_for,
    might_match,
    tool_finding,
)
from neuron_migrate.engine.formats import notebook
from neuron_migrate.engine.formats.textfiles import (
    check_text_file,
    file_kind,
    packaging_findings,
)
from neuron_migrate.engine.writeback import snapshot, write_back
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
    ruleset = build_ruleset(enabled_codes(settings), settings.target_version, settings.rule_sources, settings.target)
    if not might_match(text, ruleset):
        return FileResult(path, source=text)
    too_big = over_budget(text, fixing=False)
    if too_big is not None:
        return FileResult(path, (tool_finding(path, "NM904", f"Exclude this file or split it; {too_big}"),), source=text)
    no_fix = over_budget(text, fixing=True) if settings.fix else None
    planned, error, analysis = _plan_with_analysis(text, path, ruleset)
    if error is not None:
        return FileResult(path, (error,), source=text)
    if no_fix is not None:
        refused = tool_finding(path, "NM904", f"Fix this file by hand or split it; {no_fix}")
        findings = sorted((*(p.finding for p in planned), refused), key=lambda f: f.sort_key)
        return FileResult(path, tuple(findings), source=text)
    if not settings.fix:
        return FileResult(path, tuple(p.finding for p in planned), source=text)
    return _fix_loop(text, path, settings, ruleset, planned, analysis)


def _plan(text: str, path: str, ruleset: object) -> tuple[list[Planned], Finding | None]:
    planned, error, _ = _plan_with_analysis(text, path, ruleset)
    return planned, error


def _plan_with_analysis(text: str, path: str, ruleset: object) -> tuple[list[Planned], Finding | None, Analysis | None]:
    """The planned findings, or the NM9xx finding that stops planning; and the analysis planned on."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences are the user's business
            tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        message = f"Fix the syntax error before migrating: {exc.msg}"
        return [], tool_finding(path, "NM901", message, exc.lineno or 1, max(exc.offset or 1, 1)), None
    except (RecursionError, MemoryError):
        return [], tool_finding(path, "NM905", "Split this file; it is nested too deeply to parse"), None
    except ValueError as exc:  # source code string cannot contain null bytes
        return [], tool_finding(path, "NM901", f"Fix the file before migrating: {exc}"), None
    try:
        analysis, matches = analyze(text, tree, ruleset)  # type: ignore[arg-type]
        return findings_for(path, analysis, matches), None, analysis
    except RecursionError:
        return [], tool_finding(path, "NM905", "Split this file; it is nested too deeply to analyse"), None


def _fix_loop(
    text: str, path: str, settings: Settings, ruleset: object, planned: list[Planned], analysis: Analysis | None
) -> FileResult:
    """Apply fixes round by round, each on the analysis its plans came from; verify the result once."""
    original = text
    fixed: list[Finding] = []
    converged = False
    for _ in range(settings.max_fix_iterations):
        reported = suppress.reporter(text, path, settings)  # suppressed findings are not fixed
        chosen = [p for p in planned if p.plan is not None and settings.allows(p.applicability.value) and reported(p.finding)]
        if not chosen or analysis is None:
            converged = True
            break
        applied = apply_once(analysis, chosen)
        if applied.text == text:
            converged = True
            break
        text = applied.text
        fixed.extend(applied.fixed)
        planned, error, analysis = _plan_with_analysis(text, path, ruleset)
        if error is not None:
            return _rejected(original, path, ruleset, error.message)
    problem = verify(text, path) if text != original else None
    if problem is not None:
        return _rejected(original, path, ruleset, problem)
    remaining = [p.finding for p in planned]
    if not converged:
        remaining.append(tool_finding(path, "NM907", f"Review the fixes; they did not settle after {settings.max_fix_iterations} rounds"))
    return FileResult(
        path,
        tuple(remaining),
        fixed=tuple(fixed),
        source=original,
        fixed_source=text if text != original else None,
    )


def _rejected(original: str, path: str, ruleset: object, problem: str) -> FileResult:
    """The fixes broke the file: keep it untouched and say so."""
    planned, _ = _plan(original, path, ruleset)
    message = f"Fix this file by hand; the automatic fixes produced invalid code ({problem})"
    findings = [p.finding for p in planned] + [tool_finding(path, "NM906", message.replace("\n", " "))]
    return FileResult(path, tuple(findings), source=original)


def read_source(path: Path, display: str, settings: Settings, data: bytes | None = None) -> tuple[str, Encoded] | Finding:
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
        if path.is_dir():
            return tool_finding(display, "NM903", "Rename or exclude this directory; it is named like a Python file")
        size = path.stat().st_size
        if size > settings.max_file_bytes:
            limit = settings.max_file_bytes // (1024 * 1024)
            return tool_finding(display, "NM904", f"Exclude this file or split it; it is larger than {limit} MiB")
        return path.read_bytes()
    except OSError as exc:
        return tool_finding(display, "NM903", f"Make this file readable; {exc.strerror or exc}")


def process_file(path: Path, display: str, settings: Settings, write: bool = True, data: bytes | None = None) -> FileResult:
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
    except Exception as exc:  # noqa: BLE001 - one file's bug must not stop the run
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
    findings = sorted((*result.findings, tool_finding(display, "NM903", problem)), key=lambda f: f.sort_key)
    return replace(result, findings=tuple(findings))
