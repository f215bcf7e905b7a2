"""Load and validate the rule catalogue (`rules/*.toml`)."""

from __future__ import annotations

import functools
import hashlib
import re
import sys
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from neuron_migrate import parsed_rules
from neuron_migrate.data import rules_dir
from neuron_migrate.fsio import CONFIG_LIMIT, read_regular, read_text_regular
from neuron_migrate.model import Safety, Severity
from neuron_migrate.settings import FAMILIES, TARGETS  # noqa: F401 - TARGETS is re-exported (it lives in settings)


def toml_module() -> Any:
    """`tomllib` (`tomli` before Python 3.11), imported on first use: a warm run reads no TOML."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    return tomllib


DOCS_URL = "https://github.com/neuron-migrate/neuron-migrate/blob/main/rules/README.md#{code}"
_CODE = re.compile(r"^NM\d{3}$")
_PROJECT_CODE = re.compile(r"^NM[A-Z]\d{3}$")  # a project's own rules: NMX001, NMA120, ...
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_RULE_KEYS = {
    "code",
    "name",
    "concept",
    "message",
    "severity",
    "safety",
    "since",
    "detector",
    "retired",
    "source",
    "doc",
    "map",
    "triggers",
    "compat",
    "from",
    "blocker",
    "tier",
}
_MAP_KEYS = {
    "old",
    "new",
    "new_call",
    "fix",
    "safety",
    "message",
    "severity",
    "source",
    "prefix",
    "calls_only",
    "accelerator_call",
    "accelerator_safety",
    "accelerator_message",
    "manual_message",
    "blocker",
    "params",
    "tier",
    "ref",
    "ref_helper",
    "ref_class",
    "ref_message",
    "ref_fix",
    "constant",
}
# What a fix does with each parameter of the API it maps (`[map.params]`): carry it over (`keep`),
# pass it under another name (`rename: new`), leave it out (`drop: why`), or leave the call to a
# human when it is given a value other than its default (`decline: why`, shown in the finding).
PARAM_ACTIONS = ("keep", "rename", "drop", "decline")
# How much of a person's work a rule's finding is (`tier`, on the rule or a `[[map]]` entry), for
# the report's effort tiers: a local rewrite (`mechanical`), one that needs the model's own module
# names, i.e. a plan (`semi-mechanical`), or a port by hand (`manual`). The NxD rules carry it.
TIERS = ("mechanical", "semi-mechanical", "manual")
# What code a rule migrates from (`--from`): the torch_xla rules, the CUDA rules (NM8xx), and the
# bands that apply to both (APIs the beta lacks, torch.compile, smoke findings, the tool itself).
_SHARED_BANDS = ("NM4", "NM5", "NM7", "NM9")
# The concept a rule belongs to (`concept = "..."` in its TOML): a chapter of the migration guide
# (guide.py) and, for a rule with Python, the module `checks/<concept>.py` that holds it
# (MODULE_CONCEPTS, which `checks.CONCEPTS` is). `packaging` and `shell` live in
# engine/formats/textfiles.py, `smoke` in smoke/, `engine` (the tool's own findings) in engine/.
MODULE_CONCEPTS = (
    "devices",
    "execution",
    "optimizer",
    "compilation",
    "ranks",
    "collectives",
    "loading",
    "launch",
    "sharding",
    "utilities",
    "apis",
    "xla_imports",
    "environment",
    "cuda",
    "cuda_setup",
    "nxd",
)
CONCEPTS = (*MODULE_CONCEPTS, "packaging", "shell", "smoke", "engine")
_DOC_KEYS = {"what", "why", "fix_safety", "known_problems", "references"}


class RuleSpecError(ValueError):
    """A rule file is malformed; the message names the file and the key."""


@dataclass(frozen=True)
class Param:
    """One parameter of a mapped API, and what its fix does with an argument for it."""

    name: str  # as in the signature; `args` / `kwargs` for `*args` / `**kwargs`; `...` for an unreadable one
    action: str  # one of PARAM_ACTIONS
    note: str = ""  # the reason (drop, decline), the new name (rename) or a remark (keep)


@dataclass(frozen=True)
class MapEntry:
    """One API a rule matches, and how to rewrite it."""

    old: str  # fully qualified dotted name
    new: str | None = None  # replacement for the reference itself (placeholders allowed)
    new_call: str | None = None  # replacement for the whole call; `{args}` is the argument text
    fix: str | None = None  # name in fixes.FIXES
    safety: Safety | None = None  # overrides the rule's safety for this entry
    message: str | None = None  # overrides the rule's message for this entry
    severity: Severity | None = None
    source: str = ""
    prefix: bool = False  # also match every name below `old`
    calls_only: bool = False  # match only when called, not bare references
    accelerator_call: str | None = None  # `new_call` under `--target accelerator`
    accelerator_safety: Safety | None = None  # `safety` under `--target accelerator`
    accelerator_message: str | None = None  # `message` under `--target accelerator`
    manual_message: str | None = None  # `message` for a use the entry's fix leaves to a person
    blocker: bool | None = None  # overrides the rule's `blocker` for this entry
    params: tuple[Param, ...] = ()  # every parameter of `old`'s signature, in order (rules/signatures.toml)
    tier: str = ""  # one of TIERS, overriding the rule's; "" when the entry names none
    # What a reference to `old` that is not a call becomes (`f = xm.mark_step`, `default=xm.xla_device`):
    # an expression (placeholders as in `new`, `{helper}` for `ref_helper`'s name), a helper written
    # into the file, the class a type test (`isinstance`, `except`) names instead, or the message of a
    # reference left to a person. engine/references.py derives the first from `new`/`new_call` where exact.
    ref: str | None = None
    ref_helper: str | None = None
    ref_class: str | None = None
    ref_message: str | None = None
    ref_fix: bool = False  # the entry's fix rewrites a reference itself, where no stand-in is declared
    constant: bool = False  # `old` is a value, not a callable (`xm.REDUCE_SUM`): its reads are its uses

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


@dataclass(frozen=True)
class RuleSpec:
    """One rule, as read from its TOML file."""

    code: str
    name: str
    message: str
    severity: Severity
    safety: Safety
    concept: str = ""  # one of CONCEPTS; "" when the TOML names none
    since: str = "0.1.0"
    detector: str = "qualified"  # "qualified" or a name in detectors.DETECTORS
    retired: bool = False
    source: str = ""
    triggers: tuple[str, ...] = ()  # extra prefilter substrings for Python detectors
    compat: bool = False  # status and severity of each match come from rules/compat/<version>/
    doc: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    maps: tuple[MapEntry, ...] = ()
    families: tuple[str, ...] = ("xla",)  # the `--from` families the rule belongs to
    # Its findings keep a torch_xla import alive: no TorchNeuron counterpart a tool can write.
    blocker: bool = False
    tier: str = ""  # one of TIERS; "" when the rule names none

    def tier_of(self, entry: MapEntry | None) -> str:
        """The effort tier of a finding of this rule through `entry`: the entry's, else the rule's."""
        return entry.tier if entry is not None and entry.tier else self.tier

    @property
    def category(self) -> str:
        if self.code.startswith("NM9"):
            return "tool"
        if self.code.startswith("NM7"):
            return "smoke"
        return "cuda" if self.code.startswith("NM8") else "migration"

    @property
    def url(self) -> str:
        return DOCS_URL.format(code=self.code.lower())


def _enum(cls: type[Enum], value: Any, where: str, key: str) -> Any:
    try:
        return cls(value)
    except ValueError:
        choices = ", ".join(str(member.value) for member in cls)
        raise RuleSpecError(f"{where}: `{key}` must be one of {choices}, not {value!r}") from None


def _check_keys(data: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise RuleSpecError(f"{where}: unknown key `{unknown[0]}`")


def _parse_map(data: dict[str, Any], where: str) -> MapEntry:
    _check_keys(data, _MAP_KEYS, where)
    if not isinstance(data.get("old"), str):
        raise RuleSpecError(f"{where}: `old` is required and must be a string")
    safety = data.get("safety")
    severity = data.get("severity")
    accel_safety = data.get("accelerator_safety")
    return MapEntry(
        old=data["old"],
        new=data.get("new"),
        new_call=data.get("new_call"),
        fix=data.get("fix"),
        safety=_enum(Safety, safety, where, "safety") if safety else None,
        message=data.get("message"),
        severity=_enum(Severity, severity, where, "severity") if severity else None,
        source=data.get("source", ""),
        prefix=bool(data.get("prefix", False)),
        calls_only=bool(data.get("calls_only", False)),
        accelerator_call=data.get("accelerator_call"),
        accelerator_safety=_enum(Safety, accel_safety, where, "accelerator_safety") if accel_safety else None,
        accelerator_message=data.get("accelerator_message"),
        manual_message=data.get("manual_message"),
        blocker=_flag(data, "blocker", where) if "blocker" in data else None,
        params=_parse_params(data.get("params", {}), f"{where} [map.params]"),
        tier=_tier(data, where),
        ref=_text(data, "ref", where),
        ref_helper=_text(data, "ref_helper", where),
        ref_class=_text(data, "ref_class", where),
        ref_message=_text(data, "ref_message", where),
        ref_fix=_flag(data, "ref_fix", where),
        constant=_flag(data, "constant", where),
    )


def _text(data: dict[str, Any], key: str, where: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise RuleSpecError(f"{where}: `{key}` must be a string, not {value!r}")
    return value


def _parse_params(data: Any, where: str) -> tuple[Param, ...]:
    """`name = "action[: note]"` lines, in signature order; drop, decline and rename need the note."""
    if not isinstance(data, dict):
        raise RuleSpecError(f'{where}: must be a table of `parameter = "action: note"`')
    params: list[Param] = []
    for name, text in data.items():
        if not isinstance(text, str):
            raise RuleSpecError(f'{where}: `{name}` must be a string such as "keep" or "drop: why"')
        action, _, note = text.partition(":")
        action, note = action.strip(), note.strip()
        if action not in PARAM_ACTIONS:
            raise RuleSpecError(f"{where}: `{name}` must start with one of {', '.join(PARAM_ACTIONS)}, not {action!r}")
        if action != "keep" and not note:
            raise RuleSpecError(f"{where}: `{name}` = {action!r} needs its reason (or new name) after a colon")
        params.append(Param(name, action, note))
    return tuple(params)


def parse_rule(data: dict[str, Any], where: str, project: bool = False) -> RuleSpec:
    """Validate one rule's TOML table and build its spec (`project`: a user's own rule)."""
    _check_keys(data, _RULE_KEYS, where)
    for key in ("code", "name", "message", "severity", "safety"):
        if not isinstance(data.get(key), str):
            raise RuleSpecError(f"{where}: `{key}` is required and must be a string")
    if project and not _PROJECT_CODE.match(data["code"]):
        raise RuleSpecError(
            f"{where}: `code` of a project rule must look like NMX001 (NM, a letter, three digits), not {data['code']!r}"
        )
    if not project and not _CODE.match(data["code"]):
        raise RuleSpecError(f"{where}: `code` must look like NM123, not {data['code']!r}")
    if not isinstance(data.get("doc", {}), dict) or not isinstance(data.get("map", []), list):
        raise RuleSpecError(f"{where}: `doc` must be a table and `map` an array of tables")
    if not all(isinstance(m, dict) for m in data.get("map", [])):
        raise RuleSpecError(f"{where}: every `[[map]]` entry must be a table")
    if not _NAME.match(data["name"]):
        raise RuleSpecError(f"{where}: `name` must be snake_case, not {data['name']!r}")
    doc = data.get("doc", {})
    _check_keys(doc, _DOC_KEYS, f"{where} [doc]")
    maps = tuple(_parse_map(m, f"{where} [[map]] #{i + 1}") for i, m in enumerate(data.get("map", [])))
    return RuleSpec(
        code=data["code"],
        name=data["name"],
        message=data["message"],
        severity=_enum(Severity, data["severity"], where, "severity"),
        safety=_enum(Safety, data["safety"], where, "safety"),
        concept=_concept(data, where),
        since=data.get("since", "0.1.0"),
        detector=data.get("detector", "qualified"),
        retired=bool(data.get("retired", False)),
        source=data.get("source", ""),
        triggers=tuple(data.get("triggers", ())),
        compat=bool(data.get("compat", False)),
        doc=doc,
        maps=maps,
        families=_families(data, where),
        blocker=_flag(data, "blocker", where),
        tier=_tier(data, where),
    )


def _tier(data: dict[str, Any], where: str) -> str:
    """The table's `tier`, one of TIERS ("" when it names none)."""
    value = data.get("tier", "")
    if value and value not in TIERS:
        raise RuleSpecError(f"{where}: `tier` must be one of {', '.join(TIERS)}, not {value!r}")
    return str(value)


