"""Launching and process groups (NM309, NM310): `xmp.spawn` / `torch_xla.launch`, `xla` backends.

The spawned function runs once per torchrun process; `init_process_group("xla")` and
`init_method="xla://"` become the `neuron` backend.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.index import needles, resolved_only
from neuron_migrate.analysis.names import Scope
from neuron_migrate.analysis.values import Edit, Match, Plan, Request
from neuron_migrate.catalogue import MapEntry, RuleSpec
from neuron_migrate.checks import messages
from neuron_migrate.checks.devices import string_source, variable_safety
from neuron_migrate.checks.toolkit import DetectorFn, FixContext, FixFn
from neuron_migrate.checks.toolkit_calls import (
    ACCEL_DEVICE,
    STRING_LITERAL,
    argument,
    entry_for,
    keyword_of,
    literal,
    only_args,
    string_value,
)
from neuron_migrate.model import Safety

# -- process groups ------------------------------------------------------------------------
_INIT_PG = {"torch.distributed.init_process_group", "torch.distributed.distributed_c10d.init_process_group"}


_NEW_GROUP = {"torch.distributed.new_group", "torch.distributed.distributed_c10d.new_group"}


@resolved_only
@needles(fragments=("backend",), names=_INIT_PG | _NEW_GROUP)  # an Assign to a `*backend*` name
def process_group(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`init_process_group("xla", init_method="xla://")`, `new_group(backend="xla")`, and a backend
    held in a constant, class attribute or default argument."""
    if isinstance(node, ast.Assign):
        yield from _exported_backend(rule, analysis, node, scope)
        return
    assert isinstance(node, ast.Call)
    names = analysis.call_names(node, scope)
    if names & _INIT_PG:
        backend = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "backend"), None)
    elif names & _NEW_GROUP:
        backend = next(
            (k.value for k in node.keywords if k.arg == "backend"), node.args[2] if len(node.args) > 2 else None
        )
    else:
        return
    text = string_value(backend)
    if text is None or names & _NEW_GROUP:
        source = backend if text is not None else _backend_source(analysis, backend, scope)
        # `"xla" if on_xla else "gloo"`, passed or held in a variable: each "xla" branch is a backend
        sources: list[ast.Constant] = (
            [source] if isinstance(source, ast.Constant) else _branch_strings(analysis, backend, scope)
        )
        for source in sources:
            if source.value != "xla":
                continue
            variable = text is None and not isinstance(backend, ast.IfExp)
            safety = variable_safety(analysis, backend) if variable else None  # type: ignore[arg-type]
            xla_entry = MapEntry(old="xla", fix="replace_string", safety=safety)
            yield Match(rule, source, scope, xla_entry, "xla", "xla", (("new", "neuron"),))
        method = next((k for k in node.keywords if k.arg == "init_method"), None)
        xla = any(s.value == "xla" for s in sources)
        if xla and text is None and method is not None and string_value(method.value) == "xla://":
            yield Match(rule, method, scope, _XLA_INIT_METHOD, "xla://", "xla://")
        return
    entry = entry_for(rule, text)
    if entry is None and "xla" in text.split(",")[-1]:
        entry = MapEntry(old=text, message="Rewrite the backend `{old}` as `cpu:gloo,neuron:neuron`", safety=None)
        entry = replace(entry, fix=None)
    if entry is not None:
        yield Match(rule, node, scope, entry, text, text)


# `init_method="xla://"` next to a backend held in a variable (whose own fix is elsewhere).
_XLA_INIT_METHOD = MapEntry(
    old="xla://",
    message='Remove `init_method="xla://"`; torchrun\'s default `env://` rendezvous replaces it',
    fix="drop_keyword",
    safety=Safety.UNSAFE,
)


def _branch_strings(analysis: Analysis, node: ast.AST | None, scope: Scope) -> list[ast.Constant]:
    """The strings a conditional expression can yield (`"xla" if on_xla else "gloo"`), written in
    place or assigned once to the name `node`; [] when a branch is anything but a string or
    another such expression."""
    if isinstance(node, ast.Name):
        bindings = analysis.resolver.lookup(node.id, scope)
        target = bindings[0].node if len(bindings) == 1 else None
        assign = next((a for a in analysis.nodes(ast.Assign) if a.targets == [target]), None)
        if assign is None:
            return []
        node = assign.value
    if not isinstance(node, ast.IfExp):
        return []
    found: list[ast.Constant] = []
    for branch in (node.body, node.orelse):
        if isinstance(branch, ast.IfExp):
            inner = _branch_strings(analysis, branch, scope)
            if not inner:
                return []
            found += inner
        elif isinstance(branch, ast.Constant) and string_value(branch) is not None:
            found.append(branch)
        else:
            return []
    return found


