"""Check one file's text: match every enabled rule in one pass, and turn the matches into
findings with planned fixes.

The rule set (its index, prefilter and narrowing) is `engine/ruleset.py`; the text of the new
imports a fix needs is `engine/add_imports.py`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from neuron_migrate import compat
from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.index import RuleIndex
from neuron_migrate.analysis.values import Edit, Match, Plan
from neuron_migrate.analysis.walk import walk, walk_imports
from neuron_migrate.catalogue import MapEntry, load_catalogue
from neuron_migrate.checks.helpers import helper_shadowed
from neuron_migrate.checks.messages import MESSAGE_VALUES
from neuron_migrate.checks.toolkit import FixContext
from neuron_migrate.engine.add_imports import ImportPlacement, import_edits, import_placement
from neuron_migrate.engine.arguments import declined, declined_message, spread_reason, unwritten_helper
from neuron_migrate.engine.constant_tests import folded
from neuron_migrate.engine.references import (
    is_reference,
    reference_form,
    reference_message,
    reference_plan,
    stand_in,
)
from neuron_migrate.engine.ruleset import Ruleset, narrowed
from neuron_migrate.engine.scoped_imports import scope_imports
from neuron_migrate.model import Finding, Fix, Position, Safety, Severity, TextEdit


@dataclass(frozen=True)
class Planned:
    """A finding with the plan behind its fix (None when it has no fix)."""

    finding: Finding
    plan: Plan | None
    applicability: Safety
    match: Match | None = field(default=None, compare=False)  # what the finding was made from


def analyze(text: str, tree: ast.Module, ruleset: Ruleset) -> tuple[Analysis, list[Match]]:
    return _analyzed(text, tree, ruleset, walk)


def analyze_imports(text: str, tree: ast.Module, ruleset: Ruleset) -> tuple[Analysis, list[Match]]:
    """`analyze` for the import rules alone: the matches it finds at import statements with them."""
    return _analyzed(text, tree, ruleset, walk_imports)


def _analyzed(
    text: str, tree: ast.Module, ruleset: Ruleset, find: Callable[[Analysis, RuleIndex], list[Match]]
) -> tuple[Analysis, list[Match]]:
    """The analysis of `text` under the rules that can fire on it, and the matches `find` makes."""
    ruleset = narrowed(ruleset, text)
    analysis = Analysis(text, tree, ruleset.target_version, ruleset.target, ruleset.index.known)
    analysis.fixes = ruleset.fixes
    return analysis, _apply_compat(find(analysis, ruleset.index), ruleset.target_version)


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
    plan = _entry_plan(ctx, match, entry)
    if plan is not None:
        plan = folded(ctx, match, plan) or plan
    return None if plan is None or helper_shadowed(ctx, match, plan.imports) else plan


def _entry_plan(ctx: FixContext, match: Match, entry: MapEntry) -> Plan | None:
    if is_reference(ctx.analysis, match):
        plan = reference_plan(ctx, match)
        return plan if plan is not None or not entry.ref_fix else _fixed(ctx, match, entry)
    return _fixed(ctx, match, entry)


def _fixed(ctx: FixContext, match: Match, entry: MapEntry) -> Plan | None:
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


def _message(analysis: Analysis, match: Match, new: str, path: str, fixed: bool = True) -> str:
    target = analysis.target
    entry = match.entry
    accel = entry.accelerator_message if entry is not None and target == "accelerator" else None
    manual = entry.manual_message if entry is not None and not fixed else None
    referenced = None
    if entry is not None and is_reference(analysis, match):
        own = entry.ref_fix and stand_in(entry, reference_form(analysis, match.node)) is None
        referenced = reference_message(analysis, match, fixed, own)
    template = (
        referenced or accel or manual or (entry.message if entry and entry.message else None) or match.rule.message
    )
    file = path.replace("\\", "/").rsplit("/", 1)[-1]
    values = {"old": match.written, "new": new or _preview(match, target), "file": file, **dict(match.values)}
    values.update(
        (key, value(analysis, match).replace("{file}", file))
        for key, value in MESSAGE_VALUES.items()
        if "{" + key + "}" in template
    )
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
    placement: ImportPlacement | None = None  # computed for the first fix (most files have none)
    planned: list[Planned] = []
    seen: set[tuple[str, int, int]] = set()
    for match in matches:
        start, end = analysis.src.node_span(match.node)
        key = (match.rule.code, start, end)
        if key in seen:
            continue
        seen.add(key)
        stopped = declined(match.entry, match.node)
        ambiguous = stopped is None and _ambiguous(analysis, match)
        plan = None if stopped is not None or ambiguous else plan_fix(ctx, match)
        safety = _safety(match, plan, analysis.target)
        fix = None
        if plan is not None and safety is not Safety.MANUAL:
            placement = placement or import_placement(analysis)
            fix = _to_fix(analysis, plan, safety, placement, match)
        new = _new_text(plan) if fix is not None and plan is not None else ""
        severity = match.entry.severity if match.entry and match.entry.severity else match.rule.severity
        blocker = match.rule.blocker if match.entry is None or match.entry.blocker is None else match.entry.blocker
        message = _message(analysis, match, new, path, fixed=fix is not None)
        spread = None if stopped or ambiguous or plan else spread_reason(match.entry, match.node, analysis.segment)
        spread = spread if spread is None or _spread_stopped(ctx, match) else None
        if stopped is not None and fix is None:
            message = declined_message(match.written, stopped)
        elif fix is None:
            message = unwritten_helper(message) + (f" ({spread})" if spread else "")
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
            tier=match.rule.tier_of(match.entry),
        )
        planned.append(Planned(finding, plan if fix is not None else None, safety, match))
    planned.sort(key=lambda p: p.finding.sort_key)
    return planned


def concrete_edits(analysis: Analysis, plan: Plan) -> tuple[Edit, ...] | None:
    """A plan's edits, with its transform's edit first when it has one (LibCST runs then); None
    when the transform declines."""
    if plan.transform is None:
        return plan.edits
    from neuron_migrate.engine.rewrite import transform_edit  # LibCST: only files with such fixes

    found = transform_edit(plan.transform, analysis.text, analysis.indent_unit(), analysis.src.newline)
    return None if found is None else (found, *plan.edits)


def with_edits(analysis: Analysis, planned: list[Planned]) -> list[Planned]:
    """`planned`, with the edits of each structural fix made (its transform run, LibCST
    imported): for the formats that show a fix's edits. A transform that declines leaves its
    fix without edits."""
    placement: ImportPlacement | None = None
    out = []
    for item in planned:
        plan, fix = item.plan, item.finding.fix
        if plan is None or plan.transform is None or fix is None or item.match is None:
            out.append(item)
            continue
        edits = concrete_edits(analysis, plan)
        if edits is None:
            out.append(item)
            continue
        made = replace(plan, edits=edits, transform=None)
        placement = placement or import_placement(analysis)
        made_fix = _to_fix(analysis, made, fix.applicability, placement, item.match)
        out.append(replace(item, finding=replace(item.finding, fix=made_fix)))
    return out


def _spread_stopped(ctx: FixContext, match: Match) -> bool:
    """Whether the call's `*args` / `**kwargs` are what stopped its fix: without them it plans one."""
    assert isinstance(match.node, ast.Call)  # spread_reason found a spread in it
    with ctx.analysis.without_spreads(match.node):
        return plan_fix(ctx, match) is not None


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


