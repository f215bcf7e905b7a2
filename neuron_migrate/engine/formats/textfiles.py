"""Check files that are not Python modules: packaging files and shell scripts.

`file_kind` decides by file name; `check_text_file` runs the enabled rules whose detector reads
that kind of file and, where settings allow, applies their fixes (deleting whole lines).
`setup.py` is Python: the runner checks it as Python and adds `packaging_findings`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from neuron_migrate import compat
from neuron_migrate.analysis.source import SourceText
from neuron_migrate.catalogue import MapEntry, RuleSpec, load_catalogue
from neuron_migrate.engine.check import tool_finding
from neuron_migrate.engine.formats import packaging, shell
from neuron_migrate.engine.formats.kinds import file_kind, valid_toml
from neuron_migrate.engine.ruleset import enabled_codes
from neuron_migrate.model import FileResult, Finding, Fix, Safety, TextEdit
from neuron_migrate.registry import FILE_DETECTORS
from neuron_migrate.settings import Settings


@dataclass(frozen=True)
class Hit:
    """A rule matched in a text file: a span, the entry behind it and, when fixable, lines to delete."""

    start: int
    end: int
    old: str
    entry: MapEntry | None = None
    values: tuple[tuple[str, str], ...] = ()
    delete: tuple[int, int] | None = None


# -- packaging checks ---------------------------------------------------------------------------
def package_name(rule: RuleSpec, pkg: packaging.PackageFile, version: str) -> Iterator[Hit]:
    """Requirements on a package the rule lists by name (`old = "torch-xla"`)."""
    for req in pkg.requirements:
        entry = next((e for e in rule.maps if _names_package(e, req.name)), None)
        if entry is not None:
            yield Hit(req.start, req.end, req.text, entry, delete=req.lines)


def _names_package(entry: MapEntry, name: str) -> bool:
    """`old = "torch-xla"` names one package; with `prefix = true`, `old = "nvidia-"` names a family."""
    wanted = packaging.normalise(entry.old.rstrip("-"))
    return name == wanted or (entry.prefix and name.startswith(wanted + "-"))


def neuronx_xla_pin(rule: RuleSpec, pkg: packaging.PackageFile, version: str) -> Iterator[Hit]:
    """`torch-neuronx` pinned below the first native family: the XLA-based product."""
    oldest = compat.available_versions()[0]
    for req in _named(pkg, "torch-neuronx"):
        if packaging.below(req.clauses, oldest):
            yield Hit(req.start, req.end, req.text, values=(("target", version), ("oldest", oldest)))


def neuronx_family(rule: RuleSpec, pkg: packaging.PackageFile, version: str) -> Iterator[Hit]:
    """`torch-neuronx` of one native family next to a `torch` that excludes that family's torch."""
    for req in _named(pkg, "torch-neuronx"):
        family = packaging.family_of(req.clauses)
        if family not in compat.available_versions():
            continue
        wanted = ".".join(compat.load_release(family).torch.split(".")[:2])
        for torch in _named(pkg, "torch"):
            if not _allows_family(torch.clauses, wanted):
                yield Hit(req.start, req.end, req.text, values=(("torch", wanted), ("other", torch.text)))
                break


def _allows_family(clauses: tuple[tuple[str, str], ...], family: str) -> bool:
    low, high = packaging.bounds(clauses)
    major, minor = (int(p) for p in family.split("."))
    first, past = packaging.pad((major, minor)), packaging.pad((major, minor + 1))
    return (low is None or low < past) and (high is None or high > first)


def neuronx_index(rule: RuleSpec, pkg: packaging.PackageFile, version: str) -> Iterator[Hit]:
    """`torch-neuronx` in a file that can name a pip index but names no Neuron index."""
    if pkg.can_hold_index and not pkg.index_hint:
        for req in _named(pkg, "torch-neuronx"):
            if req.url is None:
                yield Hit(req.start, req.end, req.text)


def _named(pkg: packaging.PackageFile, name: str) -> list[packaging.Requirement]:
    return [r for r in pkg.requirements if r.name == name]


