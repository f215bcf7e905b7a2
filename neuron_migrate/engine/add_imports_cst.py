"""Add a fixed file's new imports and helpers once, as LibCST statements placed after its imports.

Imported only when a file is fixed (a plain check never imports LibCST). The fixes ask for
imports and helpers (`analysis.values.ImportRequest`, `HelperRequest`); once a round's text edits
are in, `add_to_module` parses the module once and inserts:

- each import after the last top-level import of its group (`import os` with the standard
  library's, `import torch.distributed as dist` with torch's), else after all the imports, so it
  never lands between a comment and the code the comment is about;
- each helper (a module fragment, `cst.parse_module(source).body`) after the imports, two blank
  lines before it and exactly two after it.

Only module-level imports count as "already there": a function-local `import os` does not bind
`os` where the module-level code runs. Nothing is removed here: which torch_xla imports may go is
decided by `checks/xla_imports.py` (uses per scope, side effects, star imports, names kept by
strings), and NM601's fix deletes them.

`libcst.codemod.visitors.AddImportsVisitor` is not used: it appends every new import after the
last import of the block (after `from . import x` too), whatever its group.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace

import libcst as cst

from neuron_migrate.analysis.values import ImportRequest

_BLANK = cst.EmptyLine()
_COMPOUND_HEADS = (cst.FunctionDef, cst.ClassDef)


@dataclass(frozen=True)
class _Placement:
    anchor: int  # index in the module body after the top-level imports (and a docstring)
    groups: tuple[tuple[str, int], ...]  # group -> index just after its last import
    follows_imports: bool  # the module has top-level imports, which new ones join
    present: frozenset[str]  # top-level import statements already there, as code


def group_of(module: str) -> str:
    root = module.split(".")[0]
    return "stdlib" if root in sys.stdlib_module_names else root


def add_to_module(
    text: str,
    imports: Sequence[ImportRequest],
    helpers: Sequence[str],
    more: bool = False,
    indent: str = "",
    follows_imports: bool | None = None,
) -> str | None:
    """`text` with `imports` and `helpers` (sources, in order) added; None when LibCST cannot parse it.

    `text` may be the head of a module, up to its first top-level `def` or `class` (where the
    new code goes before): `more` says that code follows it, `indent` is the module's
    indentation step (else read from `text`), and `follows_imports` whether the module has
    top-level imports (else read from `text`).
    """
    if "\f" in text:
        return None  # LibCST drops a form feed that starts a line: the text edits keep it
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError:
        return None
    if indent and indent != module.default_indent and not _has_block(module):
        module = module.with_changes(default_indent=indent)  # no block here says otherwise
    placement = _placement(module, _first_use(module, imports, helpers))
    if follows_imports is not None:
        placement = replace(placement, follows_imports=follows_imports)
    wanted = [i for i in imports if i.statement not in placement.present]
    if not wanted and not helpers:
        return text
    groups = dict(placement.groups)
    at: dict[int, list[cst.BaseStatement]] = {}
    rest: list[cst.BaseStatement] = []
    for new in wanted:
        index = groups.get(group_of(new.module))
        statement = _statement(new.statement)
        if index is None or index == placement.anchor:
            rest.append(statement)
        else:
            at.setdefault(index, []).append(statement)
    rendered = [_rendered(source, module.default_indent, module.default_newline) for source in helpers]
    body = list(module.body)
    header, footer = module.header, module.footer
    helpers_in = bool(rendered)
    if (rest or helpers_in) and placement.anchor == 0:
        header, moved = _split_header(header)  # blank lines after a header stay after the new block
        if body:
            body[0] = body[0].with_changes(leading_lines=(*moved, *body[0].leading_lines))
        elif more:
            footer = (*moved, *footer)
    if (rest or helpers_in) and placement.anchor < len(body):
        following = body[placement.anchor]
        lines = _gap(
            tuple(following.leading_lines),
            isinstance(following, _COMPOUND_HEADS),
            bool(helpers),
            placement.follows_imports,
        )
        body[placement.anchor] = following.with_changes(leading_lines=lines)
    elif (rest or helpers_in) and more:  # the next statement is the first `def` or `class`, after `text`
        footer = _gap(tuple(footer), True, bool(helpers), placement.follows_imports)
    out: list[cst.CSTNode | str] = list(header)
    for index, statement in enumerate(body):
        out.extend(at.get(index, ()))
        if index == placement.anchor:
            out.extend([*rest, *rendered])
        out.append(statement)
    if placement.anchor >= len(body):
        out.extend([*rest, *rendered])
    out.extend(footer)
    code = "".join(part if isinstance(part, str) else module.code_for_node(part) for part in out)
    if not (module.has_trailing_newline or more) and code.endswith(module.default_newline):
        code = code[: -len(module.default_newline)]  # as `Module.code` writes it
    return code


@functools.lru_cache(maxsize=256)
def _helper_statements(source: str) -> tuple[cst.SimpleStatementLine | cst.BaseCompoundStatement, ...]:
    """A helper's statements, parsed as a module fragment, with two blank lines before it.

    Parsed once per process (LibCST nodes are immutable): a run writes the same few helpers
    into many files.
    """
    body = list(cst.parse_module(source).body)
    if body:
        body[0] = body[0].with_changes(leading_lines=(_BLANK, _BLANK))
    return tuple(body)


@functools.lru_cache(maxsize=256)
def _rendered(source: str, indent: str, newline: str) -> str:
    """A helper's code in a module indented by `indent` with `newline` line endings (written
    once per process: a run writes the same few helpers into many files)."""
    module = cst.Module(body=_helper_statements(source), default_indent=indent, default_newline=newline)
    return "".join(module.code_for_node(statement) for statement in module.body)


@functools.lru_cache(maxsize=256)
def _statement(code: str) -> cst.BaseStatement:
    return cst.parse_statement(code)


def _gap(
    lines: tuple[cst.EmptyLine, ...], compound: bool, helpers: bool, follows_imports: bool
) -> tuple[cst.EmptyLine, ...]:
    """The lines before the code after the inserted block, which keeps apart from it.

    After helpers that join existing imports: exactly two blank lines (its comments kept).
    After a new import block: one blank line, two before a `def` or `class`, unless it has one.
    """
    if follows_imports:
        if not helpers:
            return lines
        first_comment = next((i for i, line in enumerate(lines) if line.comment is not None), len(lines))
        return (_BLANK, _BLANK, *lines[first_comment:])
    if lines and lines[0].comment is None:
        return lines
    return (*(_BLANK,) * (2 if compound else 1), *lines)


def _has_block(module: cst.Module) -> bool:
    """Whether the module has an indented block (which LibCST read its indentation from)."""
    return any(isinstance(getattr(s, "body", None), cst.IndentedBlock) for s in module.body)


def _split_header(header: Sequence[cst.EmptyLine]) -> tuple[tuple[cst.EmptyLine, ...], tuple[cst.EmptyLine, ...]]:
    """The module header's comment lines, and the blank lines after the last of them."""
    lines = tuple(header)
    end = len(lines)
    while end and lines[end - 1].comment is None:
        end -= 1
    return lines[:end], lines[end:]


