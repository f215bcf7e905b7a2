"""The shipped rule files, parsed at build time: the wheel holds their TOML tables as JSON
(`neuron_migrate/rules/parsed.json`, written by hatch_build.py), so a run does not parse 100
TOML files again.

Reading JSON is a small part of the cost of parsing TOML, which would otherwise weigh on every
cold run of a few files (a pre-commit hook). The tables are used only for rule files whose
names and bytes are exactly those the JSON was made from (a digest of both), so an edited,
added or removed rule file is parsed as before. A source checkout has no such file and parses
the rules each run. Project rule folders (`extend-rules`) are always parsed.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PARSED = "parsed.json"


def digest(named: Sequence[tuple[str, bytes]]) -> str:
    """A digest of rule files by name and bytes, in the order given (sorted by the caller)."""
    found = hashlib.blake2b(digest_size=16)
    for name, data in named:
        found.update(f"{name}\0{len(data)}\0".encode())
        found.update(data)
    return found.hexdigest()


def load(folder: Path, paths: Sequence[Path]) -> dict[str, Any] | None:
    """The parsed table of each of `paths` by file name, when `folder` ships them for exactly
    these files' bytes; else None (the caller parses the files, and reports what is wrong)."""
    from neuron_migrate.fsio import CONFIG_LIMIT, read_regular

    try:
        kept = json.loads((folder / PARSED).read_bytes())
        named = [(path.name, read_regular(path, CONFIG_LIMIT)[0]) for path in paths]
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or kept.get("digest") != digest(named):
        return None
    tables = kept.get("tables")
    if not isinstance(tables, dict) or sorted(tables) != [name for name, _ in named]:
        return None
    return tables


def dumps(folder: Path) -> str:
    """The JSON `load` reads, for the rule files in `folder` (the build hook writes it; this
    module imports nothing of the package at its top, so the hook can load it from its file)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib

    paths = sorted(folder.glob("NM*.toml"))
    named = [(path.name, path.read_bytes()) for path in paths]
    tables = {name: tomllib.loads(data.decode("utf-8")) for name, data in named}
    return json.dumps({"digest": digest(named), "tables": tables}, allow_nan=False)  # key order is meaning (parameters)