def _concept(data: dict[str, Any], where: str) -> str:
    """The rule's `concept`, one of CONCEPTS ("" when it names none: every shipped rule names one,
    which tests/test_catalogue.py checks; a project's own rule may leave it out)."""
    value = data.get("concept")
    if value is None:
        return ""
    if value not in CONCEPTS:
        raise RuleSpecError(f"{where}: `concept` must be one of {', '.join(CONCEPTS)}, not {value!r}")
    return str(value)


def _flag(data: dict[str, Any], key: str, where: str) -> bool:
    value = data.get(key, False)
    if not isinstance(value, bool):
        raise RuleSpecError(f"{where}: `{key}` must be true or false, not {value!r}")
    return value


def _families(data: dict[str, Any], where: str) -> tuple[str, ...]:
    """The rule's `from` list, or its band's default."""
    given = data.get("from")
    if given is None:
        code = data["code"]
        if _PROJECT_CODE.match(code) or code.startswith(_SHARED_BANDS):
            return FAMILIES  # a project's own rules run whatever `--from` says, unless they set `from`
        return ("cuda",) if code.startswith("NM8") else ("xla",)
    if not isinstance(given, list) or not given or any(f not in FAMILIES for f in given):
        raise RuleSpecError(f"{where}: `from` must be a list drawn from {', '.join(FAMILIES)}, not {given!r}")
    return tuple(given)


