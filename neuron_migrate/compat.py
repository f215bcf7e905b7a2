"""Versioned compatibility data: `rules/compat/<version>/apis.toml`.

Each supported TorchNeuron family (`--target-version`) has a folder. `apis.toml` says, per
Python-level API, whether it runs natively, falls back to the CPU or is unsupported, and cites
its source. Rules with `compat = true` take the status of what they match from here, so a new
Neuron release is a new folder of data, not new code.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from neuron_migrate.catalogue import RuleSpecError, toml_module
from neuron_migrate.data import available_versions, compat_dir, family_key  # noqa: F401 - re-exported
from neuron_migrate.model import Severity

if TYPE_CHECKING:
    from neuron_migrate.analysis.values import Match

STATUSES = ("native", "cpu-fallback", "unsupported")
SEVERITY = {"cpu-fallback": Severity.WARNING, "unsupported": Severity.ERROR}
VERDICT = {"cpu-fallback": "runs it on the CPU", "unsupported": "does not support it"}
# A source cites a torchneuron-facts section and carries a confidence mark.
_SOURCE = re.compile(r"§\d+(?:\.\d+)?.*\[(?:C|C-old|I|B)\]")
_API_KEYS = {"name", "status", "source", "prefix", "note"}
_TOP_KEYS = {"schema", "release", "torch_compile", "api"}
_RELEASE_KEYS = {"neuron", "torch_neuronx", "torch", "source"}
_COMPILE_KEYS = {"modes", "options", "dynamic", "source"}


@dataclass(frozen=True)
class ApiStatus:
    """How one API (or, with `prefix`, a family of APIs) behaves on a TorchNeuron release."""

    name: str
    status: str  # one of STATUSES
    source: str
    prefix: bool = False
    note: str = ""

    @property
    def severity(self) -> Severity | None:
        return SEVERITY.get(self.status)

    @property
    def verdict(self) -> str:
        return VERDICT.get(self.status, "supports it")


@dataclass(frozen=True)
class CompileSupport:
    """What the `neuron` torch.compile backend accepts."""

    modes: tuple[str, ...]
    options: tuple[str, ...]
    dynamic: bool
    source: str


@dataclass(frozen=True)
class Release:
    """One TorchNeuron family: package versions and API statuses."""

    version: str  # the --target-version, e.g. "2.14"
    neuron: str
    torch_neuronx: str
    torch: str
    source: str
    compile: CompileSupport
    apis: tuple[ApiStatus, ...]

    def status_of(self, name: str) -> ApiStatus | None:
        """The entry for `name`: an exact entry, else the longest `prefix` entry above it."""
        best: ApiStatus | None = None
        for entry in self.apis:
            if entry.name == name:
                return entry
            if (
                entry.prefix
                and name.startswith(entry.name + ".")
                and (best is None or len(entry.name) > len(best.name))
            ):
                best = entry
        return best


@functools.cache
def load_release(version: str) -> Release:
    """The compat data for `version`; RuleSpecError names the file and key when it is malformed."""
    path = compat_dir() / version / "apis.toml"
    where = f"compat/{version}/apis.toml"
    toml = toml_module()
    try:
        data = toml.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RuleSpecError(f"{where}: no compat data for target version {version}") from None
    except toml.TOMLDecodeError as exc:
        raise RuleSpecError(f"{where}: invalid TOML: {exc}") from None
    return parse_release(data, version, where)


def parse_release(data: dict[str, Any], version: str, where: str) -> Release:
    _check_keys(data, _TOP_KEYS, where)
    release = _table(data, "release", _RELEASE_KEYS, where)
    compile_table = _table(data, "torch_compile", _COMPILE_KEYS, where)
    apis = tuple(_parse_api(entry, f"{where} [[api]] #{i + 1}") for i, entry in enumerate(data.get("api", [])))
    names = [a.name for a in apis]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise RuleSpecError(f"{where}: api `{duplicate}` is listed twice")
    return Release(
        version=version,
        neuron=_string(release, "neuron", where),
        torch_neuronx=_string(release, "torch_neuronx", where),
        torch=_string(release, "torch", where),
        source=_source(release, where),
        compile=CompileSupport(
            modes=tuple(_strings(compile_table, "modes", where)),
            options=tuple(_strings(compile_table, "options", where)),
            dynamic=bool(compile_table.get("dynamic", False)),
            source=_source(compile_table, f"{where} [torch_compile]"),
        ),
        apis=apis,
    )


def _parse_api(data: dict[str, Any], where: str) -> ApiStatus:
    _check_keys(data, _API_KEYS, where)
    status = _string(data, "status", where)
    if status not in STATUSES:
        raise RuleSpecError(f"{where}: `status` must be one of {', '.join(STATUSES)}, not {status!r}")
    return ApiStatus(
        name=_string(data, "name", where),
        status=status,
        source=_source(data, where),
        prefix=bool(data.get("prefix", False)),
        note=str(data.get("note", "")),
    )


def _check_keys(data: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise RuleSpecError(f"{where}: unknown key `{unknown[0]}`")


def _table(data: dict[str, Any], key: str, allowed: set[str], where: str) -> dict[str, Any]:
    table = data.get(key)
    if not isinstance(table, dict):
        raise RuleSpecError(f"{where}: `[{key}]` is required")
    _check_keys(table, allowed, f"{where} [{key}]")
    return table


def _string(data: dict[str, Any], key: str, where: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise RuleSpecError(f"{where}: `{key}` is required and must be a string")
    return value


def _strings(data: dict[str, Any], key: str, where: str) -> list[str]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RuleSpecError(f"{where}: `{key}` must be a list of strings")
    return value


def _source(data: dict[str, Any], where: str) -> str:
    source = _string(data, "source", where)
    if not _SOURCE.search(source):
        raise RuleSpecError(
            f"{where}: `source` must cite a torchneuron-facts section (§) and a confidence mark ([C], [C-old], [I] or [B])"
        )
    return source


def resolve_match(match: Match, release: Release) -> Match | None:
    """A compat rule's match with its severity and message values from `release`.

    None when the API runs natively, or when the data does not list it: the compat data, not
    the rule's `[[map]]`, is the authority on what is not native.
    """
    entry = release.status_of(match.qualified)
    if entry is None or entry.status == "native":
        return None
    values = (*match.values, ("version", release.version), ("verdict", entry.verdict))
    map_entry = match.entry
    if map_entry is not None and map_entry.severity is None:
        map_entry = replace(map_entry, severity=entry.severity)
    return replace(match, entry=map_entry, values=values)
