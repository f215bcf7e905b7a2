"""The one rule registry: the shipped and project TOML rules joined with their Python checks.

A rule is data (`rules/NMxxx.toml`, or a project's `NMX001.toml` found through `extend-rules`).
Rules that data cannot express name a detector (`detector = "..."`) and map entries name a fix
(`fix = "..."`); those names are looked up here, in the concept modules `checks.CONCEPTS`
(`checks/devices.py`, `checks/execution.py`, ...) or in a project's plugin modules
(`plugins = ["mypkg.nm_rules"]`), merged by one loop with the same clash checks. Every layer asks this module, so the TOML files, the detector
and fix tables, the packaging and shell checks and the smoke rules cannot disagree.

A plugin module is written against the same interface as a concept module `checks/<concept>.py`:

- `RULES`: a sequence of rule tables in the TOML schema (`code`, `name`, `message`, ...), each
  with a project code such as `NMX101`;
- `DETECTORS`: `{name: ((ast node types...), detector)}` where a detector is
  `(rule, analysis, node, scope) -> Iterator[Match]` (`checks.toolkit.DetectorFn`);
- `FIXES`: `{name: fix}` where a fix is `(FixContext, Match) -> Plan | None`
  (`checks.toolkit.FixFn`; `FixContext` is in `checks/toolkit.py`).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import TYPE_CHECKING, Any

from neuron_migrate.catalogue import (
    RuleSpec,
    RuleSpecError,
    catalogue_digest,
    load_catalogue,
    load_rule_folder,
    parse_rule,
    select_rules,
)
from neuron_migrate.settings import RuleSources

if TYPE_CHECKING:
    from neuron_migrate.checks.toolkit import DetectorFn

# Detectors the engine runs outside the `ast` walk: packaging files and shell scripts
# (engine/formats/textfiles.py), the catch-all for torch_xla names no other rule claims, and
# the smoke run's findings (smoke/findings.py).
FILE_DETECTORS = frozenset(
    {"package_name", "neuronx_xla_pin", "neuronx_family", "neuronx_index", "shell_env", "shell_launch"}
)
CATCH_ALL = "catch_all"
RUNTIME_DETECTORS = frozenset({"smoke"})
BUILTIN_DETECTORS = frozenset({"qualified", CATCH_ALL}) | FILE_DETECTORS | RUNTIME_DETECTORS


@dataclass(frozen=True)
class Registry:
    """Every rule, and the Python behind the names they use."""

    specs: tuple[RuleSpec, ...]
    detectors: Mapping[str, tuple[tuple[type, ...], DetectorFn]]
    fixes: Mapping[str, Callable[..., Any]]
    examples: Mapping[str, Path]  # project code -> its fixtures folder (for `explain`)
    digest: str  # changes whenever any rule data or plugin source changes (cache keys)

    def spec(self, code: str) -> RuleSpec | None:
        return self._by_code.get(code)

    @functools.cached_property
    def _by_code(self) -> dict[str, RuleSpec]:
        return {spec.code: spec for spec in self.specs}


@functools.cache
def registry(sources: RuleSources = RuleSources()) -> Registry:
    """The shipped rules plus the project's; raises RuleSpecError naming the bad file or key."""
    # The checks are imported here, not at the top: a run answered from the cache needs none.
    from neuron_migrate import checks

    specs = list(load_catalogue())
    detectors: dict[str, tuple[tuple[type, ...], DetectorFn]] = {}
    fix_table: dict[str, Callable[..., Any]] = {}
    for concept in checks.CONCEPTS:
        module = importlib.import_module(f"neuron_migrate.checks.{concept}")
        _merge(detectors, module.DETECTORS, f"neuron_migrate.checks.{concept}", "DETECTORS", "module")
        _merge(fix_table, module.FIXES, f"neuron_migrate.checks.{concept}", "FIXES", "module")
    examples: dict[str, Path] = {}
    digest = _data_digest(sources)
    for folder in sources.extend_rules:
        project = load_rule_folder(Path(folder), project=True)
        specs.extend(project)
        examples.update((spec.code, Path(folder) / "fixtures" / spec.code) for spec in project)
    for name in sources.plugins:
        module = _import_plugin(name, sources.plugin_root)
        specs.extend(_plugin_rules(module, name))
        _merge(detectors, getattr(module, "DETECTORS", {}), name, "DETECTORS", "plugin")
        _merge(fix_table, getattr(module, "FIXES", {}), name, "FIXES", "plugin")
        digest.update(_module_source(module))
    ordered = tuple(sorted(specs, key=lambda s: s.code))
    _check_unique(ordered)
    _check_names(ordered, detectors, fix_table)
    return Registry(
        ordered,
        MappingProxyType(detectors),
        MappingProxyType(fix_table),
        MappingProxyType(examples),
        digest.hexdigest()[:16],
    )


