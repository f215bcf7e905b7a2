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
from neuron_migrate.checks.backend_labels import (
    COMPARED,
    branch_strings,
    exported_backend,
    foreign_comparisons,
    label_comparisons,
    renamed_label,
)
from neuron_migrate.checks.devices import string_source, variable_safety
from neuron_migrate.checks.launch_groups import (
    calls,
    calls_init_process_group,
    defined_here,
    destroyed_after,
    only_conditional_init,
    with_process_group_after,
)
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
    """`init_process_group("xla", init_method="xla://")`, `new_group(backend="xla")`, a backend
    held in a constant, class attribute or default argument, and the tests of such a holder."""
    if isinstance(node, ast.Assign):
        yield from exported_backend(rule, analysis, node, scope)
        return
    if isinstance(node, ast.Compare):
        for label in foreign_comparisons(analysis, node):
            yield renamed_label(rule, label, scope, Safety.UNSAFE, COMPARED)
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
            [source] if isinstance(source, ast.Constant) else branch_strings(analysis, backend, scope)
        )
        for source in sources:
            if source.value != "xla":
                continue
            variable = text is None and not isinstance(backend, ast.IfExp)
            safety = variable_safety(analysis, backend) if variable else None  # type: ignore[arg-type]
            yield renamed_label(rule, source, scope, safety)
            for compared in label_comparisons(analysis, backend) if variable and backend is not None else ():
                yield renamed_label(rule, compared, scope, safety, COMPARED)  # `if backend == "xla":` reads it
        method = next((k for k in node.keywords if k.arg == "init_method"), None)
        xla = any(s.value == "xla" for s in sources)
        if xla and text is None and method is not None and string_value(method.value) == "xla://":
            yield Match(rule, method, scope, _XLA_INIT_METHOD, "xla://", "xla://")
        return
    entry = entry_for(rule, text)
    method = keyword_of(node, "init_method")
    if entry is not None and method is not None and _spawned_by_hand(rule, analysis):
        entry = replace(entry, fix=None, message=_KEEP_INIT_METHOD)
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


def _backend_source(analysis: Analysis, backend: ast.AST | None, scope: Scope) -> ast.Constant | None:
    return string_source(analysis, backend, scope) if backend is not None else None


# The init of a worker that `torch.multiprocessing.spawn` starts (a library's spawn, NM309): torchrun's
# `env://` has no variables there, so dropping `init_method` would leave the worker unable to start.
_KEEP_INIT_METHOD = (
    'Pass `"neuron", init_method="tcp://HOST:PORT", rank=index, world_size=nprocs` here;'
    " workers spawned by hand have no torchrun variables"
)
_SPAWNS = frozenset(
    {"torch_xla.distributed.xla_multiprocessing.spawn", "torch_xla.launch", "torch_xla.torch_xla.launch"}
)


def _spawned_by_hand(rule: RuleSpec, analysis: Analysis) -> bool:
    """Whether the file's workers start from a spawn that stays a spawn (a library's, NM309)."""
    scope = analysis.resolver.module_scope
    for call in analysis.nodes(ast.Call):
        names = analysis.call_names(call, scope) & _SPAWNS
        if names:
            spawn = Match(rule, call, scope, None, min(names))
            if not messages.single_process(spawn) and not messages.launches_program(analysis, spawn):
                return True
    return False


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
    if calls_init_process_group(ctx):
        plan = ctx.transform(call, _SPAWN_TRANSFORM, Spawn(rank[0], launch), rank[1], safety)
        conditional = only_conditional_init(ctx, fn, match)
        if conditional is not None and plan is not None:
            plan = with_process_group_after(ctx, match, plan, conditional)
            plan = destroyed_after(ctx, match, plan, stmt) if plan is not None else None
        return plan
    if not defined_here(ctx, fn, match):
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
    ends = "" if calls(ctx, "destroy_process_group") else destroy[0]  # the group it starts ends with the run
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
        "process_group": ((ast.Call, ast.Assign, ast.Compare), process_group),
    }
)


FIXES: Mapping[str, FixFn] = MappingProxyType(
    {
        "spawn": spawn,
        "process_group": fix_process_group,
        "drop_keyword": drop_keyword,
    }
)
