"""New torch imports for a module that imports torch only inside functions go where it does.

Such a module (a library with torch as an optional dependency) imports without torch today; a
module-level `import torch` added by a fix would make importing it fail. So in that module:

- an import a rewritten call needs goes into the function holding the call, after the imports
  at the top of that function's body (where the torch_xla import the call came from usually is);
- a helper written into the file imports what it needs in its own body, after its docstring;
- an import that only a helper needed is not added at all.

`import os` and `import datetime` (the standard library) still go to the module's head.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.values import IMPORTS, Edit, HelperRequest, ImportRequest, Request

_TORCH = (IMPORTS["torch"], IMPORTS["dist"], IMPORTS["fsdp"])  # the imports of torch's modules, in this order
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Scoped:
    """What a round's imports become in a module whose torch imports are all local."""

    module_requests: tuple[Request, ...]  # still added at the module's head (the standard library, helpers)
    local_edits: tuple[Edit, ...] = ()  # imports inserted inside functions
    inline: bool = False  # helpers import torch's modules in their own bodies


def torch_is_local(analysis: Analysis) -> bool:
    """Whether nothing that runs when the module is imported imports torch or torch_xla, while a
    function does (module-level code, class bodies, `if`/`try` blocks; not function bodies)."""
    return analysis.fact(_torch_is_local)


def _torch_is_local(analysis: Analysis) -> bool:
    found_local = False
    pending: list[tuple[ast.AST, bool]] = [(analysis.tree, False)]
    while pending:
        node, in_function = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)) and _imports_torch(node):
            if not in_function:
                return False
            found_local = True
        inner = in_function or isinstance(node, (*_FUNCTIONS, ast.Lambda))
        pending.extend((child, inner) for child in ast.iter_child_nodes(node))
    return found_local


def _imports_torch(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        modules = [node.module or ""] if not node.level else []
    else:
        modules = [alias.name for alias in node.names]
    return any(m.split(".")[0] in ("torch", "torch_xla") for m in modules)


def scope_imports(analysis: Analysis, plans: Sequence[tuple[Sequence[Edit], Sequence[Request]]]) -> Scoped:
    """Split the imports `plans` request (each: its edits, its requests) for a module whose
    torch imports are local: torch's imports go into the functions whose edits use them, and
    helpers import what they need themselves (`helper_sources(..., inline=True)` writes them)."""
    every = _ordered({request for _, requests in plans for request in requests})
    if not any(request in _TORCH for request in every) or not torch_is_local(analysis):
        return Scoped(every)
    if not all(helper_inlines(r) for r in every if isinstance(r, HelperRequest)):
        return Scoped(every)
    taken = [(s, e) for edits, _ in plans for s, e, _ in edits]
    module_requests: set[Request] = set()
    local: dict[int, set[ImportRequest]] = {}  # insertion offset -> imports
    indents: dict[int, str] = {}
    for edits, requests in plans:
        for request in requests:
            if not isinstance(request, ImportRequest) or request not in _TORCH:
                module_requests.add(request)
                continue
            users = [start for start, _, text in edits if _uses(text, request.bound)]
            if not users:
                continue  # only a helper needed it; helpers import it themselves
            for start in users:
                where = _insertion_point(analysis, start, taken)
                if where is None:
                    module_requests.add(request)
                    continue
                local.setdefault(where[0], set()).add(request)
                indents[where[0]] = where[1]
    newline = analysis.src.newline
    inserted = tuple(
        Edit(at, at, "".join(f"{indents[at]}{r.statement}{newline}" for r in _TORCH if r in wanted))
        for at, wanted in sorted(local.items())
    )
    return Scoped(_ordered(module_requests), inserted, inline=True)


def _ordered(requests: Iterable[Request]) -> tuple[Request, ...]:
    """Imports (in isort's order), then helpers (by name)."""
    imports = sorted((r for r in requests if isinstance(r, ImportRequest)), key=lambda r: r.sort_key)
    return (*imports, *sorted(r for r in requests if isinstance(r, HelperRequest)))


def _uses(text: str, name: str) -> bool:
    """Whether the new text uses `name`, which an import binds (`torch.`, `dist.`)."""
    return re.search(rf"(?<![\w.]){re.escape(name)}\b", text) is not None


def _insertion_point(analysis: Analysis, offset: int, taken: Iterable[tuple[int, int]]) -> tuple[int, str] | None:
    """Where an import for code at `offset` goes in its innermost function, and its indentation:
    after the docstring and imports that open the function's body. None at module level, in a
    one-line `def`, or where another edit spans that point."""
    function = _innermost_function(analysis, offset)
    if function is None:
        return None
    body = function.body
    index = 0
    if _is_docstring(body[0]):
        index = 1
    while index < len(body) and isinstance(body[index], (ast.Import, ast.ImportFrom)):
        index += 1
    src = analysis.src
    anchor = body[index] if index < len(body) else None
    if index > 0:
        previous = body[index - 1]
        line = (previous.end_lineno or previous.lineno) + 1
        reference = previous
    else:
        assert anchor is not None
        line = anchor.lineno
        reference = anchor
    if reference.lineno == function.lineno or not src.line_text(reference.lineno)[: reference.col_offset].isspace():
        return None  # `def f(): ...` on one line, or statements joined by `;`
    if anchor is not None and anchor.lineno < line:
        return None  # the next statement shares the previous one's last line
    at = src.line_start(line)
    if any(start < at < end for start, end in taken):
        return None
    return at, src.indent_of(reference.lineno)


def _innermost_function(analysis: Analysis, offset: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    found = None
    for node in analysis.nodes(*_FUNCTIONS):
        start, end = analysis.src.node_span(node)
        if start <= offset < end and (found is None or analysis.src.node_span(found)[0] < start):
            found = node
    return found  # type: ignore[return-value]


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def helper_inlines(request: HelperRequest) -> bool:
    """Whether the helper `request` asks for can import its module itself."""
    from neuron_migrate.checks.helpers import helper_text

    source = helper_text(request)
    torch_module = any(r.bound == request.module for r in _TORCH)
    return source is not None and (not torch_module or inline_imports(source, request.module) is not None)


def inline_imports(source: str, name: str) -> str | None:
    """A helper's `source` (written with four-space steps) with `import <name>` in each top-level
    function that uses `name`, after its docstring; None when code outside those functions uses it."""
    statement = next((r.statement for r in _TORCH if r.bound == name), None)
    if statement is None:
        return None
    tree = ast.parse(source)
    lines = source.split("\n")
    inserts: list[int] = []
    for stmt in tree.body:
        uses = any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(stmt))
        if not uses:
            continue
        if not isinstance(stmt, _FUNCTIONS):
            return None
        if any(isinstance(n, (ast.Import, ast.ImportFrom)) and _binds(n, name) for n in ast.walk(stmt)):
            continue  # it imports the module itself already
        first = stmt.body[0]
        inserts.append((first.end_lineno or first.lineno) if _is_docstring(first) else first.lineno - 1)
    for line in sorted(inserts, reverse=True):
        lines[line:line] = [f"    {statement}", ""]
    return "\n".join(lines)


def _binds(node: ast.Import | ast.ImportFrom, name: str) -> bool:
    return any((alias.asname or alias.name.split(".")[0]) == name for alias in node.names)
