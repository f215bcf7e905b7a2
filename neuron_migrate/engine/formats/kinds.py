"""Which files are not Python modules but are checked anyway, by name alone.

Kept apart from `textfiles` (which checks them) so that discovering files imports no rules.
"""

from __future__ import annotations

import fnmatch
import sys
from pathlib import PurePosixPath


def file_kind(path: str) -> str | None:
    """ "requirements", "pyproject", "setup_cfg", "setup_py" or "shell"; None for other files."""
    pure = PurePosixPath(path.replace("\\", "/"))
    name = pure.name
    if name == "pyproject.toml":
        return "pyproject"
    if name == "setup.cfg":
        return "setup_cfg"
    if name == "setup.py":
        return "setup_py"
    if fnmatch.fnmatch(name, "requirements*.txt") or (pure.parent.name == "requirements" and name.endswith(".txt")):
        return "requirements"
    if name.endswith(".sh"):
        return "shell"
    return None


def valid_toml(text: str) -> bool:
    """Whether `text` parses as TOML (the TOML parser is imported on first use)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    try:
        tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return False
    return True