def _safety(match: Match, plan: Plan | None, target: str = "neuron") -> Safety:
    """A fix function's own verdict wins; then the map entry's; then the rule's."""
    if plan is None:
        return Safety.MANUAL
    entry = match.entry
    accel = entry.accelerator_safety if entry is not None and target == "accelerator" else None
    entry_safety = entry.safety if entry is not None else None
    return plan.safety or accel or entry_safety or match.rule.safety


def _new_text(plan: Plan) -> str:
    """What a fix writes, for the message's `{new}`: its one-line summary, or its first edit."""
    if plan.new:
        return plan.new
    return plan.edits[0].text.strip() if plan.transform is None and plan.edits else ""


def fix_of(analysis: Analysis, plan: Plan, safety: Safety, match: Match) -> Fix:
    """The fix a plan makes for the finding of `match`, with the imports its edits need."""
    return _to_fix(analysis, plan, safety, import_placement(analysis), match)


def _to_fix(analysis: Analysis, plan: Plan, safety: Safety, placement: ImportPlacement, match: Match) -> Fix:
    """The finding's fix: the plan's edits with the imports they need (none for a structural
    fix whose transform has not run: `with_edits` runs it where the edits are shown)."""
    src = analysis.src
    if plan.transform is not None:
        return Fix(safety, plan.description or _describe(plan, match), ())
    edits = [TextEdit(src.position(s), src.position(e), text) for s, e, text in plan.edits]
    scoped = scope_imports(analysis, [(plan.edits, plan.imports)])
    first = min((s for s, _, _ in plan.edits), default=None)
    module_edits = import_edits(analysis, scoped.module_requests, placement, before=first, inline=scoped.inline)
    for start, end, text in [*scoped.local_edits, *module_edits]:
        edits.append(TextEdit(src.position(start), src.position(end), text))
    edits.sort(key=lambda e: (e.start, e.end))
    description = plan.description or _describe(plan, match)
    return Fix(safety, description, tuple(edits))


def _describe(plan: Plan, match: Match) -> str:
    """A one-line summary of what the fix does, for JSON and SARIF consumers."""
    if plan.transform is not None:
        return f"Rewrite `{match.written}`"
    content = plan.new or plan.edits[0].text.strip()
    if not content:
        return f"Remove `{match.written}`"
    if "\n" in content or len(content) > 80:
        return f"Rewrite `{match.written}`"
    return f"Replace with `{content}`"


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
