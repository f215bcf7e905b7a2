"""Named rewrites that TOML entries point to with `fix = "..."`.

Each is a pure function: (FixContext, Match) -> Plan | None. None means "a human must decide";
the finding then stays, with its guidance. Rewrites edit only the text they replace, so the
rest of the file keeps its formatting, comments and newlines.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import io
import re
import tokenize
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

from neuron_migrate.analysis.analyze import (
    EXPRESSION,
    IMPORTS,
    STATEMENT,
    Analysis,
    Match,
    Plan,
    Rewrite,
    body_of,
)
from neuron_migrate.analysis.source import STRING_START, fit_quotes, kept_comments
from neuron_migrate.checks import cuda_fixes, helper_code, import_uses
from neuron_migrate.checks.api_fixes import keyword_insertion
from neuron_migrate.model import Safety

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
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
        cache_key = (key, id(match.scope))
        if cache_key not in self._names:
            self._names[cache_key] = self._name_in_scope(key, match)
        return self._names[cache_key]

    def _name_in_scope(self, key: str, match: Match) -> tuple[str, bool] | None:
        module, _ = IMPORTS[key]
        resolver = self.analysis.resolver
        if _imports_module(resolver.lookup(key, match.scope), module):
            return key, False
        for name in self._aliases_of(module):
            if resolver.lookup(name, match.scope) == resolver.module_scope.bindings[name]:
                return name, False
        if resolver.lookup(key, match.scope) or resolver.lookup(key, resolver.module_scope):
            return None
        if resolver.is_loaded_unbound(key):
            return None
        return key, True

    def _aliases_of(self, module: str) -> list[str]:
        """Module-level names bound only by `import <module> [as name]`, sorted (indexed once)."""
        if self._module_aliases is None:
            found: dict[str, list[str]] = {}
            for name, bindings in sorted(self.analysis.resolver.module_scope.bindings.items()):
                if bindings and bindings[0].kind == "import" and _imports_module(bindings, bindings[0].target):
                    found.setdefault(bindings[0].target, []).append(name)
            self._module_aliases = found
        return self._module_aliases.get(module, [])

    def render(
        self, template: str, match: Match, values: Mapping[str, str] | None = None
    ) -> tuple[str, tuple[str, ...]] | None:
        """Fill `{torch}`, `{dist}`, `{os}`, `{args}` and `{0}`.. in a template; None if impossible."""
        given = dict(values or {})
        call = match.node if isinstance(match.node, ast.Call) else None
        needed: list[str] = []
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
                    needed.append(key)
                out.append(found_name[0])
            elif key == "args" and call is not None:
                out.append(self.args_text(call))
            elif key.isdigit() and call is not None and int(key) < len(call.args):
                out.append(self.segment(call.args[int(key)]))
            else:
                return None
        out.append(template[last:])
        return "".join(out), tuple(needed)

    # -- text -------------------------------------------------------------------------
    def segment(self, node: ast.AST) -> str:
        return self.src.segment(node)

    def args_text(self, call: ast.Call) -> str:
        """The text between a call's parentheses, exactly as written."""
        func_end = self.src.node_span(call.func)[1]
        call_start, call_end = self.src.node_span(call)
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

    def replace(self, node: ast.AST, text: str, imports: tuple[str, ...] = (), **kw: object) -> Plan | None:
        """Replace `node` with `text`; None when `text` cannot sit inside the f-string around it."""
        start, end = self.src.node_span(node)
        quotes = self.enclosing_quotes(node)
        fitted = fit_quotes(text, quotes) if quotes else text
        if fitted is None:
            return None
        return Plan(((start, end, self.wrap(node, fitted)),), imports, **kw)  # type: ignore[arg-type]

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
        return Plan(((span[0], span[1], self.kept_comment_lines(stmt, span)),), deletes=(stmt,), **kw)  # type: ignore[arg-type]

    def kept_comment_lines(self, stmt: ast.stmt, span: tuple[int, int]) -> str:
        """The comments of a deleted statement, each on its own line at the statement's indent."""
        text = self.src.text[span[0] : span[1]]
        if "#" not in text:
            return ""
        indent = self.src.indent_of(stmt.lineno)
        return "".join(f"{indent}{comment}{self.src.newline}" for comment in kept_comments(text))

    def replace_statement(
        self, stmt: ast.stmt, lines: list[str], imports: tuple[str, ...] = (), **kw: object
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
        return Plan(((start, end, body),), imports, **kw)  # type: ignore[arg-type]

    def with_rewrite(
        self, plan: Plan | None, node: ast.AST, function: str | Callable[..., Any], **options: str
    ) -> Plan | None:
        """`plan`, refined when fixing by the LibCST transform `function` applied to `node`.

        `function` is a transform, a `"module:function"` path, or the name of one in
        `checks/cst_fixes.py`. `node` is an expression (its span is parsed) or a statement
        standing on its own lines (those lines are parsed); the transform's result replaces every
        edit of `plan` inside that span. See `analysis/transform.py`.
        """
        if plan is None:
            return None
        if isinstance(function, str) and ":" not in function:
            function = _CST_FIXES + function
        if isinstance(node, ast.stmt):
            span = self.statement_lines(node)
            if span is None:
                return plan
            rewrite = Rewrite(function, span, STATEMENT, tuple(sorted(options.items())))
        else:
            span = self.src.node_span(node)
            preview = plan.edits[0][2]
            wrapped = (
                plan.edits[0][:2] == span and preview.startswith("(") and self.wrap(node, preview[1:-1]) == preview
            )
            rewrite = Rewrite(
                function, span, EXPRESSION, tuple(sorted(options.items())), self.enclosing_quotes(node), wrapped
            )
        return dataclasses.replace(plan, rewrite=rewrite)

    def expression_statement(self, match: Match) -> ast.stmt | None:
        """The `Expr` statement when the matched call is used only for its effect."""
        if self.analysis.is_expression_statement(match.node):
            return self.analysis.parent(match.node)  # type: ignore[return-value]
        return None


_CST_FIXES = "neuron_migrate.checks.cst_fixes:"  # imported only when fixing


def _imports_module(bindings: list, module: str) -> bool:
    return bool(bindings) and all(b.kind == "import" and b.target == module for b in bindings)


def _kwarg(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def _arg(call: ast.Call, name: str, pos: int) -> ast.expr | None:
    if 0 <= pos < len(call.args):
        return call.args[pos]
    keyword = _kwarg(call, name)
    return keyword.value if keyword else None


def _only_args(call: ast.Call, allowed: dict[str, int]) -> bool:
    """True when the call passes only the named parameters (name -> position)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return False
    if len(call.args) > len([p for p in allowed.values() if p >= 0]):
        return False
    positional = {name for name, pos in allowed.items() if 0 <= pos < len(call.args)}
    return all(k.arg in allowed and k.arg not in positional for k in call.keywords)


def _literal(node: ast.AST | None) -> object:
    try:
        return ast.literal_eval(node) if node is not None else None
    except ValueError:
        return ...


FixFn = Callable[[FixContext, Match], Plan | None]


# -- execution model --------------------------------------------------------------------
def remove_statement(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.mark_step()` on its own line -> nothing."""
    stmt = ctx.expression_statement(match)
    return ctx.delete_statement(stmt) if stmt is not None else None


def sync(ctx: FixContext, match: Match) -> Plan | None:
    """`torch_xla.sync()` -> nothing; `torch_xla.sync(wait=True)` -> synchronize."""
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    if not _only_args(call, {"wait": -1, "reset_scope": -1}):
        return None
    wait = _literal(_arg(call, "wait", -1))
    if wait is ...:
        return None
    if wait:
        rendered = ctx.render("{torch}.accelerator.synchronize()", match)
        return ctx.replace(call, rendered[0], rendered[1]) if rendered else None
    return remove_statement(ctx, match)


def xla_device(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.xla_device()` -> `torch.device("neuron")`; with an index, an unsafe `torch.device("neuron", n)`."""
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    if not _only_args(call, {"n": 0, "index": 0, "devkind": 1}) or _kwarg(call, "devkind") or len(call.args) > 1:
        return None
    index = _arg(call, "n", 0) or _arg(call, "index", 0)
    if ctx.analysis.target == "accelerator":
        return _accelerator_device(ctx, match, call, index)
    if index is None or _literal(index) is None:
        rendered = ctx.render('{torch}.device("neuron")', match)
        return ctx.replace(call, rendered[0], rendered[1]) if rendered else None
    rendered = ctx.render('{torch}.device("neuron", {n})', match, {"n": ctx.segment(index)})
    if rendered is None:
        return None
    return ctx.replace(call, rendered[0], rendered[1], safety=Safety.UNSAFE)


def _accelerator_device(ctx: FixContext, match: Match, call: ast.Call, index: ast.expr | None) -> Plan | None:
    """`--target accelerator`: the current accelerator, else the CPU; an index is dropped (unsafe)."""
    rendered = ctx.render(cuda_fixes.ACCEL_DEVICE, match)
    if rendered is None:
        return None
    dropped = index is not None and _literal(index) is not None
    return ctx.replace(call, rendered[0], rendered[1], safety=Safety.UNSAFE if dropped else None)


def optimizer_step(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.optimizer_step(opt)` -> `opt.step()` under certain DDP/FSDP, else `_optimizer_step(opt)`.

    `_optimizer_step` is written into the file: it averages the gradients over the default
    process group, as torch_xla did, then steps. Where DDP already averaged them, averaging
    equal gradients again changes nothing, so both rewrites are safe.
    """
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    allowed = {"optimizer": 0, "optimizer_args": 1, "groups": 2, "pin_layout": 3, "barrier": -1}
    if not _only_args(call, allowed) or _arg(call, "groups", 2) is not None:
        return None
    optimizer = _arg(call, "optimizer", 0)
    if optimizer is None:
        return None
    args = _step_arguments(ctx, _arg(call, "optimizer_args", 1))
    if _wrapped_before(ctx, match):
        plan = ctx.replace(call, f"{_operand(ctx, optimizer)}.step({args})", safety=Safety.SAFE)
        return ctx.with_rewrite(plan, call, "optimizer_step", func="{optimizer}.step")
    needed = _helper_imports(ctx, match, "optimizer_step")
    if needed is None:
        return None
    inner = ", ".join(part for part in (ctx.segment(optimizer), args) if part)
    plan = ctx.replace(call, f"_optimizer_step({inner})", needed, safety=Safety.SAFE)
    return ctx.with_rewrite(plan, call, "optimizer_step", func="_optimizer_step")


def _step_arguments(ctx: FixContext, extra: ast.expr | None) -> str:
    """`optimizer_args={"closure": c}` -> `closure=c`; any other mapping -> `**mapping`."""
    if extra is None:
        return ""
    if isinstance(extra, ast.Dict) and all(
        isinstance(k, ast.Constant) and isinstance(k.value, str) and k.value.isidentifier() for k in extra.keys
    ):
        return ", ".join(f"{k.value}={ctx.segment(v)}" for k, v in zip(extra.keys, extra.values))  # type: ignore[union-attr]
    return f"**{ctx.segment(extra)}"


def _operand(ctx: FixContext, node: ast.AST) -> str:
    text = ctx.segment(node)
    if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
        return text
    return f"({text})"


_DATA_PARALLEL = (
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_shard",
    "torch.distributed._composable.fsdp.fully_shard",
)


def _wrapped_before(ctx: FixContext, match: Match) -> bool:
    """Whether a DDP/FSDP call runs on every path before the match, in the same function body.

    Only calls in the function's (or module's) own block, or in `with` blocks inside it, count:
    a wrapper under `if use_ddp:`, in a loop or in another function may not have run.
    """
    analysis = ctx.analysis
    step = _statement_of(analysis, match.node)
    owner = _owner(analysis, match.node)
    if step is None:
        return False
    for stmt in _straight_line(owner.body):
        if stmt.lineno >= step.lineno:
            break
        for node in _walk_same_scope(stmt):
            if isinstance(node, ast.Call) and any(
                n.startswith(_DATA_PARALLEL) for n in analysis.call_names(node, match.scope)
            ):
                return True
    return False


def _statement_of(analysis: Analysis, node: ast.AST) -> ast.stmt | None:
    current: ast.AST | None = node
    while current is not None and not isinstance(current, ast.stmt):
        current = analysis.parent(current)
    return current


def _owner(analysis: Analysis, node: ast.AST) -> ast.Module | ast.FunctionDef | ast.AsyncFunctionDef:
    current = analysis.parent(node)
    while current is not None and not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        current = analysis.parent(current)
    return current if current is not None else analysis.tree  # type: ignore[return-value]


def _straight_line(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of `body` that always run in order: `with` blocks are entered, nothing else."""
    for stmt in body:
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from _straight_line(stmt.body)
        else:
            yield stmt


def _walk_same_scope(stmt: ast.stmt) -> Iterator[ast.AST]:
    """Nodes of a simple statement that always run with it: no nested blocks, branches or lambdas."""
    if not isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)):
        return
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _MAYBE_SKIPPED):
            stack.extend(ast.iter_child_nodes(node))