def _data_digest(sources: RuleSources) -> Any:
    """The running hash of the rules data: the shipped TOML files, then each extend-rules folder's."""
    digest = hashlib.sha256(catalogue_digest().encode())
    for folder in sources.extend_rules:
        digest.update(catalogue_digest(Path(folder)).encode())
    return digest


def rules_digest(sources: RuleSources = RuleSources()) -> str:
    """A hash of every rule's data and plugin source, for cache keys.

    Without plugins it hashes the TOML files' bytes and builds no registry (a warm run imports
    none of the checks); plugins are imported to hash their source, as `registry` does. Either
    way it equals `registry(sources).digest`.
    """
    if sources.plugins:
        return registry(sources).digest
    return str(_data_digest(sources).hexdigest()[:16])


@functools.lru_cache(maxsize=64)
def enabled_codes(
    sources: RuleSources,
    select: tuple[str, ...],
    ignore: tuple[str, ...] = (),
    extend_select: tuple[str, ...] = (),
    families: tuple[str, ...] | None = None,
) -> frozenset[str]:
    """The codes that Ruff-style select / ignore / extend-select prefixes enable (of `--from` families)."""
    return select_rules(registry(sources).specs, select, ignore, extend_select, families)


def _import_plugin(name: str, root: str) -> ModuleType:
    added = bool(root) and root not in sys.path
    if added:
        sys.path.insert(0, root)
    try:
        return importlib.import_module(name)
    except BaseException as exc:  # noqa: BLE001 - even `sys.exit(0)` or KeyboardInterrupt in the user's module is one clear line
        raise RuleSpecError(f"plugin {name}: cannot import it: {type(exc).__name__}: {exc}") from None
    finally:
        if added:
            sys.path.remove(root)


def _plugin_rules(module: ModuleType, name: str) -> list[RuleSpec]:
    tables = getattr(module, "RULES", None)
    if not isinstance(tables, (list, tuple)) or not all(isinstance(t, Mapping) for t in tables):
        raise RuleSpecError(f"plugin {name}: `RULES` must be a list of rule tables")
    return [parse_rule(dict(table), f"plugin {name} RULES[{i}]", project=True) for i, table in enumerate(tables)]


def _merge(into: dict[str, Any], extra: object, plugin: str, table: str, kind: str) -> None:
    """Add a concept module's or a plugin's table to `into`; a name may be defined only once."""
    if not isinstance(extra, Mapping):
        raise RuleSpecError(f"{kind} {plugin}: `{table}` must be a mapping of name to function")
    for key, value in extra.items():
        if key in into or key in BUILTIN_DETECTORS:
            raise RuleSpecError(f"{kind} {plugin}: {table} name {key!r} is already taken")
        if table == "DETECTORS" and not _is_detector_entry(value):
            raise RuleSpecError(f"{kind} {plugin}: DETECTORS[{key!r}] must be ((node types...), function)")
        if table == "FIXES" and not callable(value):
            raise RuleSpecError(f"{kind} {plugin}: FIXES[{key!r}] must be a function")
        into[key] = value


def _is_detector_entry(value: object) -> bool:
    if not (isinstance(value, tuple) and len(value) == 2 and callable(value[1])):
        return False
    types = value[0]
    return isinstance(types, tuple) and bool(types) and all(isinstance(t, type) for t in types)


def _module_source(module: ModuleType) -> bytes:
    path = getattr(module, "__file__", None)
    try:
        return Path(path).read_bytes() if path else module.__name__.encode()
    except OSError:
        return module.__name__.encode()


def _check_unique(specs: tuple[RuleSpec, ...]) -> None:
    seen: set[str] = set()
    for spec in specs:
        if spec.code in seen:
            raise RuleSpecError(
                f"rule {spec.code}: the code is defined twice (project rules need their own codes, e.g. NMX001)"
            )
        seen.add(spec.code)


def _check_names(specs: tuple[RuleSpec, ...], detectors: Mapping[str, object], fixes: Mapping[str, object]) -> None:
    for spec in specs:
        if spec.detector not in BUILTIN_DETECTORS and spec.detector not in detectors:
            raise RuleSpecError(f"rule {spec.code}: unknown detector {spec.detector!r}")
        for entry in spec.maps:
            if entry.fix and entry.fix not in fixes:
                raise RuleSpecError(f"rule {spec.code}: [[map]] {entry.old!r} names unknown fix {entry.fix!r}")
