"""The fix API and the small helpers every concept module shares (one copy each).

`FixContext` is what a fix gets: the file, its analysis, and the edits it may plan
(`replace`, `delete_statement`, `replace_statement`, `render`; `transform` for a structural
rewrite). A fix is a pure function (FixContext, Match) -> Plan | None (`FixFn`); None means "a
human must decide", and the finding stays with its guidance. A detector is
(rule, analysis, node, scope) -> matches (`DetectorFn`). Text edits change only the text they
replace, so the rest of the file keeps its formatting.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import io
import re
import tokenize
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.names import Scope
from neuron_migrate.analysis.source import STRING_START, fit_quotes
from neuron_migrate.analysis.values import (
    EXPRESSION,
    IMPORTS,
    STATEMENT,
    Edit,
    HelperRequest,
    Match,
    Plan,
    Request,
    Transform,
)
from neuron_migrate.catalogue import RuleSpec
from neuron_migrate.model import Safety

DetectorFn = Callable[[RuleSpec, Analysis, ast.AST, Scope], Iterator[Match]]


_PLACEHOLDER = re.compile(r"\{(\w+)\}")

# `--target accelerator`'s device: one module-level variable the fixes write once (the helper
# `accelerator` of checks/helpers.py) and name wherever the file named CUDA's device.
ACCELERATOR_NAME = "_DEVICE"
ACCELERATOR_EXPRESSION = '{torch}.accelerator.current_accelerator(check_available=True) or {torch}.device("cpu")'


# Parents under which an expression of any precedence needs no parentheses.
_SAFE_SLOTS = (ast.Assign, ast.AnnAssign, ast.Return, ast.Expr, ast.keyword, ast.If, ast.While, ast.Assert)


_LOW_PRECEDENCE = (ast.IfExp, ast.BoolOp, ast.Compare, ast.BinOp, ast.UnaryOp, ast.Lambda, ast.NamedExpr)


@functools.lru_cache(maxsize=4096)
def _expression(text: str) -> ast.expr | None:
    """`text` parsed as an expression, or None (memoised: files share their replacements).

    Only the node's type is read, so one parsed node serves every file.
    """
    try:
        return ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None


class FixContext:
    """What a fix may ask of the module: text, names to use, and edit builders."""

    def __init__(self, analysis: Analysis) -> None:
        self.analysis = analysis
        self.src = analysis.src
        self._names: dict[tuple[str, int], tuple[str, bool] | None] = {}  # name_for's answers by scope
        self._module_aliases: dict[str, list[str]] | None = None

    # -- names --------------------------------------------------------------------------
    def name_for(self, key: str, match: Match) -> tuple[str, bool] | None:
        """The name to use for `torch`, `dist` or `os` at the match, and whether to import it.

        None when the default name means something else here and no alias exists. The answer
        depends only on the scope, so it is computed once per scope.
        """
        if self._bound_only_later(key, match):
            return key, True  # `import torch.nn` below the code that now needs `torch`: import it first
        cache_key = (key, id(match.scope))
        if cache_key not in self._names:
            self._names[cache_key] = self._name_in_scope(key, match)
        return self._names[cache_key]

    def _name_in_scope(self, key: str, match: Match) -> tuple[str, bool] | None:
        module = IMPORTS[key].module
        resolver = self.analysis.resolver
        if imports_module(resolver.lookup(key, match.scope), module):
            return key, False
        for name in self._aliases_of(module):
            if resolver.lookup(name, match.scope) == resolver.module_scope.bindings[name]:
                return name, False
        if resolver.lookup(key, match.scope) or resolver.lookup(key, resolver.module_scope):
            return None
        if resolver.is_loaded_unbound(key):
            return None
        return key, True

    def _bound_only_later(self, key: str, match: Match) -> bool:
        """Whether module-level code at the match runs before every import that binds `key`."""
        scope, line = self.analysis.resolver.module_scope, getattr(match.node, "lineno", 0)
        later = [b for b in scope.bindings.get(key) or [] if getattr(b.node, "lineno", 0) > line]
        return match.scope is scope and imports_module(later, IMPORTS[key].module) and later == scope.bindings[key]

    def _aliases_of(self, module: str) -> list[str]:
        """Module-level names bound only by `import <module> [as name]`, sorted (indexed once)."""
        if self._module_aliases is None:
            found: dict[str, list[str]] = {}
            for name, bindings in sorted(self.analysis.resolver.module_scope.bindings.items()):
                if bindings and bindings[0].kind == "import" and imports_module(bindings, bindings[0].target):
                    found.setdefault(bindings[0].target, []).append(name)
            self._module_aliases = found
        return self._module_aliases.get(module, [])

    def render(
        self, template: str, match: Match, values: Mapping[str, str] | None = None
    ) -> tuple[str, tuple[Request, ...]] | None:
        """Fill `{torch}`, `{dist}`, `{os}`, `{accelerator}`, `{args}` and `{0}`.. in a template;
        None if impossible.

        With the text, the imports (and helpers) it needs (a name the module does not bind yet).
        """
        given = dict(values or {})
        call = match.node if isinstance(match.node, ast.Call) else None
        needed: list[Request] = []
        out: list[str] = []
        last = 0
        for found in _PLACEHOLDER.finditer(template):
            key = found.group(1)
            out.append(template[last : found.start()])
            last = found.end()
            if key in given:
                out.append(given[key])
            elif key in IMPORTS:
                found_name = self.name_for(key, match)
                if found_name is None:
                    return None
                if found_name[1]:
                    needed.append(IMPORTS[key])
                out.append(found_name[0])
            elif key == "accelerator":
                device = self._accelerator(match)
                if device is None:
                    return None
                out.append(device[0])
                needed.extend(device[1])
            elif key == "args" and call is not None:
                out.append(self.args_text(call))
            elif key.isdigit() and call is not None and int(key) < len(call.args):
                out.append(self.segment(call.args[int(key)]))
            else:
                return None
        out.append(template[last:])
        return "".join(out), tuple(needed)

    def _accelerator(self, match: Match) -> tuple[str, tuple[Request, ...]] | None:
        """`_DEVICE`, the module-level variable holding the current accelerator (or the CPU), with
        the helper request that writes it once; the expression itself where the module cannot
        hold it (torch is not imported at module level, the name means something else)."""
        resolver = self.analysis.resolver
        module = dataclasses.replace(match, scope=resolver.module_scope)
        torch = self.name_for("torch", module)
        if torch is None:
            return None
        expression = ACCELERATOR_EXPRESSION.replace("{torch}", torch[0])
        inline = (expression, (IMPORTS["torch"],) if torch[1] else ())
        if torch[1] or resolver.lookup(ACCELERATOR_NAME, match.scope) != resolver.module_scope.bindings.get(
            ACCELERATOR_NAME, []
        ):
            return inline  # a local `_DEVICE` would shadow the module's
        bindings = resolver.module_scope.bindings.get(ACCELERATOR_NAME, [])
        if not bindings:
            return ACCELERATOR_NAME, (HelperRequest("accelerator", torch[0]),)
        node = bindings[0].node
        ours = isinstance(node, ast.Assign) and ast.dump(node.value) == ast.dump(
            ast.parse(expression, mode="eval").body
        )
        return (ACCELERATOR_NAME, ()) if len(bindings) == 1 and ours else inline

    # -- text -------------------------------------------------------------------------
    def segment(self, node: ast.AST) -> str:
        return self.src.segment(node)

    def args_text(self, call: ast.Call) -> str:
        """The text between a call's parentheses, exactly as written."""
        func_end = self.src.node_span(call.func)[1]
        call_end = self.src.node_span(call)[1]
        inner = self.src.text[func_end:call_end]
        open_at = inner.index("(")
        return inner[open_at + 1 : -1]

    def wrap(self, node: ast.AST, text: str) -> str:
        """Parenthesise `text` if it replaces `node` where its precedence would change meaning."""
        expr = _expression(text)
        if expr is None:
            return text
        parent = self.analysis.parent(node)
        if not isinstance(expr, _LOW_PRECEDENCE):
            return text
        if isinstance(parent, _SAFE_SLOTS) or (isinstance(parent, ast.Call) and node in parent.args):
            return text
        if isinstance(parent, ast.BoolOp) and isinstance(expr, (ast.Compare, ast.BinOp, ast.UnaryOp)):
            return text  # comparisons and `not` bind tighter than `and` / `or`
        return f"({text})"

    def replace(self, node: ast.AST, text: str, imports: tuple[Request, ...] = (), **kw: object) -> Plan | None:
        """Replace `node` with `text`; None when `text` cannot sit inside the f-string around it."""
        start, end = self.src.node_span(node)
        quotes = self.enclosing_quotes(node)
        fitted = fit_quotes(text, quotes) if quotes else text
        if fitted is None:
            return None
        return Plan((Edit(start, end, self.wrap(node, fitted)),), imports, **kw)  # type: ignore[arg-type]  # kw: Plan's fields

    def enclosing_quotes(self, node: ast.AST) -> tuple[str, ...]:
        """The quotes of every f-string `node` sits in: before Python 3.12 its code may use none."""
        quotes: list[str] = []
        current = self.analysis.parent(node)
        while current is not None and not isinstance(current, ast.stmt):
            if isinstance(current, ast.JoinedStr):
                quote = self._quote_around(current, self.src.node_span(node)[0])
                if quote is not None:
                    quotes.append(quote)
            current = self.analysis.parent(current)
        return tuple(quotes)

    def _quote_around(self, joined: ast.JoinedStr, offset: int) -> str | None:
        """The quote of the part of `joined` (`f"a" f'b'` is one node) that holds `offset`."""
        start, _ = self.src.node_span(joined)
        segment = self.segment(joined)
        lines = [0]
        for line in segment.splitlines(keepends=True):
            lines.append(lines[-1] + len(line))
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(segment).readline))
        except (tokenize.TokenError, SyntaxError):
            return None
        opened: list[str] = []  # Python 3.12+ tokenizes f-strings into parts
        for token in tokens:
            token_start = start + lines[token.start[0] - 1] + token.start[1]
            token_end = start + lines[token.end[0] - 1] + token.end[1]
            if token_start > offset:
                break
            name = tokenize.tok_name[token.type]
            if name == "FSTRING_START":
                opened.append(token.string)
            elif name == "FSTRING_END" and opened:
                opened.pop()
            elif token.type == tokenize.STRING and token_start <= offset < token_end:
                opened.append(token.string)
                break
        found = STRING_START.match(opened[-1]) if opened else None
        return found.group(2) if found else None

    def statement_lines(self, stmt: ast.stmt) -> tuple[int, int] | None:
        """Offsets covering `stmt`'s whole lines, or None when it shares a line with code."""
        start, end = self.src.node_span(stmt)
        line_start = self.src.line_start(stmt.lineno)
        if self.src.text[line_start:start].strip():
            return None
        rest_of_line = self.src.line_text(stmt.end_lineno or stmt.lineno)
        tail = self.src.text[end : self.src.line_start(stmt.end_lineno or stmt.lineno) + len(rest_of_line)]
        if tail.strip() and not tail.strip().startswith("#"):
            return None
        return line_start, self.src.line_start((stmt.end_lineno or stmt.lineno) + 1)

    def delete_statement(self, stmt: ast.stmt, **kw: object) -> Plan | None:
        """Remove a statement that stands on its own lines."""
        span = self.statement_lines(stmt)
        if span is None:
            return None
        return Plan((Edit(span[0], span[1], self.kept_comment_lines(stmt, span)),), deletes=(stmt,), **kw)  # type: ignore[arg-type]  # as above

    def kept_comment_lines(self, stmt: ast.stmt, span: tuple[int, int]) -> str:
        """What stays of a deleted statement's comments: nothing. A comment on the statement's
        lines (`xm.mark_step()  # sync`) was about it, and goes with it."""
        return ""

    def replace_statement(
        self, stmt: ast.stmt, lines: list[str], imports: tuple[Request, ...] = (), **kw: object
    ) -> Plan | None:
        """Replace a statement that stands on its own lines with `lines`, indented like it."""
        span = self.statement_lines(stmt)
        if span is None:
            return None
        start, end = self.src.node_span(stmt)
        indent = self.src.indent_of(stmt.lineno)
        unit = self.analysis.indent_unit()
        newline = self.src.newline
        body = newline.join(
            indent + line.replace("\t", unit) if i else line.replace("\t", unit) for i, line in enumerate(lines)
        )
        return Plan((Edit(start, end, body),), imports, **kw)  # type: ignore[arg-type]  # as above

    def transform(
        self,
        node: ast.AST,
        function: str | Callable[..., Any],
        options: object | None = None,
        imports: tuple[Request, ...] = (),
        safety: Safety | None = None,
        edits: tuple[Edit, ...] = (),
    ) -> Plan | None:
        """A structural fix: the LibCST transform `function` rewrites `node` when the file is fixed.

        `function` is `"package.module:function"` (the built-in ones are in their concept's
        `checks/<concept>_cst.py`, imported only then), called as `function(cst_node, options)`;
        `options` is its frozen dataclass of values chosen here (the names and tests the new code
        spells). `node` is a statement standing on its own lines, or an expression outside any
        f-string; None (no fix) otherwise. `edits` are text edits outside the node, applied with it.

        The transform is the fix's only implementation: this function checks, on the `ast`, every
        precondition under which the transform would decline, and returns None there, so that
        `check` can count the finding fixable without running LibCST.
        """
        if isinstance(node, ast.stmt):
            span = self.statement_lines(node)
            if span is None:
                return None
            change = Transform(function, span, STATEMENT, options)
        else:
            if self.enclosing_quotes(node):
                return None  # the new code's strings could clash with the f-string's quotes
            change = Transform(
                function, self.src.node_span(node), EXPRESSION, options, self.wrap(node, "a or b") != "a or b"
            )
        return Plan(edits, imports, safety, transform=change)

    def expression_statement(self, match: Match) -> ast.stmt | None:
        """The `Expr` statement when the matched call is used only for its effect."""
        if self.analysis.is_expression_statement(match.node):
            return self.analysis.parent(match.node)  # type: ignore[return-value]  # an expression statement: its Expr
        return None


FixFn = Callable[[FixContext, Match], Plan | None]


def imports_module(bindings: list, module: str) -> bool:
    return bool(bindings) and all(b.kind == "import" and b.target == module for b in bindings)
