"""Named rewrites that TOML entries point to with `fix = "..."`.

Each is a pure function: (FixContext, Match) -> Plan | None. None means "a human must decide";
the finding then stays, with its guidance. Rewrites edit only the text they replace, so the
rest of the file keeps its formatting, comments and newlines.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType

from neuron_migrate.analysis.analyze import IMPORTS, Analysis, Match, Plan, body_of
from neuron_migrate.checks import helper_code
from neuron_migrate.model import Safety

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
# Parents under which an expression of any precedence needs no parentheses.
_SAFE_SLOTS = (ast.Assign, ast.AnnAssign, ast.Return, ast.Expr, ast.keyword, ast.If, ast.While, ast.Assert)
_LOW_PRECEDENCE = (ast.IfExp, ast.BoolOp, ast.Compare, ast.BinOp, ast.UnaryOp, ast.Lambda, ast.NamedExpr)


class FixContext:
    """What a fix may ask of the module: text, names to use, and edit builders."""

    def __init__(self, analysis: Analysis) -> None:
        self.analysis = analysis
        self.src = analysis.src

    # -- names --------------------------------------------------------------------------
    def name_for(self, key: str, match: Match) -> tuple[str, bool] | None:
        """The name to use for `torch`, `dist` or `os` at the match, and whether to import it.

        None when the default name means something else here and no alias exists.
        """
        module, _ = IMPORTS[key]
        resolver = self.analysis.resolver

        def imports_module(bindings: list) -> bool:
            return bool(bindings) and all(b.kind == "import" and b.target == module for b in bindings)

        if imports_module(resolver.lookup(key, match.scope)):
            return key, False
        for name, bindings in sorted(resolver.module_scope.bindings.items()):
            if imports_module(bindings) and resolver.lookup(name, match.scope) == bindings:
                return name, False
        if resolver.lookup(key, match.scope) or resolver.lookup(key, resolver.module_scope):
            return None
        if resolver.is_loaded(key):
            return None
        return key, True

    def render(self, template: str, match: Match, values: Mapping[str, str] | None = None) -> tuple[str, tuple[str, ...]] | None:
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
        try:
            expr = ast.parse(text.strip(), mode="eval").body
        except SyntaxError:
            return text
        parent = self.analysis.parent(node)
        if not isinstance(expr, _LOW_PRECEDENCE):
            return text
        if isinstance(parent, _SAFE_SLOTS) or (isinstance(parent, ast.Call) and node in parent.args):
            return text
        if isinstance(parent, ast.BoolOp) and isinstance(expr, (ast.Compare, ast.BinOp, ast.UnaryOp)):
            return text  # comparisons and `not` bind tighter than `and` / `or`
        return f"({text})"

    def replace(self, node: ast.AST, text: str, imports: tuple[str, ...] = (), **kw: object) -> Plan:
        start, end = self.src.node_span(node)
        return Plan(((start, end, self.wrap(node, text)),), imports, **kw)  # type: ignore[arg-type]

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
        return Plan(((span[0], span[1], ""),), deletes=(stmt,), **kw)  # type: ignore[arg-type]

    def replace_statement(self, stmt: ast.stmt, lines: list[str], imports: tuple[str, ...] = (), **kw: object) -> Plan | None:
        """Replace a statement that stands on its own lines with `lines`, indented like it."""
        span = self.statement_lines(stmt)
        if span is None:
            return None
        start, end = self.src.node_span(stmt)
        indent = self.src.indent_of(stmt.lineno)
        unit = self.src.indent_unit()
        newline = self.src.newline
        body = newline.join(indent + line.replace("\t", unit) if i else line.replace("\t", unit) for i, line in enumerate(lines))
        return Plan(((start, end, body),), imports, **kw)  # type: ignore[arg-type]

    def expression_statement(self, match: Match) -> ast.stmt | None:
        """The `Expr` statement when the matched call is used only for its effect."""
        if self.analysis.is_expression_statement(match.node):
            return self.analysis.parent(match.node)  # type: ignore[return-value]
        return None


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
    if index is None or _literal(index) is None:
        rendered = ctx.render('{torch}.device("neuron")', match)
        return ctx.replace(call, rendered[0], rendered[1]) if rendered else None
    rendered = ctx.render('{torch}.device("neuron", {n})', match, {"n": ctx.segment(index)})
    if rendered is None:
        return None
    return ctx.replace(call, rendered[0], rendered[1], safety=Safety.UNSAFE)


def optimizer_step(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.optimizer_step(opt)` -> `opt.step()`; safe only where DDP/FSDP all-reduces gradients."""
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
    text = f"{_operand(ctx, optimizer)}.step({args})"
    safety = Safety.SAFE if _uses_data_parallel_wrapper(ctx) else Safety.UNSAFE
    return ctx.replace(call, text, safety=safety)


