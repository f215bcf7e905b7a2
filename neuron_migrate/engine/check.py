"""Check one file's text: prefilter, parse, match every enabled rule in one pass, plan fixes."""

from __future__ import annotations

import ast
import functools
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from neuron_migrate import compat
from neuron_migrate.analysis.analyze import (
    IMPORT_RULE,
    RESOLVED_ONLY,
    Analysis,
    Match,
    Plan,
    RuleIndex,
    walk,
)
from neuron_migrate.catalogue import RuleSpec, load_catalogue
from neuron_migrate.checks.messages import MESSAGE_VALUES
from neuron_migrate.checks.toolkit import FixContext
from neuron_migrate.engine.arguments import declined, declined_message, unwritten_helper
from neuron_migrate.engine.prefilter import might_match, minimal_triggers, name_patterns  # noqa: F401 (might_match: re-exported)
from neuron_migrate.model import Finding, Fix, Position, Safety, Severity, TextEdit
from neuron_migrate.registry import (
    CATCH_ALL,
    FILE_DETECTORS,
    RUNTIME_DETECTORS,
    registry,
)
from neuron_migrate.registry import enabled_codes as registry_codes
from neuron_migrate.settings import RuleSources, Settings


@dataclass(frozen=True)
class Planned:
    """A finding with the plan behind its fix (None when it has no fix)."""

    finding: Finding
    plan: Plan | None
    applicability: Safety
    match: Match | None = field(default=None, compare=False)  # what the finding was made from


@dataclass(frozen=True)
class Ruleset:
    """The enabled rules, indexed, plus the prefilter tokens that can trigger them."""

    index: RuleIndex
    triggers: tuple[str, ...]  # substrings: the text must contain one
    codes: frozenset[str]
    target_version: str = "2.14"  # selects rules/compat/<version>/ for `compat = true` rules
    target: str = "neuron"  # `--target`: what the fixes write
    names: tuple[tuple[str, re.Pattern[str]], ...] = ()  # or one of these as a whole identifier
    fixes: Mapping[str, Callable[..., Plan | None]] = field(
        default_factory=lambda: MappingProxyType({}), compare=False
    )  # `fix = "..."` names
    sources: RuleSources = RuleSources()
    gates: tuple[Gate, ...] = ()  # what each indexed rule needs in a text to fire, as the prefilter reads it
    gate_words: tuple[str, ...] = ()  # every substring and identifier the gates name, once


@dataclass(frozen=True)
class Gate:
    """One rule's share of the prefilter: it can fire only on a text that holds one of its
    `substrings`, or one of its `identifiers` as a whole identifier."""

    code: str
    substrings: frozenset[str]
    identifiers: frozenset[str]


@functools.lru_cache(maxsize=256)
def build_ruleset(
    codes: frozenset[str], target_version: str = "2.14", sources: RuleSources = RuleSources(), target: str = "neuron"
) -> Ruleset:
    """Index the enabled rules for the walk; cached per set of codes, target version, sources and target."""
    rules = registry(sources)
    index = RuleIndex()
    triggers: set[str] = set()
    names: set[str] = set()
    import_rules: list[RuleSpec] = []
    for spec in rules.specs:
        if spec.code not in codes or not _indexed(spec):
            continue  # rules for packaging files and scripts run in engine/textfiles.py
        triggers |= _own_triggers(spec)
        if spec.detector == CATCH_ALL:
            index.catch_all = spec
            continue
        if spec.detector == "qualified":
            for entry in spec.maps:
                table = index.prefix if entry.prefix else index.exact
                table.setdefault(entry.old, []).append((spec, entry))
                names.add(entry.old)
            continue
        node_types, detector = rules.detectors[spec.detector]
        for node_type in node_types:
            index.detectors.setdefault(node_type, []).append((spec, detector))
            if not getattr(detector, RESOLVED_ONLY, False):
                index.unresolved.setdefault(node_type, []).append((spec, detector))
        if getattr(detector, IMPORT_RULE, False):
            import_rules.append(spec)
    index.import_rules = tuple(import_rules)
    substrings = minimal_triggers(triggers)
    patterns = name_patterns(names, substrings)
    gates = tuple(_gate(spec, triggers) for spec in rules.specs if spec.code in codes and _indexed(spec))
    words = tuple(sorted({w for g in gates for w in (*g.substrings, *g.identifiers)}))
    return Ruleset(index, substrings, codes, target_version, target, patterns, rules.fixes, sources, gates, words)