def _exported_backend(rule: RuleSpec, analysis: Analysis, node: ast.Assign, scope: Scope) -> Iterator[Match]:
    """`dist_backend = "xla"` in a class body or at module level, named as a backend and read
    nowhere in this file: another module passes it to `init_process_group` (unsafe: unseen)."""
    if scope.parent is not None and not scope.is_class:
        return
    target = node.targets[0] if len(node.targets) == 1 else None
    if not isinstance(target, ast.Name) or "backend" not in target.id.lower() or string_value(node.value) != "xla":
        return
    if any(_reads(n, target.id) for n in analysis.nodes(ast.Name, ast.Attribute)):
        return  # read here: the call that reads it decides
    entry = MapEntry(old="xla", fix="replace_string", safety=Safety.UNSAFE)
    yield Match(rule, node.value, scope, entry, "xla", "xla", (("new", "neuron"),))


def _reads(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.Name):
        return node.id == name and isinstance(node.ctx, ast.Load)
    return isinstance(node, ast.Attribute) and node.attr == name


def _backend_source(analysis: Analysis, backend: ast.AST | None, scope: Scope) -> ast.Constant | None:
    return string_source(analysis, backend, scope) if backend is not None else None


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
    # nprocs=1 (launch's debug_single_process=True) ran `fn(0, *args)` in this very process:
    # the rewrite does the same. The debug argument itself has no torchrun meaning and goes.
    single = messages.single_process(match)
    if not single and not messages.launches_program(ctx.analysis, match):
        return None  # a library's spawn: its caller waits for the workers; torchrun cannot stand in
    stmt = ctx.expression_statement(match)
    launch = match.qualified.rsplit(".", 1)[-1] == "launch"
    if stmt is None or not only_args(call, _LAUNCH_ARGS if launch else _SPAWN_ARGS, match):  # `join=True`: default
        return None
    fn = argument(call, "fn", 0)
    rank = ctx.render('int({os}.environ.get("LOCAL_RANK", 0))', match)
    if fn is None or rank is None:
        return None
    safety = Safety.SAFE if single else None
    if _calls_init_process_group(ctx):
        plan = ctx.transform(call, _SPAWN_TRANSFORM, Spawn(rank[0], launch), rank[1], safety)
        conditional = _only_conditional_init(ctx, fn, match)
        if conditional is not None and plan is not None:
            plan = _with_process_group_after(ctx, match, plan, conditional)
            plan = _destroyed_after(ctx, match, plan, stmt) if plan is not None else None
        return plan
    if not _defined_here(ctx, fn, match):
        # The function may start a process group itself; starting one here would clash.
        if safety is not Safety.SAFE:
            return None
        return ctx.transform(call, _SPAWN_TRANSFORM, Spawn(rank[0], launch), rank[1], safety)
    guard = ctx.render('"WORLD_SIZE" in {os}.environ', match)
    init = ctx.render('{dist}.init_process_group("neuron")', match)
    destroy = ctx.render("{dist}.destroy_process_group()", match)
    if guard is None or init is None or destroy is None:
        return None
    imports = tuple(dict.fromkeys(rank[1] + guard[1] + init[1]))
    ends = "" if _calls(ctx, "destroy_process_group") else destroy[0]  # the group it starts ends with the run
    options = Spawn(rank[0], launch, guard[0], init[0], ends)
    return ctx.transform(stmt, _SPAWN_TRANSFORM, options, imports, safety)


_SPAWN_TRANSFORM = "neuron_migrate.checks.launch_cst:spawn"


@dataclass(frozen=True)
class Spawn:
    """The options of `launch_cst.spawn`: the rank the function is called with, whether the call is
    `torch_xla.launch` (whose arguments are named differently), and the guard and process group
    start put before the statement (`""`: none)."""

    rank: str
    launch: bool = False
    guard: str = ""
    init: str = ""
    destroy: str = ""  # after the call, under the same guard: the process group ends with the run


def _defined_here(ctx: FixContext, fn: ast.expr, match: Match) -> bool:
    """Whether `fn` names a function defined in this file (so its body is known to the check)."""
    if not isinstance(fn, ast.Name):
        return False
    bindings = ctx.analysis.resolver.lookup(fn.id, match.scope)
    return bool(bindings) and all(isinstance(b.node, (ast.FunctionDef, ast.AsyncFunctionDef)) for b in bindings)