@functools.cache
def rule_codes(directory: Path | None = None) -> tuple[str, ...]:
    """The codes of the rules in `directory` (default: the shipped rules), from the file names
    alone (`load_rule_folder` checks that each file is named by its code), sorted."""
    return tuple(sorted(path.stem for path in (directory or rules_dir()).glob("NM*.toml")))


@functools.cache
def load_catalogue(directory: Path | None = None) -> tuple[RuleSpec, ...]:
    """Every rule in `directory` (default: the shipped rules), sorted by code."""
    return load_rule_folder(directory or rules_dir())


def load_rule_folder(folder: Path, project: bool = False) -> tuple[RuleSpec, ...]:
    """The rules in one folder's `NM*.toml` files; errors name the file (and for projects its path)."""
    if project and not folder.is_dir():
        raise RuleSpecError(f"{folder}: extend-rules folder not found")
    specs: list[RuleSpec] = []
    seen: dict[str, str] = {}
    paths = sorted(folder.glob("NM*.toml"))
    parsed = None if project else parsed_rules.load(folder, paths)  # the wheel's rules, parsed at build
    for path in paths:
        where = str(path) if project else path.name
        data = parsed[path.name] if parsed is not None else _read_rule_file(path, where)
        spec = parse_rule(data, where, project=project)
        if spec.code in seen:
            raise RuleSpecError(f"{where}: code {spec.code} is already used by {seen[spec.code]}")
        if path.stem != spec.code:
            raise RuleSpecError(f"{where}: file name must match `code` ({spec.code})")
        seen[spec.code] = path.name
        specs.append(spec)
    return tuple(specs)