def _indexed(spec: RuleSpec) -> bool:
    return spec.detector not in FILE_DETECTORS and spec.detector not in RUNTIME_DETECTORS


def _own_triggers(spec: RuleSpec) -> set[str]:
    """The substrings a rule names itself: its `triggers`, `torch_xla` for the catch-all, and the
    map entries of a Python detector that names none (a qualified rule's names go to patterns)."""
    own = set(spec.triggers)
    if spec.detector == CATCH_ALL:
        own.add("torch_xla")
    elif spec.detector != "qualified" and not spec.triggers:
        own.update(entry.old for entry in spec.maps if entry.old)
    return own


def _gate(spec: RuleSpec, triggers: set[str]) -> Gate:
    """A rule's own prefilter: its share of the whole one that `build_ruleset` derives."""
    substrings = _own_triggers(spec)
    identifiers: set[str] = set()
    if spec.detector == "qualified":
        for entry in spec.maps:
            parts = entry.old.split(".")
            covering = {t for t in triggers if any(t in part for part in parts)}
            if covering:
                substrings |= covering
            else:
                identifiers.add(parts[-1])
    return Gate(spec.code, frozenset(substrings), frozenset(identifiers))


def narrowed(ruleset: Ruleset, text: str) -> Ruleset:
    """The ruleset of the rules that can fire on `text` at all (by their share of the prefilter).

    A rule whose triggers are absent cannot match, so leaving it out changes no finding; the
    walk then runs fewer detectors per node. An identifier counts as present when the text
    contains it at all (a cheaper test that keeps a few rules more, never fewer). Rule sets
    are cached by their codes.
    """
    if not ruleset.gates:
        return ruleset
    present = {word for word in ruleset.gate_words if word in text}
    codes = frozenset(
        g.code for g in ruleset.gates if not present.isdisjoint(g.substrings) or not present.isdisjoint(g.identifiers)
    )
    if len(codes) == len(ruleset.gates):
        return ruleset
    return build_ruleset(codes, ruleset.target_version, ruleset.sources, ruleset.target)


def analyze(text: str, tree: ast.Module, ruleset: Ruleset) -> tuple[Analysis, list[Match]]:
    ruleset = narrowed(ruleset, text)
    analysis = Analysis(text, tree, ruleset.target_version, ruleset.target, ruleset.index.known)
    analysis.fixes = ruleset.fixes
    return analysis, _apply_compat(walk(analysis, ruleset.index), ruleset.target_version)


def _apply_compat(matches: list[Match], target_version: str) -> list[Match]:
    """Matches of `compat = true` rules take their status from the target's compat data."""
    if not any(m.rule.compat for m in matches):
        return matches
    release = compat.load_release(target_version)
    resolved = (compat.resolve_match(m, release) if m.rule.compat else m for m in matches)
    return [m for m in resolved if m is not None]


def plan_fix(ctx: FixContext, match: Match) -> Plan | None:
    """The fix a match's map entry asks for, or None."""
    entry = match.entry
    if entry is None:
        return None
    if entry.fix:
        return ctx.analysis.fixes[entry.fix](ctx, match)
    call = match.node if isinstance(match.node, ast.Call) else None
    template = (
        entry.accelerator_call if ctx.analysis.target == "accelerator" and entry.accelerator_call else entry.new_call
    )
    if template and call is not None:
        rendered = ctx.render(template, match)
        return ctx.replace(call, rendered[0], rendered[1]) if rendered else None
    if entry.new:
        rendered = ctx.render(entry.new, match)
        if rendered is None:
            return None
        target = call.func if call is not None else match.node
        return ctx.replace(target, rendered[0], rendered[1])
    return None


_DEFAULT_NAMES = {"torch": "torch", "dist": "dist", "os": "os", "args": "...", "0": "..."}


def _preview(match: Match, target: str = "neuron") -> str:
    """The replacement a map entry describes, with default names, for messages without a fix."""
    entry = match.entry
    template = (entry.new_call or entry.new or "") if entry is not None else ""
    if entry is not None and target == "accelerator" and entry.accelerator_call:
        template = entry.accelerator_call
    try:
        return template.format(**_DEFAULT_NAMES)
    except (KeyError, IndexError):
        return template