# Expressions whose parts may not run: `a if c else b`, `a and b`, lambdas, comprehensions.
_MAYBE_SKIPPED = (ast.IfExp, ast.BoolOp, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def step_closure(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.add_step_closure(fn, args=(a, b))` -> `fn(a, b)` (runs now rather than after the step)."""
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    if not _only_args(call, {"closure": 0, "args": 1, "run_async": 2}):
        return None
    closure = _arg(call, "closure", 0)
    args = _arg(call, "args", 1)
    if closure is None:
        return None
    if args is None:
        inner = ""
    elif isinstance(args, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in args.elts):
        inner = ", ".join(ctx.segment(e) for e in args.elts)
    else:
        inner = f"*{ctx.segment(args)}"
    if _comment_between(ctx, call, [closure, args]):
        return None  # a comment on the call itself has no place in `fn(...)`
    return ctx.with_rewrite(ctx.replace(call, f"{_operand(ctx, closure)}({inner})"), call, "step_closure")


def _comment_between(ctx: FixContext, node: ast.AST, parts: list[ast.AST | None]) -> bool:
    """Whether `node`'s text has a comment outside `parts` (which the rewrite keeps)."""
    start, end = ctx.src.node_span(node)
    text = ctx.src.text
    if "#" not in text[start:end] or not kept_comments(text[start:end]):
        return False
    outside = []
    last = start
    for part in sorted((p for p in parts if p is not None), key=ctx.src.node_span):
        part_start, part_end = ctx.src.node_span(part)
        outside.append(text[last:part_start])
        last = part_end
    outside.append(text[last:end])
    return any("#" in piece for piece in outside)


def step_context(ctx: FixContext, match: Match) -> Plan | None:
    """`with torch_xla.step(): body` -> `body`, dedented one level."""
    item = ctx.analysis.parent(match.node)
    stmt = ctx.analysis.parent(item) if isinstance(item, ast.withitem) else None
    if not isinstance(stmt, ast.With) or len(stmt.items) != 1 or item.optional_vars is not None:  # type: ignore[union-attr]
        return None
    span = ctx.statement_lines(stmt)
    first = stmt.body[0]
    if span is None or first.lineno == stmt.lineno:
        return None
    if any(
        isinstance(n, ast.Constant) and isinstance(n.value, (str, bytes)) and n.lineno != n.end_lineno
        for n in ast.walk(stmt)
    ):
        return None  # dedenting would change a multi-line string
    outer = ctx.src.indent_of(stmt.lineno)
    inner = ctx.src.indent_of(first.lineno)
    body_start = ctx.src.line_start(first.lineno)
    lines = ctx.src.text[body_start : span[1]].splitlines(keepends=True)
    dedented = []
    for line in lines:
        if line.startswith(inner):
            dedented.append(outer + line[len(inner) :])
        elif line.strip():
            return None  # a continuation line indented less than the body; leave it to a human
        else:
            dedented.append(line)
    return Plan(((span[0], span[1], "".join(dedented)),))


def master_print(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.master_print(x)` -> print on rank 0 only, and in a single process."""
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    stmt = ctx.expression_statement(match)
    if (
        stmt is None
        or any(k.arg not in ("fd",) for k in call.keywords)
        or any(isinstance(a, ast.Starred) for a in call.args)
    ):
        return None
    parts = [ctx.segment(a) for a in call.args]
    fd = _kwarg(call, "fd")
    if fd is not None:
        parts.append(f"file={ctx.segment(fd.value)}")
    body = f"print({', '.join(parts)})"
    outer = _sole_body_of_rank_if(ctx, stmt)
    if outer is not None:
        return _merge_rank0(ctx, match, outer, stmt, body)
    guard = ctx.render('if int({os}.environ.get("RANK", 0)) == 0:', match)  # right before init too
    if guard is None:
        return None
    plan = ctx.replace_statement(stmt, [guard[0], f"\t{body}"], guard[1])
    return ctx.with_rewrite(plan, stmt, "master_print", guard=guard[0][3:-1])


def rendezvous(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.rendezvous(tag)` on its own line -> a barrier when a process group exists."""
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    stmt = ctx.expression_statement(match)
    if stmt is None or not _only_args(call, {"tag": 0}):
        return None
    guard = ctx.render("if {dist}.is_initialized():", match)
    barrier = ctx.render("{dist}.barrier()", match)
    if guard is None or barrier is None:
        return None
    one_line = _one_line_if(ctx, stmt)
    if one_line is not None:  # `if c: xm.rendezvous(t)` -> `if c and dist.is_initialized(): dist.barrier()`
        test = ctx.segment(one_line.test)
        if isinstance(one_line.test, (ast.BoolOp, ast.IfExp, ast.NamedExpr, ast.Lambda)):
            test = f"({test})"
        condition = guard[0][len("if ") : -1]
        return ctx.replace_statement(one_line, [f"if {test} and {condition}: {barrier[0]}"], guard[1])
    plan = ctx.replace_statement(stmt, [guard[0], f"\t{barrier[0]}"], guard[1])
    return ctx.with_rewrite(plan, stmt, "guarded_call", guard=guard[0][3:-1], call=barrier[0])


def _one_line_if(ctx: FixContext, stmt: ast.stmt) -> ast.If | None:
    """The `if` whose whole body is `stmt`, written on one line with no `else`."""
    parent = ctx.analysis.parent(stmt)
    if not isinstance(parent, ast.If) or parent.body != [stmt] or parent.orelse:
        return None
    if parent.lineno != stmt.lineno or ctx.statement_lines(parent) is None:
        return None
    return parent


def xla_save(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.save(obj, path)` -> `torch.save(_to_cpu(obj), path)` on each host's first rank, then a barrier.

    As torch_xla did: the tensors are copied to the CPU, the file is written where
    `is_master_ordinal(local=not global_master)` holds (everywhere with `master_only=False`),
    and with `sync=True` every rank waits for it.
    """
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    stmt = ctx.expression_statement(match)
    allowed = {"data": 0, "file_or_path": 1, "master_only": 2, "global_master": 3, "sync": 4}
    data, path = _arg(call, "data", 0), _arg(call, "file_or_path", 1)
    if stmt is None or not _only_args(call, allowed) or data is None or path is None:
        return None
    options = [_literal(_arg(call, name, allowed[name])) for name in ("master_only", "global_master", "sync")]
    if any(value not in (None, True, False) for value in options):
        return None  # decided at run time; a human picks the ranks that write
    master_only, global_master, sync = (
        default if value is None else value for value, default in zip(options, (True, False, True))
    )
    helper = _helper_imports(ctx, match, "to_cpu")
    save = ctx.render(
        "{torch}.save(_to_cpu({data}), {path})", match, {"data": ctx.segment(data), "path": ctx.segment(path)}
    )
    variable = "RANK" if global_master else "LOCAL_RANK"
    guard = ctx.render(f'if int({{os}}.environ.get("{variable}", 0)) == 0:', match)
    barrier = ctx.render("if {dist}.is_initialized():", match), ctx.render("{dist}.barrier()", match)
    if helper is None or save is None or guard is None or None in barrier:
        return None
    lines = [guard[0], f"\t{save[0]}"] if master_only else [save[0]]
    imports = helper + save[1] + (guard[1] if master_only else ())
    if sync:
        lines += [barrier[0][0], f"\t{barrier[1][0]}"]  # type: ignore[index]
        imports += barrier[0][1]  # type: ignore[index]
    plan = ctx.replace_statement(stmt, lines, tuple(dict.fromkeys(imports)))
    func = save[0][: save[0].index("(")]
    sync_guard, call = (barrier[0][0][len("if ") : -1], barrier[1][0]) if sync else ("", "")  # type: ignore[index]
    guard_test = guard[0][len("if ") : -1] if master_only else ""
    return ctx.with_rewrite(
        plan, stmt, "xla_save", func=func, helper="_to_cpu", guard=guard_test, sync_guard=sync_guard, barrier=call
    )


_RANK_TEST = re.compile(r"rank|ordinal|master", re.IGNORECASE)


def _merge_rank0(ctx: FixContext, match: Match, outer: ast.If, stmt: ast.stmt, body: str) -> Plan | None:
    """`body` on global rank 0 only, in place of `stmt`, the whole body of `outer`, an `if` that
    already tests a rank (`if xm.is_master_ordinal():`, a `LOCAL_RANK` check): the two guards are
    merged into that `if` rather than nested."""
    guard = ctx.render('int({os}.environ.get("RANK", 0)) == 0', match)  # right before init too
    if guard is None:
        return None
    if _is_global_rank0(ctx, match, outer.test, guard[0]):
        return ctx.replace_statement(stmt, [body])  # the `if` already runs on rank 0 only
    return _merge_into_if(ctx, outer, stmt, guard[0], body, guard[1])


def _merge_into_if(
    ctx: FixContext, outer: ast.If, stmt: ast.stmt, guard: str, body: str, imports: tuple[str, ...]
) -> Plan | None:
    """`if test:\n    stmt` -> `if test and (guard):\n    body`, by two edits that leave the test's
    own text alone (another fix may be rewriting it in the same round)."""
    span = ctx.statement_lines(stmt)
    if span is None:
        return None
    start, end = ctx.src.node_span(outer.test)
    test = outer.test
    low = isinstance(test, (ast.IfExp, ast.Lambda, ast.NamedExpr)) or (
        isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or)
    )
    indent = ctx.src.indent_of(outer.lineno).replace("\t", ctx.analysis.indent_unit())
    tail = f" and {guard}"
    header = len(indent) + len("if ") + (end - start) + 2 * low + len(tail) + 1
    if header > line_length(ctx.src.text):
        newline, unit = ctx.src.newline, ctx.analysis.indent_unit()
        tail = f" and ({newline}{indent}{unit}{guard}{newline}{indent})"
    s_start, s_end = ctx.src.node_span(stmt)
    edits = [(end, end, (")" if low else "") + tail), (s_start, s_end, body)]
    if low:
        edits.insert(0, (start, start, "("))
    return Plan(tuple(edits), imports)


def _is_global_rank0(ctx: FixContext, match: Match, test: ast.expr, guard: str) -> bool:
    """Whether `test` is the rank-0 guard itself, or `xm.is_master_ordinal(local=False)`
    (which NM303 rewrites into that guard)."""
    if " ".join(ctx.segment(test).split()) == guard:
        return True
    if not isinstance(test, ast.Call) or "torch_xla.core.xla_model.is_master_ordinal" not in ctx.analysis.call_names(
        test, match.scope
    ):
        return False
    local = _arg(test, "local", 0)
    return isinstance(local, ast.Constant) and local.value is False and len(test.args) + len(test.keywords) == 1


def _sole_body_of_rank_if(ctx: FixContext, stmt: ast.stmt) -> ast.If | None:
    """The `if` whose only statement is `stmt`, when its test is a rank check and nothing but
    `:` and whitespace lies between them (no comment to lose)."""
    parent = ctx.analysis.parent(stmt)
    if not isinstance(parent, ast.If) or parent.orelse or len(parent.body) != 1 or parent.body[0] is not stmt:
        return None
    if not _RANK_TEST.search(ctx.segment(parent.test)):
        return None
    between = ctx.src.text[ctx.src.node_span(parent.test)[1] : ctx.src.node_span(stmt)[0]]
    return parent if between.strip() == ":" else None


def line_length(text: str) -> int:
    """The file's apparent line length: its longest line, but at least 79 (PEP 8)."""
    return max([79, *(len(line) for line in text.splitlines())])


def checkpoint(ctx: FixContext, match: Match) -> Plan | None:
    """torch_xla's `checkpoint` -> torch's, keeping torch_xla's `use_reentrant=True` default."""
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    rendered = ctx.render("{torch}.utils.checkpoint.checkpoint", match)
    if rendered is None:
        return None
    start, end = ctx.src.node_span(call.func)
    edits = [(start, end, rendered[0])]
    keyword = ""
    if _kwarg(call, "use_reentrant") is None:
        if any(k.arg is None for k in call.keywords):
            return None  # `**options` may hold it
        keyword = "use_reentrant=True"
        edits.append(keyword_insertion(ctx, call, keyword))
    plan = Plan(tuple(edits), rendered[1])
    return ctx.with_rewrite(plan, call, "rename_call", func=rendered[0], keyword=keyword)


_SPAWN_ARGS = {"fn": 0, "args": 1, "nprocs": 2, "start_method": 3}
_LAUNCH_ARGS = {"fn": 0, "args": 1, "start_method": 2, "debug_single_process": 3}


def spawn(ctx: FixContext, match: Match) -> Plan | None:
    """`xmp.spawn(fn, args=(a,))` -> `fn(int(os.environ.get("LOCAL_RANK", 0)), a)` for torchrun.

    torch_xla's collectives needed no process group; TorchNeuron's `torch.distributed` ones do.
    When the file never calls `init_process_group`, the fix starts one before the call, only
    under torchrun (`WORLD_SIZE` set), so a plain `python` run still works as one process.
    """
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    stmt = ctx.expression_statement(match)
    launch = match.qualified.rsplit(".", 1)[-1] == "launch"
    if stmt is None or not _only_args(call, _LAUNCH_ARGS if launch else _SPAWN_ARGS):
        return None
    fn = _arg(call, "fn", 0)
    args = _arg(call, "args", 1)
    if fn is None:
        return None
    rank = ctx.render('int({os}.environ.get("LOCAL_RANK", 0))', match)
    if rank is None:
        return None
    parts = [rank[0]]
    if isinstance(args, (ast.Tuple, ast.List)):
        parts += [ctx.segment(e) for e in args.elts]
    elif args is not None:
        parts.append(f"*{ctx.segment(args)}")
    text = f"{_operand(ctx, fn)}({', '.join(parts)})"
    # nprocs=1 (launch's debug_single_process=True) ran `fn(0, *args)` in this very process:
    # the rewrite does the same. The debug argument itself has no torchrun meaning and goes.
    single = (
        _literal(_arg(call, "debug_single_process", 3)) is True if launch else _literal(_arg(call, "nprocs", 2)) == 1
    )
    safety = Safety.SAFE if single else None
    kind = "launch" if launch else ""
    if _calls_init_process_group(ctx):
        return ctx.with_rewrite(
            ctx.replace(call, text, rank[1], safety=safety), call, "spawn", rank=rank[0], launch=kind
        )
    if not _defined_here(ctx, fn, match):
        # The function may start a process group itself; starting one here would clash.
        if safety is not Safety.SAFE:
            return None
        return ctx.with_rewrite(
            ctx.replace(call, text, rank[1], safety=safety), call, "spawn", rank=rank[0], launch=kind
        )
    guard = ctx.render('if "WORLD_SIZE" in {os}.environ:', match)
    init = ctx.render('{dist}.init_process_group("neuron")', match)
    if guard is None or init is None:
        return None
    imports = tuple(dict.fromkeys(rank[1] + guard[1] + init[1]))
    plan = ctx.replace_statement(stmt, [guard[0], f"\t{init[0]}", text], imports, safety=safety)
    return ctx.with_rewrite(
        plan, stmt, "spawn", rank=rank[0], launch=kind, guard=guard[0][len("if ") : -1], init=init[0]
    )


def _defined_here(ctx: FixContext, fn: ast.expr, match: Match) -> bool:
    """Whether `fn` names a function defined in this file (so its body is known to the check)."""
    if not isinstance(fn, ast.Name):
        return False
    bindings = ctx.analysis.resolver.lookup(fn.id, match.scope)
    return bool(bindings) and all(isinstance(b.node, (ast.FunctionDef, ast.AsyncFunctionDef)) for b in bindings)


def _calls_init_process_group(ctx: FixContext) -> bool:
    """Whether anything called `init_process_group` is called anywhere in the module."""
    for node in ctx.analysis.nodes(ast.Call):
        func = node.func  # type: ignore[attr-defined]
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name == "init_process_group":
            return True
    return False


def autocast(ctx: FixContext, match: Match) -> Plan | None:
    """`torch_xla.amp.autocast(device, ...)` -> `torch.autocast("neuron", ..., dtype=torch.bfloat16)`.

    torch_xla's autocast defaulted to bfloat16 on the device; `torch.autocast("neuron")` has a
    default of its own, so the dtype is always written. Positional arguments become keywords:
    the two signatures order them differently.
    """
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    allowed = {"device": 0, "enabled": 1, "dtype": 2, "cache_enabled": 3}
    if not call.args or not _only_args(call, allowed):
        return None
    keywords, values = [], {}
    for name in ("enabled", "dtype", "cache_enabled"):
        value = _arg(call, name, allowed[name])
        if value is not None:
            keywords.append(f"{name}={{{name}}}")  # filled from `values`: user text is no template
            values[name] = ctx.segment(value)
        elif name == "dtype":
            keywords.append("dtype={torch}.bfloat16")
    accelerator = ctx.analysis.target == "accelerator"  # also autocasts on the CPU now: unsafe
    device = cuda_fixes.ACCEL_TYPE if accelerator else '"neuron"'
    rendered = ctx.render("{torch}.autocast(" + ", ".join([device, *keywords]) + ")", match, values)
    names = ctx.render("{torch}|" + device, match)
    if rendered is None or names is None:
        return None
    plan = ctx.replace(call, rendered[0], rendered[1], safety=Safety.UNSAFE if accelerator else None)
    torch, device_text = names[0].split("|", 1)
    dtype = "" if _arg(call, "dtype", allowed["dtype"]) is not None else f"{torch}.bfloat16"
    return ctx.with_rewrite(plan, call, "autocast", func=f"{torch}.autocast", device=device_text, dtype=dtype)


def remove_import(ctx: FixContext, match: Match) -> Plan | None:
    """Delete a torch_xla import whose names are no longer used where it binds them."""
    stmt = match.node
    assert isinstance(stmt, (ast.Import, ast.ImportFrom))
    if import_uses.import_used(ctx.analysis, stmt) or import_uses.keep_reason(ctx.analysis, stmt) is not None:
        return None
    if len(stmt.names) > 1 and not all(_is_xla(stmt, alias) for alias in stmt.names):
        return None  # a mixed import; a human splits it
    parent = ctx.analysis.parent(stmt)
    if isinstance(parent, ast.Try) and any(s is stmt for s in parent.body):
        if _is_optional_import(ctx, parent):
            return ctx.delete_statement(parent)
        return None  # the import decides which branch runs; removing it changes behaviour
    return ctx.delete_statement(stmt)


def _is_xla(stmt: ast.Import | ast.ImportFrom, alias: ast.alias) -> bool:
    module = stmt.module if isinstance(stmt, ast.ImportFrom) else alias.name
    return module is not None and (module == "torch_xla" or module.startswith("torch_xla."))


def _is_optional_import(ctx: FixContext, node: ast.Try) -> bool:
    """`try: import torch_xla... except ImportError: xm = None` with nothing else depending on it."""
    if node.orelse or node.finalbody:
        return False
    if not all(isinstance(s, (ast.Import, ast.ImportFrom)) and all(_is_xla(s, a) for a in s.names) for s in node.body):
        return False
    resolver = ctx.analysis.resolver
    for handler in node.handlers:
        for stmt in handler.body:
            if isinstance(stmt, ast.Pass):
                continue
            if not isinstance(stmt, ast.Assign) or not all(isinstance(t, ast.Name) for t in stmt.targets):
                return False
            if any(resolver.is_loaded(t.id) for t in stmt.targets):  # type: ignore[attr-defined]
                return False
    return True


def master_ordinal(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.is_master_ordinal()` -> `LOCAL_RANK == 0`; with `local=False`, global rank 0."""
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    if not _only_args(call, {"local": 0}):
        return None
    local = _literal(_arg(call, "local", 0))
    if local is ...:
        return None
    if local is None or local:
        template = 'int({os}.environ.get("LOCAL_RANK", 0)) == 0'
    else:
        template = 'int({os}.environ.get("RANK", 0)) == 0'  # valid before init_process_group too
    rendered = ctx.render(template, match)
    return ctx.replace(call, rendered[0], rendered[1]) if rendered else None


# What `xm.optimizer_step` did, written into the migrated file once: average, then step.
OPTIMIZER_STEP = '''def _optimizer_step(optimizer, **step_args):
    """Average gradients over the default process group, then step (as torch_xla's optimizer_step did)."""
    if {dist}.is_available() and {dist}.is_initialized() and {dist}.get_world_size() > 1:
        world_size = {dist}.get_world_size()
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param.grad is not None:
                    {dist}.all_reduce(param.grad)
                    param.grad.div_(world_size)
    return optimizer.step(**step_args)
'''

# What `xm.save` did before writing: copy every tensor to the CPU.
TO_CPU = '''def _to_cpu(data):
    """Copy the tensors in `data` to the CPU, as torch_xla's save did before writing."""
    if isinstance(data, {torch}.Tensor):
        return data.cpu()
    if isinstance(data, dict):
        return type(data)((k, _to_cpu(v)) for k, v in data.items())
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_to_cpu(v) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(_to_cpu(v) for v in data)
    return data
'''


def _helper_imports(ctx: FixContext, match: Match, name: str) -> tuple[str, ...] | None:
    """The import keys that define helper `name` in the file; () when it is there already.

    None when the helper's name means something else here, or its module's name is taken.
    """
    template, defined, module = HELPERS[name]
    resolver = ctx.analysis.resolver
    bindings = resolver.lookup(defined, resolver.module_scope)
    if bindings:
        ours = len(bindings) == 1 and isinstance(bindings[0].node, ast.FunctionDef)
        docstring = template.split('"""')[1]
        return () if ours and ast.get_docstring(bindings[0].node) == docstring else None
    at_module = dataclasses.replace(match, scope=resolver.module_scope)  # the helper lives there
    rendered = ctx.render("{" + module + "}", at_module)
    if rendered is None:
        return None
    return (f"helper:{name}:{rendered[0]}", *rendered[1])


# A drop-in for MpDeviceLoader, written into the migrated file once. It imports what it needs
# itself, so it works wherever `torch` is (or is not) imported in the file.
DEVICE_LOADER = '''class _DeviceLoader:
    """Iterate `loader`, moving each batch's tensors to `device` (what MpDeviceLoader did)."""

    def __init__(self, loader, device):
        self._loader = loader
        self._device = device

    def __iter__(self):
        for batch in self._loader:
            yield _move_to_device(batch, self._device)

    def __len__(self):
        return len(self._loader)


def _move_to_device(data, device):
    """Move the tensors in `data` to `device`: in sequences, mappings, dataclasses and objects."""
    import collections.abc
    import copy

    import torch

    if isinstance(data, torch.Tensor):
        return data.to(device)
    if isinstance(data, (str, bytes, type)):
        return data
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_move_to_device(v, device) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(_move_to_device(v, device) for v in data)
    if isinstance(data, collections.abc.Mapping):
        moved = {k: _move_to_device(v, device) for k, v in data.items()}
        try:
            result = copy.copy(data)
            result.update(moved)
        except (TypeError, AttributeError):
            return moved  # a read-only mapping
        return result
    if hasattr(data, "__dict__"):
        result = copy.copy(data)
        for name, value in vars(data).items():
            vars(result)[name] = _move_to_device(value, device)
        return result
    return data
'''
# Every helper a fix may write: template, the name it defines, the module it uses. They are
# written in this order (the device loader first, the others by name).
HELPERS: Mapping[str, tuple[str, str, str]] = MappingProxyType(
    {
        "device_loader": (DEVICE_LOADER, "_DeviceLoader", "torch"),
        **dict(
            sorted(
                {
                    "optimizer_step": (OPTIMIZER_STEP, "_optimizer_step", "dist"),
                    "to_cpu": (TO_CPU, "_to_cpu", "torch"),
                    # port_fixes / collective_fixes: utilities and collectives with torch_xla's meaning
                    **{
                        name: (template, helper_code.HELPER_NAMES[name], "torch")
                        for name, template in helper_code.HELPERS.items()
                    },
                }.items()
            )
        ),
    }
)


def helper_text(key: str) -> str | None:
    """The source of the helper a `helper:<name>:<module name>` import key asks for."""
    _, name, module_name = key.split(":", 2)
    if name not in HELPERS:
        return None
    template, _, module = HELPERS[name]
    return template.replace("{" + module + "}", module_name)


_HELPER_NAMES = ("_DeviceLoader", "_move_to_device")
# MpDeviceLoader/ParallelLoader options that only tuned throughput; anything else stops the fix.
_LOADER_TUNING = frozenset(
    {"loader_prefetch_size", "device_prefetch_size", "host_to_device_transfer_threads", "batches_per_execution"}
)


def device_loader(ctx: FixContext, match: Match) -> Plan | None:
    """`pl.MpDeviceLoader(loader, device)` -> `_DeviceLoader(loader, device)`, defined in the file.

    None when the call passes an option the helper cannot keep (`input_sharding=`, `batchdim=`).
    """
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    if len(call.args) > 2 or any(k.arg not in ("loader", "device", "devices", *_LOADER_TUNING) for k in call.keywords):
        return None
    outer: ast.AST | None = call
    if match.qualified.endswith("ParallelLoader"):
        attribute = ctx.analysis.parent(call)
        outer = ctx.analysis.parent(attribute) if isinstance(attribute, ast.Attribute) else None
        if not (
            isinstance(attribute, ast.Attribute)
            and attribute.attr == "per_device_loader"
            and isinstance(outer, ast.Call)
        ):
            return None
        if len(outer.args) != 1 or outer.keywords:
            return None
    loader = _arg(call, "loader", 0)
    device = _arg(outer, "device", 0) if outer is not call else _arg(call, "device", 1)  # type: ignore[arg-type]
    if outer is None or loader is None or device is None or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    resolver = ctx.analysis.resolver
    existing = [resolver.lookup(name, resolver.module_scope) for name in _HELPER_NAMES]
    if any(existing) and not all(_defines_helper(b) for b in existing):
        return None  # the helper names mean something else in this file
    needed = () if all(existing) else ("helper:device_loader:torch",)
    text = f"_DeviceLoader({ctx.segment(loader)}, {ctx.segment(device)})"
    return ctx.replace(outer, text, needed)


def _defines_helper(bindings: list) -> bool:
    return len(bindings) == 1 and isinstance(bindings[0].node, (ast.ClassDef, ast.FunctionDef))


# -- strings, environment, process groups ------------------------------------------------
_STRING = re.compile(r"([rRuU]?)('''|\"\"\"|'|\")(.*)\2", re.S)


def replace_string(ctx: FixContext, match: Match) -> Plan | None:
    """Swap a string literal's value, keeping its prefix and quote style."""
    new = dict(match.extra).get("new")
    node = match.node
    if new is None or not isinstance(node, ast.Constant):
        return None
    found = _STRING.fullmatch(ctx.segment(node))
    if found is None:
        return None  # implicit concatenation or an f-string; a human edits it
    prefix, quote, _ = found.groups()
    plan = ctx.replace(node, f"{prefix}{quote}{new}{quote}")
    call = _autocast_without_dtype(ctx, match)
    if call is None:
        return plan
    # torch_xla's autocast defaulted to bfloat16 on the device, `torch.autocast("neuron")` does not
    dtype = ctx.render("{torch}.bfloat16", match)
    if dtype is None:
        return None
    last = [*call.args, *call.keywords][-1]
    end = ctx.src.node_span(last.value if isinstance(last, ast.keyword) else last)[1]
    return dataclasses.replace(
        plan, edits=(*plan.edits, (end, end, f", dtype={dtype[0]}")), imports=(*plan.imports, *dtype[1])
    )


_AUTOCAST_CALLS = frozenset({"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"})


def _autocast_without_dtype(ctx: FixContext, match: Match) -> ast.Call | None:
    """The `torch.autocast(...)` call whose device type `match` is, when it passes no dtype."""
    parent = ctx.analysis.parent(match.node)
    call = ctx.analysis.parent(parent) if isinstance(parent, ast.keyword) else parent
    if not isinstance(call, ast.Call) or not ctx.analysis.call_names(call, match.scope) & _AUTOCAST_CALLS:
        return None
    if len(call.args) > 1 or any(k.arg in ("dtype", None) for k in call.keywords):
        return None  # a dtype is given (positionally, by keyword, or maybe in **kwargs)
    return call


def remove_env_statement(ctx: FixContext, match: Match) -> Plan | None:
    """Delete a statement whose only effect is to set a torch_xla-era environment variable."""
    if not dict(match.extra).get("stmt"):
        return None
    node = match.node
    stmt = node if isinstance(node, ast.stmt) else ctx.analysis.parent(node)
    return ctx.delete_statement(stmt) if isinstance(stmt, ast.stmt) else None


def process_group(ctx: FixContext, match: Match) -> Plan | None:
    """`init_process_group("xla", init_method="xla://")` -> `init_process_group("neuron")`."""
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    backend = call.args[0] if call.args else next(k.value for k in call.keywords if k.arg == "backend")
    found = _STRING.fullmatch(ctx.segment(backend))
    if found is None:
        return None
    new, imports = f"{found.group(1)}{found.group(2)}neuron{found.group(2)}", ()
    if ctx.analysis.target == "accelerator":  # nccl on CUDA, neuron on Trainium, gloo on the CPU
        rendered = ctx.render(f"{{dist}}.get_default_backend_for_device({cuda_fixes.ACCEL_DEVICE})", match)
        if rendered is None:
            return None
        new, imports = rendered
    edits = [(*ctx.src.node_span(backend), new)]
    method = _kwarg(call, "init_method")
    if method is None:
        return Plan(tuple(edits), imports)
    if _literal(method.value) != "xla://":
        return None
    edits.append(_remove_argument(ctx, call, method))
    # `xla://` also worked in a single process; torchrun's `env://` needs its variables.
    return Plan(tuple(edits), imports, safety=Safety.UNSAFE)


def _remove_argument(ctx: FixContext, call: ast.Call, keyword: ast.keyword) -> tuple[int, int, str]:
    """The edit that deletes one keyword argument and the comma before it."""
    items: list[ast.expr | ast.keyword] = sorted([*call.args, *call.keywords], key=lambda n: (n.lineno, n.col_offset))
    start, end = ctx.src.node_span(keyword)
    position = items.index(keyword)
    if position > 0:
        start = ctx.src.node_span(items[position - 1])[1]
    elif len(items) > 1:
        end = ctx.src.node_span(items[1])[0]
    return start, end, ""


FIXES: Mapping[str, FixFn] = MappingProxyType(
    {
        "remove_statement": remove_statement,
        "sync": sync,
        "xla_device": xla_device,
        "optimizer_step": optimizer_step,
        "step_closure": step_closure,
        "step_context": step_context,
        "master_print": master_print,
        "rendezvous": rendezvous,
        "xla_save": xla_save,
        "checkpoint": checkpoint,
        "spawn": spawn,
        "autocast": autocast,
        "remove_import": remove_import,
        "replace_string": replace_string,
        "remove_env_statement": remove_env_statement,
        "process_group": process_group,
        "master_ordinal": master_ordinal,
        "device_loader": device_loader,
    }
)

__all__ = ["FIXES", "FixContext", "body_of"]
