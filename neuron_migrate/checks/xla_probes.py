"""Availability probes of torch_xla: `try: import torch_xla...` with an `except ImportError:`
fallback, and which of its branches the migrated program must take.

On XLA the import succeeded, so the `try` body (and its `else:` block) ran and the handler did
not. Without torch_xla the handler would run instead: the program would silently train on the
CPU (or return `"cpu"` as its backend). Once the probe's torch_xla imports are unused, the fix
replaces the `try` with the statements that ran on XLA, which use `neuron` now. It does so only
where those statements cannot themselves raise what the handler catches (flags, constants,
devices, `return`s of them, prints); elsewhere the import's finding says that the `except`
branch would run and what to write.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.names import Scope
from neuron_migrate.analysis.values import Plan
from neuron_migrate.checks.toolkit import FixContext
from neuron_migrate.model import Safety

PROBE_STILL_USED = (
    "Port the uses of `{old}` (those with fixes, `--fix` does): without torch_xla this probe's `except` branch runs"
)
PROBE_BY_HAND = (
    "Replace this `try` with the statements of its `try` branch, then remove the `{old}` import:"
    " without torch_xla its `except` branch runs"
)
# A handler that catches one of these (or a bare `except:`) catches a failed import.
_CAUGHT = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
# Calls that raise no ImportError, so a kept statement may make them: the device the fixes
# write, the environment reads of the rank fixes, and builtins.
_CANNOT_FAIL_IMPORT = frozenset(
    {
        "torch.device",
        "os.environ.get",
        "os.getenv",
        *(f"builtins.{n}" for n in ("print", "int", "str", "bool", "float")),
    }
)
_BUILTINS = frozenset({"print", "int", "str", "bool", "float"})
_SIMPLE = (ast.Assign, ast.AnnAssign, ast.Pass, ast.Expr, ast.Return)


def is_xla(stmt: ast.Import | ast.ImportFrom, alias: ast.alias) -> bool:
    module = stmt.module if isinstance(stmt, ast.ImportFrom) else alias.name
    return module is not None and (module == "torch_xla" or module.startswith("torch_xla."))


def probe_of(analysis: Analysis, stmt: ast.stmt) -> ast.Try | None:
    """The `try:` around `stmt` with a handler that catches a failed import, and no `finally`."""
    parent = analysis.parent(stmt)
    if not isinstance(parent, ast.Try) or not any(s is stmt for s in parent.body) or parent.finalbody:
        return None
    return parent if any(_catches_import_error(h) for h in parent.handlers) else None


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(k, ast.Name) and k.id in _CAUGHT for k in kinds)


def kept_statements(
    analysis: Analysis, probe: ast.Try, scope: Scope, rewritten: Callable[[ast.Call], bool] | None = None
) -> list[ast.stmt] | None:
    """The statements of the branch XLA took, without the probe's imports, when the fold may keep
    them alone: each a simple statement on one line that calls nothing able to raise an
    ImportError, apart from the calls other fixes rewrite (`rewritten`: what those become is known
    only once they are made). None otherwise (or when an import of the probe is not torch_xla's alone)."""
    imports = [s for s in probe.body if isinstance(s, (ast.Import, ast.ImportFrom))]
    if any(not all(is_xla(s, a) for a in s.names) for s in imports):
        return None
    kept = [s for s in (*probe.body, *probe.orelse) if s not in imports]
    if any(
        not isinstance(s, _SIMPLE) or s.lineno != s.end_lineno or _calls(analysis, s, scope, rewritten) for s in kept
    ):
        return None
    return kept


def _calls(analysis: Analysis, stmt: ast.stmt, scope: Scope, rewritten: Callable[[ast.Call], bool] | None) -> bool:
    """Whether `stmt` calls anything that might raise the ImportError the probe caught (a call
    another fix rewrites aside)."""
    for node in ast.walk(stmt):
        if not isinstance(node, ast.Call) or (rewritten is not None and rewritten(node)):
            continue
        names = analysis.call_names(node, scope)
        builtin = isinstance(node.func, ast.Name) and node.func.id in _BUILTINS and not names
        if not builtin and not names & _CANNOT_FAIL_IMPORT:
            return True
    return False


def neuron_path(
    ctx: FixContext, node: ast.Try, scope: Scope, rewritten: Callable[[ast.Call], bool] | None = None
) -> Plan | None:
    """`try: import torch_xla...; HAS_XLA = True / except ImportError: HAS_XLA = False` -> `HAS_XLA = True`.

    The statements after the imports (and the `else:` block) stay, the probe and its fallback go;
    a probe with none of them goes whole. Unsafe: a flag the probe set (`HAS_XLA`) now says True
    wherever it is read.
    """
    if probe_of(ctx.analysis, node.body[0]) is None:
        return None
    kept = kept_statements(ctx.analysis, node, scope, rewritten)
    if kept is None:
        return None
    if not kept:
        return ctx.delete_statement(node, safety=Safety.UNSAFE)
    return ctx.replace_statement(node, [ctx.segment(s) for s in kept], safety=Safety.UNSAFE)


def is_optional_import(analysis: Analysis, node: ast.Try, gone: frozenset[str] = frozenset()) -> bool:
    """`try: import torch_xla... except ImportError: xm = None` with nothing else depending on it
    (reads of the names in `gone` aside, which other fixes take away)."""
    if node.orelse or node.finalbody:
        return False
    if not all(isinstance(s, (ast.Import, ast.ImportFrom)) and all(is_xla(s, a) for a in s.names) for s in node.body):
        return False
    resolver = analysis.resolver
    for handler in node.handlers:
        for stmt in handler.body:
            if isinstance(stmt, ast.Pass):
                continue
            if not isinstance(stmt, ast.Assign) or not all(isinstance(t, ast.Name) for t in stmt.targets):
                return False
            if any(isinstance(t, ast.Name) and t.id not in gone and resolver.is_loaded(t.id) for t in stmt.targets):
                return False
    return True


def folds(analysis: Analysis, stmt: ast.Import | ast.ImportFrom, scope: Scope) -> bool:
    """Whether an unused import in a probe goes with its probe (False: the fold is a person's)."""
    probe = probe_of(analysis, stmt)
    if probe is None:
        return True
    return is_optional_import(analysis, probe) or kept_statements(analysis, probe, scope) is not None