def _message(match: Match, new: str, path: str, target: str = "neuron") -> str:
    entry = match.entry
    accel = entry.accelerator_message if entry is not None and target == "accelerator" else None
    template = accel or (entry.message if entry and entry.message else None) or match.rule.message
    file = path.replace("\\", "/").rsplit("/", 1)[-1]
    values = {"old": match.written, "new": new or _preview(match, target), "file": file, **dict(match.extra)}
    values.update((key, value(match)) for key, value in MESSAGE_VALUES.items() if "{" + key + "}" in template)
    try:
        return template.format(**values)
    except (KeyError, IndexError):
        return template


# A blocker's findings say what they cost: no TorchNeuron counterpart a tool can write, so the
# torch_xla import stays after `--fix --unsafe-fixes` and the migrated script cannot start.
BLOCKS_THE_RUN = "; until then it keeps the torch_xla import, which blocks the run"


def findings_for(path: str, analysis: Analysis, matches: list[Match]) -> list[Planned]:
    """Turn matches into findings with planned fixes, sorted by position."""
    ctx = FixContext(analysis)
    placement = import_placement(analysis)
    planned: list[Planned] = []
    seen: set[tuple[str, int, int]] = set()
    for match in matches:
        start, end = analysis.src.node_span(match.node)
        key = (match.rule.code, start, end)
        if key in seen:
            continue
        seen.add(key)
        stopped = declined(match.entry, match.node)
        plan = None if stopped is not None or _ambiguous(analysis, match) else plan_fix(ctx, match)
        safety = _safety(match, plan, analysis.target)
        fix = (
            _to_fix(analysis, plan, safety, placement, match)
            if plan is not None and safety is not Safety.MANUAL
            else None
        )
        new = plan.edits[0][2].strip() if fix is not None and plan is not None else ""
        severity = match.entry.severity if match.entry and match.entry.severity else match.rule.severity
        blocker = match.rule.blocker if match.entry is None or match.entry.blocker is None else match.entry.blocker
        message = _message(match, new, path, analysis.target)
        if stopped is not None and fix is None:
            message = declined_message(match.written, stopped)
        elif fix is None:
            message = unwritten_helper(message)
        if blocker:
            message += BLOCKS_THE_RUN
        finding = Finding(
            path=path,
            code=match.rule.code,
            name=match.rule.name,
            message=message,
            severity=severity,
            start=analysis.src.position(start),
            end=analysis.src.position(end),
            fix=fix,
            category=match.rule.category,
            url=match.rule.url,
            snippet=analysis.src.text[start:end].strip()[:200],
            blocker=blocker,
        )
        planned.append(Planned(finding, plan if fix is not None else None, safety, match))
    planned.sort(key=lambda p: p.finding.sort_key)
    return planned


def _ambiguous(analysis: Analysis, match: Match) -> bool:
    """A torch_xla name that may also be something else here (`AdamW` imported from torch_xla in
    one branch and from torch.optim in another): rewriting it would change the other branches."""
    if not match.qualified.startswith("torch_xla"):
        return False
    node = match.node.func if isinstance(match.node, ast.Call) else match.node
    if not isinstance(node, (ast.Name, ast.Attribute)):
        return False
    names = analysis.qualified(node, match.scope)
    return any(not (n == "torch_xla" or n.startswith("torch_xla.")) for n in names)


IMPORT_GOES_WITH_USES = "Remove the import; `--fix` removes it once the fixes of its uses leave it unused"


def _safety(match: Match, plan: Plan | None, target: str = "neuron") -> Safety:
    """A fix function's own verdict wins; then the map entry's; then the rule's."""
    if plan is None:
        return Safety.MANUAL
    entry = match.entry
    accel = entry.accelerator_safety if entry is not None and target == "accelerator" else None
    entry_safety = entry.safety if entry is not None else None
    return plan.safety or accel or entry_safety or match.rule.safety


def _to_fix(analysis: Analysis, plan: Plan, safety: Safety, placement: ImportPlacement, match: Match) -> Fix:
    src = analysis.src
    edits = [TextEdit(src.position(s), src.position(e), text) for s, e, text in plan.edits]
    first = min((s for s, _, _ in plan.edits), default=None)
    for start, end, text in import_edits(analysis, plan.imports, placement, before=first):
        edits.append(TextEdit(src.position(start), src.position(end), text))
    edits.sort(key=lambda e: (e.start, e.end))
    description = plan.description or _describe(plan, match)
    return Fix(safety, description, tuple(edits))


