"""Where the package's data lives (`rules/`, `rules/compat/<version>/`), found without loading it.

`catalogue` and `compat` read this data; the command line only needs to know which target
versions exist, and asks here, so start-up loads neither.
"""

from __future__ import annotations

import functools
from pathlib import Path


def rules_dir() -> Path:
    """The `rules/` folder: inside the installed wheel, else the source checkout's."""
    package = Path(__file__).resolve().parent
    packaged = package / "rules"
    if packaged.is_dir():
        return packaged
    return package.parent / "rules"


def examples_dir() -> Path:
    """Each rule's tested example for `explain` and rules/README.md: `<code>/basic.py` and
    `basic.fixed.py` (or `basic/<file>` for a packaging file or script), and `accel_basic`.

    They are the rule's fixtures; the wheel ships only these files of `fixtures/`, as
    `neuron_migrate/examples/` (hatch_build.py), and a source checkout reads `fixtures/`.
    """
    package = Path(__file__).resolve().parent
    packaged = package / "examples"
    if packaged.is_dir():
        return packaged
    return package.parent / "fixtures"


def compat_dir() -> Path:
    return rules_dir() / "compat"


@functools.cache
def available_versions() -> tuple[str, ...]:
    """Every target version with compat data, oldest first."""
    folder = compat_dir()
    found = [p.name for p in folder.iterdir() if (p / "apis.toml").is_file()] if folder.is_dir() else []
    return tuple(sorted(found, key=family_key))


def family_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())