def _step_arguments(ctx: FixContext, extra: ast.expr | None) -> str:
    """`optimizer_args={"closure": c}` -> `closure=c`; any other mapping -> `**mapping`."""
    if extra is None:
        return ""
    if isinstance(extra, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str) and k.value.isidentifier() for k in extra.keys):
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


def _uses_data_parallel_wrapper(ctx: FixContext) -> bool:
    """Whether the module wraps a model in DDP/FSDP, which all-reduce gradients themselves."""
    resolver = ctx.analysis.resolver
    for scope in resolver.scope_of.values():
        for bindings in scope.bindings.values():
            if any(b.kind == "import" and b.target.startswith(_DATA_PARALLEL) for b in bindings):
                return True
    return ctx.analysis.calls_anywhere(_DATA_PARALLEL)


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
    return ctx.replace(call, f"{_operand(ctx, closure)}({inner})")


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
    if any(isinstance(n, ast.Constant) and isinstance(n.value, (str, bytes)) and n.lineno != n.end_lineno for n in ast.walk(stmt)):
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
    if stmt is None or any(k.arg not in ("fd",) for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    parts = [ctx.segment(a) for a in call.args]
    fd = _kwarg(call, "fd")
    if fd is not None:
        parts.append(f"file={ctx.segment(fd.value)}")
    guard = ctx.render("if not {dist}.is_initialized() or {dist}.get_rank() == 0:", match)
    if guard is None:
        return None
    return ctx.replace_statement(stmt, [guard[0], f"\tprint({', '.join(parts)})"], guard[1])


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
    return ctx.replace_statement(stmt, [guard[0], f"\t{barrier[0]}"], guard[1])


def _one_line_if(ctx: FixContext, stmt: ast.stmt) -> ast.If | None:
    """The `if` whose whole body is `stmt`, written on one line with no `else`."""
    parent = ctx.analysis.parent(stmt)
    if not isinstance(parent, ast.If) or parent.body != [stmt] or parent.orelse:
        return None
    if parent.lineno != stmt.lineno or ctx.statement_lines(parent) is None:
        return None
    return parent


def xla_save(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.save(obj, path)` -> `torch.save` on rank 0 (tensors are no longer moved to the CPU)."""
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    stmt = ctx.expression_statement(match)
    if stmt is None or not _only_args(call, {"data": 0, "file_or_path": 1}) or len(call.args) + len(call.keywords) != 2:
        return None
    data = ctx.segment(_arg(call, "data", 0))  # type: ignore[arg-type]
    path = ctx.segment(_arg(call, "file_or_path", 1))  # type: ignore[arg-type]
    guard = ctx.render("if not {dist}.is_initialized() or {dist}.get_rank() == 0:", match)
    save = ctx.render("{torch}.save({data}, {path})", match, {"data": data, "path": path})
    if guard is None or save is None:
        return None
    return ctx.replace_statement(stmt, [guard[0], f"\t{save[0]}"], guard[1] + save[1])


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
    if _kwarg(call, "use_reentrant") is None:
        inner = ctx.args_text(call)
        if "#" in inner or any(k.arg is None for k in call.keywords):
            return None
        content_end = ctx.src.node_span(call)[1] - 1 - (len(inner) - len(inner.rstrip()))
        stripped = inner.strip()
        sep = "" if not stripped else " " if stripped.endswith(",") else ", "
        edits.append((content_end, content_end, f"{sep}use_reentrant=True"))
    return Plan(tuple(edits), rendered[1])


def spawn(ctx: FixContext, match: Match) -> Plan | None:
    """`xmp.spawn(fn, args=(a,))` -> `fn(int(os.environ.get("LOCAL_RANK", 0)), a)` for torchrun."""
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    if ctx.expression_statement(match) is None or not _only_args(call, {"fn": 0, "args": 1, "nprocs": 2, "start_method": 3}):
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
    return ctx.replace(call, f"{_operand(ctx, fn)}({', '.join(parts)})", rank[1])


def autocast(ctx: FixContext, match: Match) -> Plan | None:
    """`torch_xla.amp.autocast(device, ...)` -> `torch.autocast("neuron", ...)`."""
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    if not call.args or isinstance(call.args[0], ast.Starred):
        return None
    rest = [ctx.segment(a) for a in call.args[1:]] + [ctx.segment(k) for k in call.keywords]
    rendered = ctx.render("{torch}.autocast({args})", match, {"args": ", ".join(['"neuron"', *rest])})
    return ctx.replace(call, rendered[0], rendered[1]) if rendered else None


def remove_import(ctx: FixContext, match: Match) -> Plan | None:
    """Delete a torch_xla import whose names are no longer used."""
    stmt = match.node
    assert isinstance(stmt, (ast.Import, ast.ImportFrom))
    resolver = ctx.analysis.resolver
    bound = [alias.asname or alias.name.split(".")[0] for alias in stmt.names]
    if any(resolver.is_loaded(name) for name in bound):
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
        template = "not {dist}.is_initialized() or {dist}.get_rank() == 0"
    rendered = ctx.render(template, match)
    return ctx.replace(call, rendered[0], rendered[1]) if rendered else None


# A drop-in for MpDeviceLoader, written into the migrated file once.
DEVICE_LOADER = '''class _DeviceLoader:
    """Iterate `loader`, moving each batch's tensors to `device` (what MpDeviceLoader did)."""

    def __init__(self, loader, device):
        self.loader = loader
        self.device = device

    def __iter__(self):
        for batch in self.loader:
            yield _move_to_device(batch, self.device)

    def __len__(self):
        return len(self.loader)


def _move_to_device(data, device):
    if isinstance(data, {torch}.Tensor):
        return data.to(device)
    if isinstance(data, dict):
        return type(data)((k, _move_to_device(v, device)) for k, v in data.items())
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_move_to_device(v, device) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(_move_to_device(v, device) for v in data)
    return data
'''
_HELPER_NAMES = ("_DeviceLoader", "_move_to_device")
# Code a fix writes into the file once (import key `helper:<name>:<torch>`), by name.
HELPERS: Mapping[str, str] = MappingProxyType({"device_loader": DEVICE_LOADER, **helper_code.HELPERS})


def device_loader(ctx: FixContext, match: Match) -> Plan | None:
    """`pl.MpDeviceLoader(loader, device)` -> `_DeviceLoader(loader, device)`, defined in the file."""
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    outer: ast.AST | None = call
    if match.qualified.endswith("ParallelLoader"):
        attribute = ctx.analysis.parent(call)
        outer = ctx.analysis.parent(attribute) if isinstance(attribute, ast.Attribute) else None
        if not (isinstance(attribute, ast.Attribute) and attribute.attr == "per_device_loader" and isinstance(outer, ast.Call)):
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
    torch_name = ctx.render("{torch}", match)
    if torch_name is None:
        return None
    needed = () if all(existing) else (f"helper:device_loader:{torch_name[0]}", *torch_name[1])
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
    return ctx.replace(node, f"{prefix}{quote}{new}{quote}")


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
    edits = [(*ctx.src.node_span(backend), f"{found.group(1)}{found.group(2)}neuron{found.group(2)}")]
    method = _kwarg(call, "init_method")
    if method is None:
        return Plan(tuple(edits))
    if _literal(method.value) != "xla://":
        return None
    edits.append(_remove_argument(ctx, call, method))
    # `xla://` also worked in a single process; torchrun's `env://` needs its variables.
    return Plan(tuple(edits), safety=Safety.UNSAFE)


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