def _describe(plan: Plan, match: Match) -> str:
    """A one-line summary of what the fix does, for JSON and SARIF consumers."""
    content = plan.edits[0][2].strip()
    if not content:
        return f"Remove `{match.written}`"
    if "\n" in content or len(content) > 80:
        return f"Rewrite `{match.written}`"
    return f"Replace with `{content}`"


def import_anchor(analysis: Analysis, before: int | None = None) -> int:
    """Where new imports go: after the module's last top-level import before other code, and
    before the statement holding offset `before` (the first code that needs them)."""
    body = analysis.tree.body
    last = None
    for index, stmt in enumerate(body):
        if before is not None and analysis.src.line_start((stmt.end_lineno or stmt.lineno) + 1) > before:
            break
        value = stmt.value if isinstance(stmt, ast.Expr) else None
        is_docstring = index == 0 and isinstance(value, ast.Constant) and isinstance(value.value, str)
        guarded_import = isinstance(stmt, ast.Try) and all(
            isinstance(s, (ast.Import, ast.ImportFrom)) for s in stmt.body
        )
        if isinstance(stmt, (ast.Import, ast.ImportFrom)) or is_docstring or guarded_import:
            last = stmt
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            break
    if last is None:
        return _after_header(analysis)
    return analysis.src.line_start((last.end_lineno or last.lineno) + 1)


@dataclass(frozen=True)
class ImportPlacement:
    """Where a file's new imports go: after their group's last import, else after all imports."""

    anchor: int  # after the module's top-level imports
    follows_imports: bool
    groups: tuple[tuple[str, int], ...] = ()  # ("stdlib" or a top-level package, offset after its last import)


def import_placement(analysis: Analysis, before: int | None = None) -> ImportPlacement:
    """Computed once per analysis: the import block's end, and where each group of it ends
    (all of it before offset `before`, when given)."""
    anchor = import_anchor(analysis, before)
    groups: dict[str, int] = {}
    for stmt in analysis.tree.body:
        if analysis.src.line_start(stmt.lineno) >= anchor:
            break
        if isinstance(stmt, ast.Import):
            roots = {alias.name.split(".")[0] for alias in stmt.names}
        elif isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
            roots = {stmt.module.split(".")[0]}
        else:
            continue
        end = analysis.src.line_start((stmt.end_lineno or stmt.lineno) + 1)
        for root in roots:
            groups["stdlib" if root in sys.stdlib_module_names else root] = end
    return ImportPlacement(anchor, follows_imports(analysis), tuple(sorted(groups.items())))


def import_edits(
    analysis: Analysis,
    keys: tuple[str, ...],
    placement: ImportPlacement,
    mark_helpers: bool = False,
    before: int | None = None,
) -> list[tuple[int, int, str]]:
    """The insertions that add the imports (and helpers) `keys` ask for.

    `import os` joins the standard-library imports and `import torch...` the torch ones when
    the file has such a group; the rest (and helpers) go after all the imports. All of them
    come before offset `before`, the first edit that uses them, even when imports follow it.
    """
    if not keys:
        return []
    if before is not None and before < placement.anchor:
        placement = import_placement(analysis, before)  # code before the last import uses them
    from neuron_migrate.analysis.analyze import IMPORTS

    newline = analysis.src.newline
    groups = dict(placement.groups)
    by_offset: dict[int, list[str]] = {}
    rest: list[str] = []
    for key in keys:
        module = IMPORTS[key][0] if key in IMPORTS else ""
        root = module.split(".")[0]
        offset = groups.get("stdlib" if root in sys.stdlib_module_names else root) if module else None
        if offset is None or offset == placement.anchor:
            rest.append(key)
        else:
            by_offset.setdefault(offset, []).append(key)
    edits = [
        (at, at, "".join(IMPORTS[k][1] + newline for k in IMPORT_ORDER if k in found))
        for at, found in sorted(by_offset.items())
    ]
    if rest:
        text = import_text(
            tuple(rest),
            newline,
            analysis.text,
            placement.anchor,
            placement.follows_imports,
            analysis.indent_unit(),
            mark_helpers,
        )
        edits.append((placement.anchor, placement.anchor, text))
    return edits


