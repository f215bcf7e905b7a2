"""Torch_xla (and neuronx_distributed) imports waiting on other fixes: an import still used goes in a later round of `--fix`,
once the fixes of its uses have taken every use away. `check` says so without running a fix:
the import's finding gets a fix of its own, the import's deletion (planned as if it were
unused), that requires the fixes of its uses (`Fix.requires`), found from the analysis alone.

A use (a read of a name the import binds, or a string that keeps it) is taken away by a fix
when it is that fix's own code (the callee or name its finding is about), or lies in a text edit
whose new text does not spell it, or in the deletion of another import that goes. Where only a
structural fix's transform (whose text is known only once it runs) or a block a later round may
remove stands between the import and the answer, or the import is a star import, the answer is
not known statically: the fix is then marked uncertain (`Fix.certain`, `[~]`), never simulated.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.values import Plan
from neuron_migrate.analysis.walk import loads_of
from neuron_migrate.checks.nxd.imports import REMOVE_NXD_IMPORT, nxd_removal
from neuron_migrate.checks.toolkit import FixContext
from neuron_migrate.checks.xla_imports import (
    REMOVE_IMPORT,
    bound_names,
    import_scope,
    keeping_strings,
    removal,
    star_names,
)
from neuron_migrate.engine.check import Planned, fix_of
from neuron_migrate.model import Requirement, Safety
from neuron_migrate.settings import Settings

_SCOPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Freed:
    """How a waiting import goes: its deletion, the fixes it waits on, and how sure that is."""

    waiting: Planned  # the import's finding
    deletion: Plan  # the import's removal, planned as if it were unused
    needs: tuple[Planned, ...]  # the fixes that take its uses (and the strings that keep it) away
    certain: bool  # False: whether it goes cannot be known before those fixes are made
    safety: Safety  # the least safe of its own fix and the fixes it waits on


def waiting(planned: list[Planned], import_codes: frozenset[str]) -> list[Planned]:
    """The import findings without a fix whose rule removes the import once it is unused."""
    return [
        p
        for p in planned
        if p.plan is None
        and p.finding.code in import_codes
        and p.match is not None
        and p.match.entry is not None
        and p.match.entry.fix in (REMOVE_IMPORT, REMOVE_NXD_IMPORT)
    ]


def freed_imports(ctx: FixContext, planned: list[Planned], import_codes: frozenset[str]) -> list[Freed]:
    """Each waiting import that the other fixes free, with what it waits on. An import may wait
    on another one's deletion (a string in the `try` that goes with it): they are found in turns."""
    pending = waiting(planned, import_codes)
    if not pending:
        return []
    uses = _Uses(ctx.analysis, pending)
    found: list[Freed] = []
    while pending:
        fixing = _Covers(ctx.analysis, [p for p in planned if p.plan is not None] + [_planned(f) for f in found])
        taken = {id(item): t for item in pending if (t := _taken(ctx.analysis, fixing, item, uses)) is not None}
        clear = [item for item in pending if id(item) in taken]
        gone = frozenset(name for item in clear for name in bound_names(item.match.node))  # type: ignore[arg-type, union-attr]
        new = [f for f in (_freed(ctx, item, clear, taken, gone, fixing) for item in clear) if f is not None]
        if not new:
            break
        found += new
        done = {id(f.waiting) for f in new}
        pending = [p for p in pending if id(p) not in done]
    return found


def _planned(freed: Freed) -> Planned:
    """A freed import as a fix other imports may wait on (its deletion at its level)."""
    return Planned(freed.waiting.finding, freed.deletion, freed.safety, freed.waiting.match)