class _Names(cst.CSTVisitor):
    """Whether a statement reads one of `names` (attribute names and keywords are not reads)."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names
        self.found = False

    def visit_Name(self, node: cst.Name) -> bool:
        self.found = self.found or node.value in self.names
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False


def _first_use(module: cst.Module, imports: Sequence[ImportRequest], helpers: Sequence[str] = ()) -> int | None:
    """The index of the first top-level statement that reads a name the new imports bind or the
    helpers define: they must come before it, even when more imports follow it
    (`d = torch.device(...); import json`). A `def` or `class` that reads one counts too: code
    that calls it at import time comes after it."""
    names = {new.bound for new in imports} | {name for source in helpers for name in _defined(source)}
    if not names:
        return None
    visitor = _Names(frozenset(names))
    for index, statement in enumerate(module.body):
        if _imports_of(statement) is not None:
            continue
        statement.visit(visitor)
        if visitor.found:
            return index
    return None


def _defined(source: str) -> tuple[str, ...]:
    """The names a helper's top-level statements define (its functions and classes)."""
    return tuple(s.name.value for s in _helper_statements(source) if isinstance(s, (cst.FunctionDef, cst.ClassDef)))


def _placement(module: cst.Module, before: int | None = None) -> _Placement:
    """Where new imports go: the same places the text edits `check` reports put them; never at
    or after the statement at index `before` (the first that uses them)."""
    body = module.body
    last: int | None = None
    for index, statement in enumerate(body):
        if before is not None and index >= before:
            break
        imports_only = _imports_of(statement) is not None or (
            isinstance(statement, cst.Try)
            and isinstance(statement.body, cst.IndentedBlock)
            and _all_imports(statement.body.body)
        )
        if imports_only or (index == 0 and _is_docstring(statement)):
            last = index
        elif isinstance(statement, _COMPOUND_HEADS):
            break
    anchor = 0 if last is None else last + 1
    groups: dict[str, int] = {}
    present: set[str] = set()
    for index, statement in enumerate(body[:anchor]):
        for small in _imports_of(statement) or ():
            if isinstance(small, cst.Import):
                names = [(_dotted(alias.name), _alias(alias)) for alias in small.names]
                present.update(f"import {name} as {alias}" if alias else f"import {name}" for name, alias in names)
                roots = {name.split(".")[0] for name, _ in names}
            elif small.module is not None and not small.relative:
                roots = {_dotted(small.module).split(".")[0]}
            else:
                continue
            for root in roots:
                groups[group_of(root)] = index + 1
    follows = any(_imports_of(statement) is not None for statement in body)
    return _Placement(anchor, tuple(sorted(groups.items())), follows, frozenset(present))


def _imports_of(statement: cst.BaseStatement) -> list[cst.Import | cst.ImportFrom] | None:
    """The imports of a line that holds only imports (`import os; import sys`), else None."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return None
    imports = [s for s in statement.body if isinstance(s, (cst.Import, cst.ImportFrom))]
    return imports if imports and len(imports) == len(statement.body) else None


def _all_imports(statements: Sequence[cst.BaseStatement]) -> bool:
    return bool(statements) and all(_imports_of(s) is not None for s in statements)


def _is_docstring(statement: cst.BaseStatement) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    expr = statement.body[0]
    return isinstance(expr, cst.Expr) and isinstance(expr.value, (cst.SimpleString, cst.ConcatenatedString))


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return node.value if isinstance(node, cst.Name) else ""


def _alias(alias: cst.ImportAlias) -> str:
    name = alias.asname.name if alias.asname is not None else None
    return name.value if isinstance(name, cst.Name) else ""
