"""Torch_xla imports waiting on other fixes: whether the safe fixes could leave one unused, which
of them `--fix` removes in its second round (so `check` can count them fixable without running
every round in memory, `engine/pipeline._imports_fixed_later`), and the message of one that
`--fix` removes with the fixes of its uses."""

from __future__ import annotations

import ast
import warnings
from collections import Counter
from dataclasses import dataclass

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.checks.xla_imports import REMOVE_IMPORT, lasting_keep
from neuron_migrate.engine import suppress
from neuron_migrate.engine.apply import apply_once, choose
from neuron_migrate.engine.check import Planned, analyze_imports, findings_for
from neuron_migrate.engine.ruleset import Ruleset
from neuron_migrate.model import Safety
from neuron_migrate.settings import Settings


def may_go(
    analysis: Analysis,
    planned: list[Planned],
    waiting: Planned,
    import_codes: frozenset[str],
    allowed: frozenset[Safety] = frozenset({Safety.SAFE}),
) -> bool:
    """Whether the fixes of the `allowed` applicabilities could leave this import unused: no
    torch_xla use through a name it binds is left without such a fix, outside every such fix's
    edits. A use that nothing fixes keeps the import through every round, so such an import
    needs no in-memory fix run.

    So does a string the import's fix reads (`xla_imports.lasting_keep`) outside those edits.
    Imports kept by other reasons (strings that need the `xla` backend, a star import's names)
    and imports without such uses may go: for those the rounds decide.
    """
    stmt = waiting.match.node if waiting.match is not None else None
    if not isinstance(stmt, (ast.Import, ast.ImportFrom)) or any(a.name == "*" for a in stmt.names):
        return True
    assert waiting.match is not None
    scope, resolver = waiting.match.scope, analysis.resolver
    bindings = {
        name: scope.bindings.get(name) for alias in stmt.names for name in [alias.asname or alias.name.split(".")[0]]
    }
    fixing = [p.plan for p in planned if p.plan is not None and p.applicability in allowed]
    spans = [(start, end) for plan in fixing for start, end, _ in plan.edits]
    spans += [plan.transform.span for plan in fixing if plan.transform is not None]
    # A block a fix empties goes with its `if` (engine/apply.py): what the `if` holds may go too.
    spans += [analysis.src.node_span(_outermost_block(analysis, stmt)) for plan in fixing for stmt in plan.deletes]
    for p in planned:
        match = p.match
        if match is None or p.finding.code in import_codes or (p.plan is not None and p.applicability in allowed):
            continue
        head = match.written.split(".", 1)[0]
        if not match.qualified or head not in bindings or resolver.lookup(head, match.scope) is not bindings[head]:
            continue  # not a use of this import's binding (another scope's, or no name at all)
        start, end = analysis.src.node_span(match.node)
        if not any(s <= start and end <= e for s, e in spans):
            return False
    entry = waiting.match.entry
    start, end = analysis.src.node_span(stmt)
    if entry is None or entry.fix != REMOVE_IMPORT or any(s < end and start < e for s, e in spans):
        return True  # another fix, or one around the import, may take it away
    # An import fixed in a later round may take its block with it (a `try` around an optional
    # import, an `if` it empties): the strings in those blocks may go too.
    imports = [p.match.node for p in planned if p.match is not None and p.finding.code in import_codes]
    spans += [
        analysis.src.node_span(_outermost_block(analysis, node)) for node in imports if isinstance(node, ast.stmt)
    ]
    return not lasting_keep(analysis, stmt, spans)  # a string no fix edits keeps it through every round


@dataclass(frozen=True)
class RoundTwo:
    """What a fix run fixes in its first two rounds, by (code, snippet), when its second round is
    planned for the import rules alone; and the second round's text and its parse (for the whole
    run, when it must be made after all)."""

    gone: Counter[tuple[str, str]]
    text: str | None = None
    tree: ast.Module | None = None


def fixed_by_round_two(
    text: str, path: str, settings: Settings, ruleset: Ruleset, planned: list[Planned], analysis: Analysis
) -> RoundTwo | None:
    """What a `--fix` run fixes in its first two rounds, by (code, snippet), when its second round
    is planned for the import rules alone: the first round's fixes and the imports they leave
    unused. None when that plan cannot be made (the first round's text does not parse, or the
    settings allow one round); then only the whole fix run in memory can tell.

    The second round's imports are planned as a whole planning plans them (the same analysis of
    the whole text, the import rules' own detectors at every import statement), but without
    walking the rest of the tree. An import it finds fixable goes in that round: it is unused, and
    the other fixes of that round never edit an import statement. What later rounds remove is not
    counted, so an import this misses is left to the whole run (`_imports_fixed_later`).
    """
    if settings.max_fix_iterations < 2:
        return None
    chosen = choose(planned, settings, suppress.reporter(text, path, settings), set())
    if not chosen:
        return RoundTwo(Counter())
    applied = apply_once(analysis, chosen, text_only=True)
    if applied.text == text:
        return RoundTwo(Counter())
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(applied.text, filename=path)
        after, matches = analyze_imports(applied.text, tree, ruleset)
        second = findings_for(path, after, matches)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # the whole run drops the fixes that broke it, or rejects the file
    reported = suppress.reporter(applied.text, path, settings)
    gone = Counter((f.code, f.snippet) for f in applied.fixed)
    gone.update((p.finding.code, p.finding.snippet) for p in choose(second, settings, reported, set()))
    return RoundTwo(gone, applied.text, tree)


_SCOPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _outermost_block(analysis: Analysis, stmt: ast.stmt) -> ast.AST:
    """The outermost compound statement around `stmt` in its function (or `stmt` itself)."""
    node: ast.AST = stmt
    parent = analysis.parent(node)
    while parent is not None and not isinstance(parent, _SCOPES):
        node, parent = parent, analysis.parent(parent)
    return node


def goes_with_uses_fix(level: Safety) -> str:
    """The description of the edit-less fix of an import the other fixes (up to `level`) free."""
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
