"""Versioned op compatibility data from `rules/compat/<version>/ops.toml`. Imports no torch."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from neuron_migrate.catalogue import rules_dir

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

STATUSES = ("native", "cpu-fallback", "unsupported")
FALLBACK_STATUSES = ("cpu-fallback", "unsupported")
UNKNOWN = "unknown"


class CompatDataError(ValueError):
    """A compat file is missing or malformed; the message names the file and the key."""


@dataclass(frozen=True)
class OpCompat:
    """What the compat data says about one op."""

    op: str  # "aten::linalg_qr"
    status: str  # one of STATUSES
    source: str  # citation, e.g. "torchneuron-facts §8.3, S24 ... [C-old]"


def available_versions() -> tuple[str, ...]:
    """Target versions that have op compat data."""
    base = rules_dir() / "compat"
    if not base.is_dir():
        return ()
    return tuple(sorted(p.parent.name for p in base.glob("*/ops.toml")))


@functools.cache
def load_ops(version: str) -> Mapping[str, OpCompat]:
    """Op name -> OpCompat for one target version (e.g. "2.14")."""
    path = rules_dir() / "compat" / version / "ops.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CompatDataError(f"{path}: no op compat data for target version {version}") from None
    except tomllib.TOMLDecodeError as exc:
        raise CompatDataError(f"{path}: {exc}") from None
    entries = data.get("ops", {})
    return MappingProxyType({op: _entry(path, op, raw) for op, raw in sorted(entries.items())})


def _entry(path: Path, op: str, raw: object) -> OpCompat:
    if not isinstance(raw, dict):
        raise CompatDataError(f"{path}: ops.{op!r} must be a table")
    status, source = raw.get("status"), raw.get("source")
    if status not in STATUSES:
        raise CompatDataError(f"{path}: ops.{op!r}.status must be one of {', '.join(STATUSES)}")
    if not isinstance(source, str) or not source.strip():
        raise CompatDataError(f"{path}: ops.{op!r}.source must cite where the status comes from")
    return OpCompat(op, status, source)


@functools.cache
def made_from(version: str) -> str:
    """What the op data of `version` was made from (its `[meta] made_from`), for the report's label."""
    path = rules_dir() / "compat" / version / "ops.toml"
    try:
        meta = tomllib.loads(path.read_text(encoding="utf-8")).get("meta", {})
    except (OSError, tomllib.TOMLDecodeError):
        return ""
    found = meta.get("made_from", "") if isinstance(meta, dict) else ""
    return found if isinstance(found, str) else ""


_TAG = re.compile(r"\s*\[[A-D](?:-[a-z]+)?\]")
_FACTS = re.compile(r"torchneuron-facts(?:\s*§[\d.]+,?)*\s*")
_SOURCE_ID = re.compile(r"\bS(\d+)\b(.*)", re.DOTALL)


def citation(source: str) -> str:
    """A compat entry's `source` as users can open it: the public source's title, the part of it
    the entry rests on, and its URL (`rules/sources.toml`), in one line."""
    title, *rest = citation_parts(source)
    detail = [part for part in rest if not part.startswith("https://")]
    url = [part for part in rest if part.startswith("https://")]
    return ", ".join([title, *detail]) + "".join(f": {u}" for u in url)


def citation_parts(source: str) -> tuple[str, ...]:
    """(title, what in it, URL), the parts of `citation` that are known; just the text when it
    names no public source. The internal notes' section numbers and confidence tags
    (`torchneuron-facts §8.3`, `S24`, `[C-old]`) never reach the user."""
    from neuron_migrate.docs import load_sources

    text = _FACTS.sub("", _TAG.sub("", source)).strip(" ,;")
    match = _SOURCE_ID.search(text)
    known = load_sources().get(f"S{match[1]}") if match else None
    if match is None or known is None:
        return (text,)
    title, url = known
    return tuple(part for part in (title, match[2].strip(" ,;()"), url) if part)


def base_op_name(name: str) -> str:
    """`aten::add.Tensor` -> `aten::add`; names without a namespace get `aten::`."""
    namespace, _, rest = name.rpartition("::")
    return f"{namespace or 'aten'}::{rest.split('.', 1)[0]}"


def status_of(ops: Mapping[str, OpCompat], name: str) -> str:
    """The compat status of an op, or UNKNOWN when the data does not list it."""
    entry = ops.get(base_op_name(name))
    return entry.status if entry else UNKNOWN