# -- shell checks ---------------------------------------------------------------------------------
def shell_env(rule: RuleSpec, text: str, version: str) -> Iterator[Hit]:
    """Environment variables the rule lists, set by a command or exported."""
    for command in shell.commands(text):
        for setting in shell.settings(command):
            entry = _env_entry(rule, setting.name)
            if entry is not None:
                yield Hit(setting.start, setting.end, setting.name, entry)


def _env_entry(rule: RuleSpec, name: str) -> MapEntry | None:
    exact = next((e for e in rule.maps if e.old == name), None)
    prefixes = [e for e in rule.maps if e.prefix and name.startswith(e.old)]
    return exact or max(prefixes, key=lambda e: len(e.old), default=None)


def shell_launch(rule: RuleSpec, text: str, version: str) -> Iterator[Hit]:
    """Launchers the rule lists: a program (`neuron_parallel_compile`) or `python -m <module>`."""
    for command in shell.commands(text):
        found = shell.program(command)
        if found is None:
            continue
        head, module = found
        word = module if module is not None else head
        name = word.value if module is not None else head.value.rsplit("/", 1)[-1]
        entry = next((e for e in rule.maps if e.old == name or (e.prefix and name.startswith(e.old + "."))), None)
        if entry is not None:
            old = f"python -m {name}" if module is not None else name
            yield Hit(word.start, word.end, old, entry)


PackageCheck = Callable[[RuleSpec, packaging.PackageFile, str], Iterator[Hit]]
ShellCheck = Callable[[RuleSpec, str, str], Iterator[Hit]]
PACKAGE_CHECKS: Mapping[str, PackageCheck] = MappingProxyType(
    {
        "package_name": package_name,
        "neuronx_xla_pin": neuronx_xla_pin,
        "neuronx_family": neuronx_family,
        "neuronx_index": neuronx_index,
    }
)
SHELL_CHECKS: Mapping[str, ShellCheck] = MappingProxyType({"shell_env": shell_env, "shell_launch": shell_launch})
_READERS = {
    "requirements": packaging.read_requirements_txt,
    "pyproject": packaging.read_pyproject,
    "setup_cfg": packaging.read_setup_cfg,
    "setup_py": packaging.read_setup_py,
}
assert set(PACKAGE_CHECKS) | set(SHELL_CHECKS) == FILE_DETECTORS


# -- running --------------------------------------------------------------------------------------
def rules_for(kind: str, settings: Settings) -> list[RuleSpec]:
    """The enabled rules that read files of `kind`."""
    checks = SHELL_CHECKS if kind == "shell" else PACKAGE_CHECKS
    codes = enabled_codes(settings)
    return [s for s in load_catalogue() if s.code in codes and s.detector in checks]


def might_match_text(text: str, rules: list[RuleSpec]) -> bool:
    """The prefilter for text files: a rule's trigger appears in the text, ignoring case."""
    lowered = text.lower()
    return any(trigger.lower() in lowered for rule in rules for trigger in rule.triggers)


def _hits(text: str, kind: str, rules: list[RuleSpec], version: str) -> list[tuple[RuleSpec, Hit]]:
    if kind == "shell":
        return [(rule, hit) for rule in rules for hit in SHELL_CHECKS[rule.detector](rule, text, version)]
    pkg = _READERS[kind](text)
    return [(rule, hit) for rule in rules for hit in PACKAGE_CHECKS[rule.detector](rule, pkg, version)]