def _with_process_group_after(ctx: FixContext, match: Match, plan: Plan, holder: ast.stmt) -> Plan | None:
    """`plan`, which also starts a process group after `holder` (the launched function's
    statement whose `init_process_group` runs only behind a condition, such as a flag), under
    torchrun and unless one exists: else the ranks would train independently."""
    guard = ctx.render('if "WORLD_SIZE" in {os}.environ and not {dist}.is_initialized():', match)
    init = ctx.render('{dist}.init_process_group("neuron")', match)
    span = ctx.statement_lines(holder)
    if guard is None or init is None or span is None:
        return None
    indent = ctx.src.indent_of(holder.lineno)
    unit, newline = ctx.analysis.indent_unit(), ctx.src.newline
    inserted = f"{indent}{guard[0]}{newline}{indent}{unit}{init[0]}{newline}"
    imports = tuple(dict.fromkeys(plan.imports + guard[1] + init[1]))
    return replace(plan, edits=(*plan.edits, Edit(span[1], span[1], inserted)), imports=imports)


def _destroyed_after(ctx: FixContext, match: Match, plan: Plan, stmt: ast.stmt | None) -> Plan | None:
    """`plan`, which also destroys the process group (the one `_with_process_group_after` starts
    in the launched function, or its own) right after `stmt`, the launch, when one exists then:
    the program's main path ends there. Unchanged when the file destroys a group itself or the
    launch is not a statement of its own."""
    span = ctx.statement_lines(stmt) if stmt is not None else None
    if stmt is None or span is None or _calls(ctx, "destroy_process_group"):
        return plan
    guard = ctx.render("if {dist}.is_initialized():", match)
    destroy = ctx.render("{dist}.destroy_process_group()", match)
    if guard is None or destroy is None:
        return plan
    indent, unit, newline = ctx.src.indent_of(stmt.lineno), ctx.analysis.indent_unit(), ctx.src.newline
    inserted = f"{indent}{guard[0]}{newline}{indent}{unit}{destroy[0]}{newline}"
    imports = tuple(dict.fromkeys(plan.imports + guard[1] + destroy[1]))
    return replace(plan, edits=(*plan.edits, Edit(span[1], span[1], inserted)), imports=imports)


def _only_conditional_init(ctx: FixContext, fn: ast.expr, match: Match) -> ast.stmt | None:
    """The statement of the launched function's body that holds its `init_process_group`, when
    every call of that name in the file sits in that function under a condition and none on its
    own top level; else None (the process group is known to start, or is started elsewhere)."""
    if not isinstance(fn, ast.Name) or not _defined_here(ctx, fn, match):
        return None
    function = ctx.analysis.resolver.lookup(fn.id, match.scope)[0].node
    assert isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
    holders: list[ast.stmt] = []
    for init in ctx.analysis.nodes(ast.Call):
        if _call_name(init) != "init_process_group":
            continue
        current: ast.AST | None = ctx.analysis.parent(init)
        below: ast.AST = init
        while current is not None and current is not function:
            current, below = ctx.analysis.parent(current), current  # type: ignore[assignment]
        if current is None or not isinstance(below, ast.stmt) or below not in function.body:
            return None  # outside the function: not ours to judge
        if isinstance(below, ast.Expr) and below.value is init:
            return None  # on the function's top level: the process group starts
        if isinstance(below, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return None
        holders.append(below)
    return holders[-1] if holders else None


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _calls_init_process_group(ctx: FixContext) -> bool:
    """Whether anything called `init_process_group` is called anywhere in the module."""
    return _calls(ctx, "init_process_group")


def _calls(ctx: FixContext, name: str) -> bool:
    """Whether anything called `name` is called anywhere in the module."""
    return any(_call_name(node) == name for node in ctx.analysis.nodes(ast.Call))


def fix_process_group(ctx: FixContext, match: Match) -> Plan | None:
    """`init_process_group("xla", init_method="xla://")` -> `init_process_group("neuron")`."""
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    backend = call.args[0] if call.args else next(k.value for k in call.keywords if k.arg == "backend")
    found = STRING_LITERAL.fullmatch(ctx.segment(backend))
    if found is None:
        return None
    imports: tuple[Request, ...] = ()
    new = f"{found.group(1)}{found.group(2)}neuron{found.group(2)}"
    if ctx.analysis.target == "accelerator":  # nccl on CUDA, neuron on Trainium, gloo on the CPU
        rendered = ctx.render(f"{{dist}}.get_default_backend_for_device({ACCEL_DEVICE})", match)
        if rendered is None:
            return None
        new, imports = rendered
    edits = [Edit(*ctx.src.node_span(backend), new)]
    method = keyword_of(call, "init_method")
    merged = _merged_branches(ctx, match, call) if ctx.analysis.target != "accelerator" else None
    if merged is not None:
        return merged
    if method is None:
        return Plan(tuple(edits), imports)
    if literal(method.value) not in ("xla://", "pjrt://"):
        return None
    edits.append(_remove_argument(ctx, call, method))
    # `xla://` (and `pjrt://`) also worked in a single process; torchrun's `env://` needs its variables.
    return Plan(tuple(edits), imports, safety=Safety.UNSAFE)


def _merged_branches(ctx: FixContext, match: Match, call: ast.Call) -> Plan | None:
    """`if is_pjrt_device(): init_process_group("xla", init_method="pjrt://") else: init_process_group("xla")`
    -> `init_process_group("neuron")`: both branches now start the same group, so the `if` goes.

    Only when each branch is that one call, with the backend `"xla"` or `"neuron"` and at most an
    XLA `init_method`, and the condition is a query a migration may drop: it reads names only, or
    calls (with no arguments) a torch_xla function, a predicate (`requires_init_pg_override()`) or a
    function of this file that only returns a value. Unsafe, as
    `init_method` goes (torchrun's `env://` needs its variables).
    """
    stmt = ctx.analysis.parent(call)
    branch = ctx.analysis.parent(stmt) if isinstance(stmt, ast.Expr) else None
    if not isinstance(branch, ast.If) or not all(len(b) == 1 for b in (branch.body, branch.orelse)):
        return None
    calls = [s.value if isinstance(s, ast.Expr) else None for s in (*branch.body, *branch.orelse)]
    if not all(isinstance(c, ast.Call) and _plain_xla_group(ctx, match, c) for c in calls):
        return None
    if not _droppable_test(ctx, match, branch.test) or ctx.src.line_text(branch.lineno).lstrip().startswith("elif"):
        return None
    backend = call.args[0] if call.args else next(k.value for k in call.keywords if k.arg == "backend")
    func, quoted = ctx.segment(call.func), STRING_LITERAL.fullmatch(ctx.segment(backend))
    if quoted is None:
        return None  # never: fix_process_group matched this literal before calling us
    text = f"{func}({quoted.group(1)}{quoted.group(2)}neuron{quoted.group(2)})"
    return ctx.replace_statement(branch, [text], safety=Safety.UNSAFE)


def _plain_xla_group(ctx: FixContext, match: Match, call: ast.Call) -> bool:
    if not (ctx.analysis.call_names(call, match.scope) & _INIT_PG) or len(call.args) > 1:
        return False
    backend = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "backend"), None)
    others = [k for k in call.keywords if k.arg not in ("backend", "init_method")]
    method = keyword_of(call, "init_method")
    return (
        string_value(backend) in ("xla", "neuron")
        and not others
        and (method is None or literal(method.value) in ("xla://", "pjrt://"))
    )