def follows_imports(analysis: Analysis) -> bool:
    """Whether new imports join an existing import block (else they open one)."""
    return any(isinstance(s, (ast.Import, ast.ImportFrom)) for s in analysis.tree.body)


def _after_header(analysis: Analysis) -> int:
    """After a shebang, coding cookie and leading comments."""
    offset = 0
    line = 1
    while True:
        text = analysis.src.line_text(line)
        if text.startswith("#") and analysis.src.line_start(line + 1) > offset:
            offset = analysis.src.line_start(line + 1)
            line += 1
            continue
        return offset


IMPORT_ORDER = ("datetime", "os", "torch", "dist", "fsdp", "dist_optim", "checkpoint_wrapper")


def import_text(
    keys: tuple[str, ...],
    newline: str,
    text: str,
    anchor: int,
    after_imports: bool = True,
    unit: str = "    ",
    mark_helpers: bool = False,
) -> str:
    """The import lines (and helper definitions, indented by `unit`) that `keys` ask for, ready to insert.

    With `mark_helpers`, a helper ends with `HELPER_END`, where `apply` makes two blank lines once
    every other edit is in (a statement deleted after the imports changes the gap).
    """
    from neuron_migrate.analysis.analyze import IMPORTS

    wanted = set(keys)
    out = "".join(IMPORTS[k][1] + newline for k in IMPORT_ORDER if k in wanted)
    for source in helper_sources(keys):
        out += newline + newline + _reindent(source, unit).rstrip("\n").replace("\n", newline) + newline
    if anchor == len(text) and text and not text.endswith(("\n", "\r")):
        return newline + out
    if not after_imports and anchor < len(text) and not text.startswith(("\n", "\r"), anchor):
        gap = 2 if text.startswith(("def ", "class ", "async def ", "@"), anchor) else 1
        out += newline * gap  # keep the inserted block apart from the code after it
    elif any(k.startswith("helper:") for k in wanted):
        out += HELPER_END if mark_helpers else newline * max(0, 2 - _blank_lines_at(text, anchor))
    return out


def helper_sources(keys: tuple[str, ...]) -> list[str]:
    """The source of each helper the `helper:<name>:<module name>` keys among `keys` ask for, in
    the order `checks.helpers.HELPERS` lists the helpers (then by key)."""
    from neuron_migrate.checks.helpers import HELPERS, helper_text

    order = {name: index for index, name in enumerate(HELPERS)}
    helpers = [k for k in set(keys) if k.startswith("helper:")]
    helpers.sort(key=lambda k: (order.get(k.split(":", 2)[1], len(order)), k))
    return [source for source in map(helper_text, helpers) if source is not None]


HELPER_END = "\x00helper-end\x00"  # cannot occur in Python source; `apply` sets the gap there


def _blank_lines_at(text: str, offset: int, most: int = 2) -> int:
    """How many blank lines start at `offset` (up to `most`); the end of the text counts as enough."""
    count = 0
    for line in text[offset : offset + 400].splitlines(keepends=True)[:most]:
        if line.strip():
            break
        count += 1
    return most if offset >= len(text) else count


def _reindent(code: str, unit: str) -> str:
    """`code`, written with four-space steps, indented with `unit` steps instead."""
    if unit == "    ":
        return code
    lines = []
    for line in code.split("\n"):
        stripped = line.lstrip(" ")
        lines.append(unit * ((len(line) - len(stripped)) // 4) + stripped)
    return "\n".join(lines)


def tool_finding(path: str, code: str, message: str, line: int = 1, column: int = 1) -> Finding:
    """An NM9xx finding about the file itself (it could not be read, parsed or fixed)."""
    spec = next((s for s in load_catalogue() if s.code == code), None)
    return Finding(
        path=path,
        code=code,
        name=spec.name if spec else "tool_error",
        message=message,
        severity=spec.severity if spec else Severity.ERROR,
        start=Position(line, column),
        end=Position(line, column),
        category="tool",
        url=spec.url if spec else None,
    )


def enabled_codes(settings: Settings) -> frozenset[str]:
    """The codes enabled for these settings (resolved once by config; else from their selectors)."""
    if settings.enabled is not None:
        return settings.enabled
    return registry_codes(
        settings.rule_sources, settings.select, settings.ignore, settings.extend_select, settings.families
    )
