"""The values of `[tool.neuron-migrate]`: one validator per kind of key (rule selectors, globs,
families, project rule sources, the report's effort table), each error naming the file and key.
Shared by config files, inline `--config KEY = VALUE` pairs and the command line's flags."""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from neuron_migrate.effort import DEFAULT_EFFORT, TIER_EFFORT, TIERED_CONCEPT
from neuron_migrate.settings import FAMILIES, RuleSources

_SELECTOR = re.compile(r"^(ALL|NM\d{0,3}|NM[A-Z]\d{0,3})$")  # NMX001: a project's own rules
CODE_LISTS = ("select", "ignore", "extend-select")
GLOB_LISTS = ("exclude", "extend-exclude")
KEYS = (
    *CODE_LISTS, *GLOB_LISTS, "per-file-ignores", "respect-gitignore", "target-version", "unsafe-fixes", "output-format",
    "extend-rules", "plugins", "from", "target", "report-effort",
)  # fmt: skip


def _close_matches(word: str, options: Iterable[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    import difflib  # only for error messages: start-up skips it

    return difflib.get_close_matches(word, list(options), n=n, cutoff=cutoff)


class ConfigError(ValueError):
    """The configuration is wrong; the message names the file and the key."""


def effort(value: object, where: str) -> tuple[tuple[str, int], ...]:
    """`[report-effort]`: concept (or effort tier) = minutes per manual finding (see docs/report.md)."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: `report-effort` must be a table of concept = minutes, not {type_name(value)}")
    keys = (*DEFAULT_EFFORT, *TIER_EFFORT)
    entries = []
    for concept, minutes in value.items():
        if concept == TIERED_CONCEPT:
            tiers = ", ".join(f"`{t}`" for t in TIER_EFFORT)
            raise ConfigError(
                f"{where}: `report-effort.{concept}`: its findings are costed by effort tier; set {tiers}"
            )
        if concept not in keys:
            close = _close_matches(concept, keys, n=1)
            hint = f" (did you mean `{close[0]}`?)" if close else f"; concepts and tiers: {', '.join(keys)}"
            raise ConfigError(f"{where}: `report-effort` has unknown concept `{concept}`{hint}")
        if isinstance(minutes, bool) or not isinstance(minutes, int) or minutes < 0:
            raise ConfigError(f"{where}: `report-effort.{concept}` must be a whole number of minutes, not {minutes!r}")
        entries.append((concept, minutes))
    return tuple(entries)


def parse_families(value: object, where: str) -> tuple[str, ...]:
    """`from`: a non-empty list drawn from `xla` and `cuda` (the CLI splits `xla,cuda`)."""
    given = strings(value, where, "from")
    if not given or any(f not in FAMILIES for f in given):
        raise ConfigError(f"{where}: `from` must list one or more of {', '.join(FAMILIES)}, not {list(given)!r}")
    return tuple(dict.fromkeys(given))


def rule_sources(data: Mapping[str, Any], where: str, root: Path) -> RuleSources:
    """`extend-rules` folders (relative to the config file) and `plugins` modules, loaded and checked."""
    folders = tuple(
        str((root / folder).resolve()) for folder in strings(data.get("extend-rules", []), where, "extend-rules")
    )
    project = root.resolve()
    for folder in folders:
        inside = Path(folder) == project or project in Path(folder).parents
        if not inside:  # a config must not pull rule files (and their example code) from elsewhere
            raise ConfigError(
                f"{where}: `extend-rules` folder {folder} is outside the project ({project}); "
                "keep the project's rules in a folder under its config file"
            )
    plugins = strings(data.get("plugins", []), where, "plugins")
    for name in plugins:
        if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", name):
            raise ConfigError(f"{where}: `plugins` has {name!r}, which is not an importable module name")
    sources = RuleSources(folders, plugins, str(root.resolve()) if plugins else "")
    if not (folders or plugins):
        return sources
    from neuron_migrate.trust import refusal

    refused = refusal(plugins)
    if refused is not None:
        raise ConfigError(f"{where}: {refused}")
    from neuron_migrate.catalogue import RuleSpecError
    from neuron_migrate.registry import registry

    try:
        registry(sources)
    except RuleSpecError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return sources


def did_you_mean(key: str) -> str:
    close = _close_matches(key.replace("_", "-"), KEYS, n=1)
    return f" (did you mean `{close[0]}`?)" if close else f"; known keys: {', '.join(KEYS)}"


def type_name(value: object) -> str:
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "a table",
    }.get(type(value), type(value).__name__)


def strings(value: object, where: str, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings, not {type_name(value)}")
    return tuple(value)


def codes(value: object, where: str, key: str) -> tuple[str, ...]:
    return check_selectors(strings(value, where, key), f"{where}: `{key}`")


def check_selectors(values: Iterable[str], where: str) -> tuple[str, ...]:
    """Rule codes or prefixes (`NM2`, `NM201`, `ALL`); the one check that config keys and the
    `--select` / `--ignore` / `--extend-select` flags share.

    A selector must look like a code and match at least one rule, so a typo (`NM2O1`) or another
    tool's code (`E501`) stops the run instead of silently selecting nothing. Codes are upper
    case, as in Ruff: `nm201` is refused with a hint, never taken for NM201.
    """
    codes = tuple(code.strip() for code in values)
    if not codes:
        return codes
    for code in codes:
        if code != code.upper() and _SELECTOR.match(code.upper()):
            raise ConfigError(f"{where} has {code!r}; rule codes are upper case (did you mean {code.upper()}?)")
    from neuron_migrate.catalogue import rule_codes

    known = rule_codes()
    for code in codes:
        if _SELECTOR.match(code) and (code in ("ALL", "NM") or any(k.startswith(code) for k in known)):
            continue
        if _SELECTOR.match(code) and not code[2:3].isdigit():
            continue  # a project's own rules (NMX001), loaded from `extend-rules` / `plugins` later
        close = _close_matches(code.replace("O", "0"), known, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]}?)" if close and code.startswith("NM") else ""
        what = (
            "which is not a rule code or prefix like NM2 or NM201"
            if not _SELECTOR.match(code)
            else "which matches no rule"
        )
        raise ConfigError(f"{where} has {code!r}, {what}{hint}")
    return codes


def choice(value: object, choices: Iterable[str], where: str, key: str) -> str:
    allowed = tuple(choices)
    if not isinstance(value, str) or value not in allowed:
        raise ConfigError(f"{where}: `{key}` must be one of {', '.join(allowed)}, not {value!r}")
    return value


def per_file_ignores(value: object, where: str, root: Path) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: `per-file-ignores` must be a table of glob = [codes], not {type_name(value)}")
    entries = []
    for glob, listed in value.items():
        anchored = anchor_glob(glob, root, f"{where}: `per-file-ignores`")
        entries.append((anchored, codes(listed, where, f"per-file-ignores.{glob}")))
    return tuple(entries)


def anchor_glob(glob: str, root: Path, where: str) -> str:
    """A settings glob (`exclude`, `per-file-ignores`) made absolute against the config's folder.

    A glob without `/` matches a file or folder name anywhere (as in Ruff); a leading `!` negates
    it (per-file-ignores). The glob is matched as git's wildmatch (`neuron_migrate.patterns`);
    one that expands to too many globs is a ConfigError (`where` says which setting).
    """
    from neuron_migrate.wildmatch import GlobError, check_glob

    try:
        check_glob(glob)
    except GlobError as exc:
        raise ConfigError(f"{where} has the glob {glob[:60] + '...' if len(glob) > 60 else glob!r}; {exc}") from None
    negate = glob.startswith("!")
    body = glob[1:] if negate else glob
    if "/" in body.rstrip("/") and not os.path.isabs(body):
        body = posixpath.normpath(Path(os.path.abspath(root)).as_posix() + "/" + body) + (
            "/" if body.endswith("/") else ""
        )
    return ("!" if negate else "") + body