def _read_rule_file(path: Path, where: str) -> dict[str, Any]:
    toml = toml_module()
    try:
        return toml.loads(read_text_regular(path, CONFIG_LIMIT))
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleSpecError(f"{where}: cannot read the rule file: {exc}") from None
    except (toml.TOMLDecodeError, RecursionError, ValueError) as exc:  # ValueError: a 5000-digit integer
        raise RuleSpecError(f"{where}: invalid TOML: {exc}") from None


@functools.cache
def catalogue_digest(directory: Path | None = None) -> str:
    """A hash of the rules data, for cache keys."""
    folder = directory or rules_dir()
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*.toml")):
        digest.update(path.relative_to(folder).as_posix().encode())
        try:
            digest.update(read_regular(path, CONFIG_LIMIT)[0])
        except OSError as exc:  # a FIFO or device named *.toml: loading the rules reports it
            digest.update(f"unreadable:{type(exc).__name__}".encode())
    return digest.hexdigest()[:16]


def by_code(specs: tuple[RuleSpec, ...]) -> dict[str, RuleSpec]:
    return {spec.code: spec for spec in specs}


def _names_band(code: str, selectors: tuple[str, ...]) -> bool:
    return any(len(p) >= len("NM8") and p != "ALL" and code.startswith(p) for p in selectors)


def select_rules(
    specs: tuple[RuleSpec, ...],
    select: tuple[str, ...] = ("NM",),
    ignore: tuple[str, ...] = (),
    extend_select: tuple[str, ...] = (),
    families: tuple[str, ...] | None = None,
) -> frozenset[str]:
    """The codes enabled by Ruff-style select / extend-select / ignore prefixes.

    As in Ruff, the most specific prefix decides: `--ignore NM2 --select NM201` keeps NM201.
    With `families` (`--from`), a rule of another family is enabled only by a selector that
    names its band or code (`NM8`, `NM801`), never by `NM` or `ALL`.
    """
    chosen = set()
    selectors = (*select, *extend_select)
    for spec in specs:
        if spec.retired:
            continue
        best_select = max((len(p) for p in selectors if p == "ALL" or spec.code.startswith(p)), default=-1)
        best_ignore = max((len(p) for p in ignore if p == "ALL" or spec.code.startswith(p)), default=-1)
        if families is not None and not set(spec.families) & set(families) and not _names_band(spec.code, selectors):
            continue
        if best_select >= 0 and best_select > best_ignore:
            chosen.add(spec.code)
    return frozenset(chosen)