def _finding(path: str, src: SourceText, rule: RuleSpec, hit: Hit) -> Finding:
    entry = hit.entry
    template = (entry.message if entry and entry.message else None) or rule.message
    try:
        message = template.format(old=hit.old, **dict(hit.values))
    except (KeyError, IndexError):
        message = template
    safety = (entry.safety if entry and entry.safety else None) or rule.safety
    fix = None
    if hit.delete is not None and safety is not Safety.MANUAL:
        edit = TextEdit(src.position(hit.delete[0]), src.position(hit.delete[1]), "")
        fix = Fix(safety, f"Remove `{hit.old}`", (edit,))
    return Finding(
        path=path,
        code=rule.code,
        name=rule.name,
        message=message,
        severity=(entry.severity if entry and entry.severity else None) or rule.severity,
        start=src.position(hit.start),
        end=src.position(hit.end),
        fix=fix,
        category=rule.category,
        url=rule.url,
        snippet=src.text[hit.start : hit.end].strip()[:200],
    )


def text_findings(text: str, path: str, settings: Settings, kind: str) -> list[tuple[Finding, tuple[int, int] | None]]:
    """Findings of one text file, sorted, each with the span its fix deletes (or None)."""
    rules = rules_for(kind, settings)
    if not rules or not might_match_text(text, rules):
        return []
    try:
        hits = _hits(text, kind, rules, settings.target_version)
    except ValueError as exc:
        return [(tool_finding(path, "NM901", f"Fix the syntax error before migrating: {exc}".splitlines()[0]), None)]
    src = SourceText(text)
    found = [(_finding(path, src, rule, hit), hit.delete) for rule, hit in hits]
    return sorted(found, key=lambda item: item[0].sort_key)


def packaging_findings(text: str, path: str, settings: Settings) -> tuple[Finding, ...]:
    """The packaging findings of a `setup.py` (reported only: the Python checks own its fixes)."""
    return tuple(replace(f, fix=None) for f, _ in text_findings(text, path, settings, "setup_py"))


# Text files whose lines can end in a noqa comment (`noqa: CODE`) that `--add-noqa` writes. A
# setup.cfg has no inline comments (configparser would read one as part of the value), so
# there only per-file-ignores and a `# neuron-migrate: noqa` line work.
NOQA_KINDS = frozenset({"requirements", "pyproject", "shell"})


def check_text_file(text: str, path: str, settings: Settings) -> FileResult:
    """Check (and with `settings.fix`, fix) a packaging file or shell script, then apply
    `# noqa` comments and per-file-ignores as for Python."""
    from neuron_migrate.engine import suppress

    kind = file_kind(path) or "shell"
    if settings.add_noqa and kind not in NOQA_KINDS:
        settings = replace(settings, add_noqa=False)  # its findings are reported as not annotated
    result = _check_text(text, path, settings, kind, suppress.reporter(text, path, settings, line_comments=True))
    return suppress.finish(result, settings, line_comments=True)


def _check_text(text: str, path: str, settings: Settings, kind: str, reported: Callable[[Finding], bool]) -> FileResult:
    found = text_findings(text, path, settings, kind)
    chosen = [
        (f, span)
        for f, span in found
        if span is not None and f.fix is not None and settings.allows(f.fix.applicability.value) and reported(f)
    ]
    if not chosen:
        return FileResult(path, tuple(f for f, _ in found), source=text)
    fixed_text, applied = _delete_spans(text, chosen)
    if kind == "pyproject" and not valid_toml(fixed_text):
        problem = tool_finding(path, "NM906", "Fix this file by hand; removing the lines left invalid TOML")
        return FileResult(path, (*(f for f, _ in found), problem), source=text)
    remaining = tuple(f for f, _ in text_findings(fixed_text, path, settings, kind))
    return FileResult(path, remaining, fixed=tuple(applied), source=text, fixed_source=fixed_text)


def _delete_spans(text: str, chosen: list[tuple[Finding, tuple[int, int]]]) -> tuple[str, list[Finding]]:
    """Delete the non-overlapping spans; the findings whose spans went are the ones fixed."""
    applied: list[Finding] = []
    taken: list[tuple[int, int]] = []
    for finding, span in sorted(chosen, key=lambda item: item[1]):
        if any(span[0] < end and start < span[1] for start, end in taken):
            continue
        taken.append(span)
        applied.append(finding)
    for start, end in sorted(taken, reverse=True):
        text = text[:start] + text[end:]
    return text, applied