class _Uses:
    """The reads of every name the waiting imports bind (or a star import may), found in one walk."""

    def __init__(self, analysis: Analysis, pending: list[Planned]) -> None:
        names = {n for p in pending for n in bound_names(p.match.node) if n != "*"}  # type: ignore[arg-type, union-attr]
        if any("*" in bound_names(p.match.node) for p in pending):  # type: ignore[arg-type, union-attr]
            names.update(star_names(analysis.resolver, known=True))
        self.loads = loads_of(analysis, frozenset(names)) if names else []

    def of(self, analysis: Analysis, stmt: ast.Import | ast.ImportFrom) -> list[ast.Name]:
        """The reads that see a binding `stmt` makes (as `xla_imports.import_used` asks); for a
        star import, the reads of the names that a star import may provide."""
        lookup = analysis.resolver.lookup
        if any(alias.name == "*" for alias in stmt.names):
            return [n for n, seen in self.loads if any(b.kind == "star" for b in lookup(n.id, seen))]
        scope = import_scope(analysis, stmt)
        own = {name: scope.bindings.get(name) for name in bound_names(stmt)}
        return [n for n, seen in self.loads if own.get(n.id) is not None and lookup(n.id, seen) is own[n.id]]


_Taken = tuple[dict[int, Planned], bool]  # the fixes that take an import's uses away, and whether that is known


def _taken(analysis: Analysis, fixing: _Covers, item: Planned, uses: _Uses) -> _Taken | None:
    """The fixes that take every use of the waiting import `item` away (and every string that
    keeps it), and whether that is known before they run; None while one stays."""
    stmt = item.match.node  # type: ignore[union-attr]  # waiting() keeps findings with a match
    assert isinstance(stmt, (ast.Import, ast.ImportFrom))
    star = any(alias.name == "*" for alias in stmt.names)
    if star and next(star_names(analysis.resolver, known=False), None) is not None:
        return None  # a name bound by nothing may come from it: a person says where it comes from
    own = analysis.src.node_span(stmt)
    if fixing.edited_around(own, item):
        return None  # another fix edits around the import (a `try` it deletes): that fix decides
    needs: dict[int, Planned] = {}
    certain = not star
    reads: list[tuple[ast.AST, str]] = [(node, node.id) for node in uses.of(analysis, stmt)]
    reads += [(node, "") for node, _ in keeping_strings(analysis, stmt)]
    for node, name in reads:
        found = fixing.taking_away(analysis.src.node_span(node), name)
        if found is None:
            return None
        cover, known = found
        needs.setdefault(id(cover), cover)
        certain = certain and known
    return needs, certain


def _freed(
    ctx: FixContext,
    item: Planned,
    clear: list[Planned],
    taken: dict[int, _Taken],
    gone: frozenset[str],
    fixing: _Covers,
) -> Freed | None:
    """How the waiting import `item` goes, whose uses fixes take away: its deletion (planned as if
    the names of every such import were read nowhere), which waits on those fixes, on those of
    the other imports it deletes with it (a probe's `try`) and on those of the calls its probe
    keeps; None where a person decides."""
    match = item.match
    assert match is not None and isinstance(match.node, (ast.Import, ast.ImportFrom))
    needs, certain = dict(taken[id(item)][0]), taken[id(item)][1]
    if match.entry is not None and match.entry.fix == REMOVE_NXD_IMPORT:
        deletion = nxd_removal(ctx, match.node)
    else:
        deletion = removal(ctx, match.node, match.scope, gone)
    if (
        deletion is None and match.entry is not None and match.entry.fix == REMOVE_IMPORT
    ):  # a probe whose statements call what fixes rewrite: known once they run
        deletion, certain = removal(ctx, match.node, match.scope, gone, fixing.rewrites), False
        probe = ctx.analysis.parent(match.node)
        for call in (n for n in ast.walk(probe) if isinstance(n, ast.Call)) if deletion and probe else ():
            cover = fixing.rewriting(call)
            if cover is not None:
                needs.setdefault(id(cover), cover)
    if deletion is None:
        return None
    for other in clear:  # imports the deletion takes with it wait on their uses' fixes too
        start, end = ctx.analysis.src.node_span(other.match.node)  # type: ignore[union-attr]
        if other is not item and any(e.start <= start and end <= e.end for e in deletion.edits):
            needs.update(taken[id(other)][0])
            certain = certain and taken[id(other)][1]
    safety = max((p.applicability for p in needs.values()), key=lambda s: s.rank, default=Safety.SAFE)
    own_safety = deletion.safety or (match.entry.safety if match.entry else None) or match.rule.safety
    return Freed(item, deletion, tuple(needs.values()), certain, max(safety, own_safety, key=lambda s: s.rank))