_PREDICATES = ("is_", "has_", "requires_", "using_")


def _droppable_test(ctx: FixContext, match: Match, test: ast.expr) -> bool:
    """A condition whose evaluation a migration may drop: names and constants, or a query call."""
    if isinstance(test, ast.UnaryOp):
        test = test.operand
    if isinstance(test, (ast.Name, ast.Attribute, ast.Constant)):
        return True
    if not isinstance(test, ast.Call) or test.args or test.keywords:
        return False
    if any(n == "torch_xla" or n.startswith("torch_xla.") for n in ctx.analysis.qualified(test.func, match.scope)):
        return True
    name = test.func.attr if isinstance(test.func, ast.Attribute) else getattr(test.func, "id", "")
    if name.startswith(_PREDICATES):
        return True  # `requires_init_pg_override()`, `is_pjrt_device()`: a question about the platform
    bindings = ctx.analysis.resolver.lookup(test.func.id, match.scope) if isinstance(test.func, ast.Name) else []
    node = bindings[0].node if len(bindings) == 1 else None
    body = (
        [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if isinstance(node, ast.FunctionDef)
        else []
    )
    return len(body) == 1 and isinstance(body[0], ast.Return)


def drop_keyword(ctx: FixContext, match: Match) -> Plan | None:
    """Delete the keyword argument `match` is (`init_method="xla://"`), and the comma before it."""
    keyword = match.node
    call = ctx.analysis.parent(keyword)
    if not isinstance(keyword, ast.keyword) or not isinstance(call, ast.Call):
        return None
    return Plan((_remove_argument(ctx, call, keyword),))


def _remove_argument(ctx: FixContext, call: ast.Call, keyword: ast.keyword) -> Edit:
    """The edit that deletes one keyword argument and the comma before it."""
    items: list[ast.expr | ast.keyword] = sorted([*call.args, *call.keywords], key=lambda n: (n.lineno, n.col_offset))
    start, end = ctx.src.node_span(keyword)
    position = items.index(keyword)
    if position > 0:
        start = ctx.src.node_span(items[position - 1])[1]
    elif len(items) > 1:
        end = ctx.src.node_span(items[1])[0]
    return Edit(start, end, "")


DETECTORS: Mapping[str, tuple[tuple[type, ...], DetectorFn]] = MappingProxyType(
    {
        "process_group": ((ast.Call, ast.Assign), process_group),
    }
)


FIXES: Mapping[str, FixFn] = MappingProxyType(
    {
        "spawn": spawn,
        "process_group": fix_process_group,
        "drop_keyword": drop_keyword,
    }
)
