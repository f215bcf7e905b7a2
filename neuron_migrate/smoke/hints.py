"""Likely causes that point at the user's code: what still blocks the run, at which line.

No torch. Reads the user's files that the failure's traceback went through, and runs the static
check on them: a script that still imports `torch_xla` after `--fix` needs the findings `--fix`
left, not "run --fix"; a script that still asks for the `xla` device needs the `"xla"` string.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from neuron_migrate.model import Finding, Safety
from neuron_migrate.smoke.report import Failure

MAX_LISTED = 3
_NO_TORCH_XLA = re.compile(r"No module named '?torch_xla")
_XLA_DEVICE = re.compile(
    r"not linked with support for xla devices|device string: xla|from the 'XLA' backend",
    re.IGNORECASE,
)
_XLA_STRING = re.compile(r"xla(:\d+)?")
_FRAME_FILE = re.compile(r'File "(?P<path>[^"]+)", line \d+')


def with_hint(failure: Failure, script: Path, base: Path | None) -> Failure:
    """`failure` with a likely cause that names the blocking lines, when it can find them."""
    text = f"{failure.type}: {failure.message}"
    if _NO_TORCH_XLA.search(text):
        cause = _torch_xla_cause(_user_files(failure, script), base)
    elif _XLA_DEVICE.search(text):
        cause = _xla_string_cause(_user_files(failure, script), base)
    else:
        return failure
    return replace(failure, likely_cause=cause) if cause else failure


def _user_files(failure: Failure, script: Path) -> list[Path]:
    """The script and every user file of the traceback (the traceback keeps no library frame
    out, so only files next to the script or below it count)."""
    root = script.parent
    named = [
        script,
        *(Path(m["path"]) for m in _FRAME_FILE.finditer(failure.traceback)),
    ]
    if failure.site is not None:
        named.append(Path(failure.site.path))
    found: dict[Path, None] = {}
    for path in named:
        path = path if path.is_absolute() else root / path
        if path.suffix == ".py" and path.is_file() and path.resolve().is_relative_to(root):
            found.setdefault(path.resolve(), None)
    return list(found)


def _torch_xla_cause(files: Sequence[Path], base: Path | None) -> str:
    findings = [f for path in files for f in _static_findings(path, base)]
    if not findings:
        return ""
    listed = _listed(findings)
    fixes = {f.fix.applicability for f in findings if f.fix is not None}
    if Safety.SAFE in fixes:
        return f"The script still uses `torch_xla` ({listed}); run `neuron-migrate --fix` on it first"
    if Safety.UNSAFE in fixes:
        return (
            f"The script still uses `torch_xla` ({listed}); review and apply "
            "`neuron-migrate --fix --unsafe-fixes`, or port these lines by hand"
        )
    return f"`--fix` left `torch_xla` in use ({listed}); port these lines by hand (`neuron-migrate explain CODE`)"


def _static_findings(path: Path, base: Path | None) -> list[Finding]:
    """The migration findings of the static check on one file (no fix, nothing written)."""
    from neuron_migrate.engine.pipeline import check_source
    from neuron_migrate.settings import Settings

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    result = check_source(text, _display(path, base), Settings())
    return [f for f in result.findings if f.category == "migration"]


def _listed(findings: Iterable[Finding]) -> str:
    ordered = sorted(findings, key=lambda f: f.sort_key)
    shown = [f"{f.path}:{f.start.line} {f.code}" for f in ordered[:MAX_LISTED]]
    more = len(ordered) - MAX_LISTED
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _xla_string_cause(files: Sequence[Path], base: Path | None) -> str:
    places = [f"{_display(path, base)}:{line}" for path in files for line in _xla_strings(path)]
    if not places:
        return ""
    shown = ", ".join(places[:MAX_LISTED]) + (
        f" and {len(places) - MAX_LISTED} more" if len(places) > MAX_LISTED else ""
    )
    return f'The script still asks for the `xla` device ("xla" at {shown}); use `torch.device("neuron")`'


def _xla_strings(path: Path) -> list[int]:
    """Lines of string literals that name the `xla` device ("xla", "xla:0")."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return []
    lines = {
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and _XLA_STRING.fullmatch(node.value.strip().lower())
    }
    return sorted(lines)


def _display(path: Path, base: Path | None) -> str:
    if base is not None and path.is_relative_to(base):
        return Path(os.path.relpath(path, base)).as_posix()
    return path.as_posix()