_BUCKET = 256  # characters per bucket of the fixes' spans
_WIDE = 16  # buckets a span may cover before it is kept in the list every lookup reads


@dataclass(frozen=True)
class _Span:
    """A span a fix of the round covers: its own code, a text edit (`text`), or one whose
    outcome only running it tells (a structural transform, a block its deletions may empty)."""

    start: int
    end: int
    order: int  # the fix's place among the round's fixes, safest first
    kind: str  # "own", "edit", "transform" or "block"
    text: str = ""


class _Covers:
    """The fixes of one round and the spans they cover, bucketed by offset, so that the fix
    that takes a read away is found without walking every fix for every read."""

    def __init__(self, analysis: Analysis, fixing: list[Planned]) -> None:
        self.fixes = sorted(fixing, key=lambda p: p.applicability.rank)
        self.text = analysis.src.text
        self.spans = analysis.src.node_span
        self.buckets: dict[int, list[_Span]] = {}
        self.wide: dict[tuple[int, int, str, str], _Span] = {}  # a wide span's first (safest) fix
        for order, p in enumerate(self.fixes):
            plan = p.plan
            assert plan is not None and p.match is not None
            self._add(_Span(*_own_span(analysis, p.match.node), order, "own"))
            for e in plan.edits:
                self._add(_Span(e.start, e.end, order, "edit", e.text))
            if plan.transform is not None:
                self._add(_Span(*plan.transform.span, order, "transform"))
            for stmt in plan.deletes:
                self._add(_Span(*analysis.src.node_span(_outermost_block(analysis, stmt)), order, "block"))

    def _add(self, span: _Span) -> None:
        first, last = span.start // _BUCKET, max(span.start, span.end - 1) // _BUCKET
        if last - first > _WIDE:
            self.wide.setdefault((span.start, span.end, span.kind, span.text), span)
            return
        for key in range(first, last + 1):
            self.buckets.setdefault(key, []).append(span)

    def _near(self, first: int, last: int) -> list[_Span]:
        near = [s for key in range(first, last + 1) for s in self.buckets.get(key, ())]
        return near + list(self.wide.values())

    def edited_around(self, own: tuple[int, int], item: Planned) -> bool:
        """Whether a fix other than `item`'s edits text, or runs a transform, overlapping `own`."""
        for s in self._near(own[0] // _BUCKET, max(own[0], own[1] - 1) // _BUCKET):
            if (
                s.kind in ("edit", "transform")
                and self.fixes[s.order] is not item
                and s.start < own[1]
                and own[0] < s.end
            ):
                return True
        return False

    def rewrites(self, call: ast.Call) -> bool:
        """Whether a fix of the round rewrites `call`'s callee (known or not before it runs)."""
        return self.rewriting(call) is not None

    def rewriting(self, call: ast.Call) -> Planned | None:
        """The fix of the round that rewrites `call`'s callee, if one does."""
        found = self.taking_away(self.spans(call.func), "")
        return None if found is None else found[0]

    def taking_away(self, span: tuple[int, int], name: str) -> tuple[Planned, bool] | None:
        """The fix that takes the code at `span` (a read of `name`, or a string that keeps the
        import) away, and whether that is known before it runs: the safest fix whose own code or
        text edit (not spelling it again) holds it, else the safest whose transform or emptied
        block holds it. None when no fix does."""
        start, end = span
        code = self.text[start:end]
        known: int | None = None
        unknown: int | None = None
        for s in self._near(start // _BUCKET, start // _BUCKET):
            if not (s.start <= start and end <= s.end):
                continue
            if s.kind == "own" or (s.kind == "edit" and not _spells(s.text, name, code)):
                known = s.order if known is None else min(known, s.order)
            elif s.kind in ("transform", "block"):
                unknown = s.order if unknown is None else min(unknown, s.order)
        if known is not None:
            return self.fixes[known], True
        return None if unknown is None else (self.fixes[unknown], False)


def _own_span(analysis: Analysis, node: ast.AST) -> tuple[int, int]:
    """The code a finding is about, which its fix takes away: a call's callee, else the node."""
    return analysis.src.node_span(node.func if isinstance(node, ast.Call) else node)


def _spells(text: str, name: str, code: str) -> bool:
    """Whether new text still spells a name (a word) or, for a string, the string's code."""
    if not name:
        return code in text
    return name in text and re.search(rf"(?<![\w.]){re.escape(name)}\b", text) is not None


def _outermost_block(analysis: Analysis, stmt: ast.stmt) -> ast.AST:
    """The outermost compound statement around `stmt` in its function (or `stmt` itself)."""
    node: ast.AST = stmt
    parent = analysis.parent(node)
    while parent is not None and not isinstance(parent, _SCOPES):
        node, parent = parent, analysis.parent(parent)
    return node


def with_freed(
    analysis: Analysis, planned: list[Planned], settings: Settings, import_codes: frozenset[str]
) -> list[Planned]:
    """`planned`, each torch_xla import the other fixes free given its fix: its deletion, which
    requires those fixes (`Fix.requires`), at the level of the least safe of them. One that only
    unsafe fixes free is marked so only under `--unsafe-fixes`, like the fixes it waits on then.
    Its plan stays None: `--fix` removes it in the round after its uses, planned on that text."""
    if not any(p.plan is None and p.finding.code in import_codes for p in planned):
        return planned
    found = {id(f.waiting): f for f in freed_imports(FixContext(analysis), planned, import_codes)}
    out = []
    for item in planned:
        freed = found.get(id(item))
        if freed is None or item.match is None or (freed.safety is Safety.UNSAFE and not settings.unsafe_fixes):
            out.append(item)
            continue
        requires = tuple(sorted({Requirement(n.finding.code, n.finding.start) for n in freed.needs}))
        fix = replace(
            fix_of(analysis, freed.deletion, freed.safety, item.match),
            message=goes_with_uses_fix(freed.safety),
            requires=requires,
            certain=freed.certain,
        )
        message = item.finding.message
        if not message.startswith("Remove the "):  # it said why the import stays (`Keep ...`)
            message = goes_with_uses(item.finding.snippet, freed.safety)
        out.append(replace(item, finding=replace(item.finding, message=message, fix=fix)))
    return out


def goes_with_uses_fix(level: Safety) -> str:
    """The description of the fix of an import the other fixes (up to `level`) free."""
    return f"Remove the import; {_fix_command(level)} removes it once the fixes of its uses leave it unused"


def _fix_command(level: Safety) -> str:
    return "`--fix`" if level is Safety.SAFE else "`--fix --unsafe-fixes`"


def goes_with_uses(snippet: str, level: Safety = Safety.SAFE) -> str:
    """The message of an import `--fix` removes with the fixes of its uses, naming the module."""
    try:
        (stmt,) = ast.parse(snippet.strip()).body
    except (SyntaxError, ValueError):
        stmt = None
    if isinstance(stmt, ast.Import):
        what = f"the `{', '.join(a.name for a in stmt.names)}` import"
    elif isinstance(stmt, ast.ImportFrom) and stmt.module:
        what = f"the `{stmt.module}` import"
    else:
        what = "this import"
    return f"Remove {what}; {_fix_command(level)} removes it once the other fixes in this file leave it unneeded"
