"""Ranks, printing and saving (NM210, NM301-NM305): rank-0 guards and barriers.

`xm.master_print`, `xm.save`, `xm.rendezvous` and `xm.is_master_ordinal` become explicit
`torch.distributed` rank tests, merged into an existing rank-0 `if` where there is one.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from neuron_migrate.analysis.analyze import body_of
from neuron_migrate.analysis.source import kept_comments
from neuron_migrate.analysis.values import Edit, HelperRequest, Match, Plan
from neuron_migrate.checks.helpers import helper_imports
from neuron_migrate.checks.rank_zero import (
    global_rank0,
    group_exists,
    inside_rank0,
    merge_rank0,
    rank_variable,
    sole_body_of_rank_if,
)
from neuron_migrate.checks.toolkit import DetectorFn, FixContext, FixFn
from neuron_migrate.checks.toolkit_calls import argument, is_default, literal, only_args


def master_print(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.master_print(x)` -> print on rank 0 only, and in a single process."""
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    stmt = ctx.expression_statement(match)
    if stmt is not None and any(k.arg == "local" and _is_true(k.value) for k in call.keywords):
        return _local_print(ctx, match, call, stmt)
    body = _print_of(ctx, match, call)
    if stmt is None or body is None or _prints_xla_report(ctx, match, call):
        return None
    guard = global_rank0(ctx, match, stmt)
    if guard is None:
        return None
    if inside_rank0(ctx, match, stmt, guard[0]):
        return ctx.replace_statement(stmt, [body])  # an enclosing `if` already runs on rank 0 only
    run = _print_run(ctx, match, stmt)
    if len(run) > 1:  # consecutive prints: one guard for them all (each finding gets this plan)
        start, end = ctx.src.node_span(run[0])[0], ctx.src.node_span(run[-1])[1]
        lines = [f"if {guard[0]}:", *(f"\t{_print_of(ctx, match, s.value)}" for s in run)]  # type: ignore[attr-defined]
        indent, unit, newline = ctx.src.indent_of(run[0].lineno), ctx.analysis.indent_unit(), ctx.src.newline
        text = newline.join((indent if i else "") + line.replace("\t", unit) for i, line in enumerate(lines))
        return Plan((Edit(start, end, text),), guard[1])
    outer = sole_body_of_rank_if(ctx, stmt)
    if outer is not None:
        return merge_rank0(ctx, match, outer, stmt, body)
    if any(k.arg == "local" and not _is_false(k.value) for k in call.keywords):
        return None  # `local=` spelled other than `False`: the transform keeps only that spelling
    return ctx.transform(stmt, "neuron_migrate.checks.ranks_cst:master_print", Guard(guard[0]), guard[1])


@dataclass(frozen=True)
class Guard:
    """The options of `ranks_cst.master_print`: the test that guards the new `print`."""

    test: str


@dataclass(frozen=True)
class GuardedCall:
    """The options of `ranks_cst.guarded_call`: the call that replaces the statement, and its guard."""

    test: str
    call: str


@dataclass(frozen=True)
class Save:
    """The options of `ranks_cst.xla_save`: the save function and the helper that copies the data
    to the CPU, the guard of the save (`""`: none) and the barrier after it with its own guard."""

    save: str
    helper: str
    guard: str = ""
    barrier: str = ""
    barrier_guard: str = ""  # "": the process group surely exists


def _local_print(ctx: FixContext, match: Match, call: ast.Call, stmt: ast.stmt) -> Plan | None:
    """`xm.master_print(x, local=True)` -> `if <LOCAL_RANK == 0>:` / `print(x)`: torch_xla printed
    on each host's first process."""
    guard = ctx.render('int({os}.environ.get("LOCAL_RANK", 0)) == 0', match)
    others = [k for k in call.keywords if k.arg != "local"]
    if guard is None or any(k.arg not in ("fd", "flush") for k in others) or _prints_xla_report(ctx, match, call):
        return None
    if any(isinstance(a, ast.Starred) for a in call.args):
        return None
    return ctx.transform(stmt, "neuron_migrate.checks.ranks_cst:master_print", Guard(guard[0]), guard[1])


def _is_false(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def _is_true(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _print_of(ctx: FixContext, match: Match, call: ast.Call) -> str | None:
    """`xm.master_print(a, b, fd=f, flush=True)` as `print(a, b, file=f, flush=True)`; None for
    other arguments (`local=False`, the default, is as if absent)."""
    keywords = [k for k in call.keywords if not (k.arg == "local" and is_default(match, k))]
    if any(k.arg not in ("fd", "flush") for k in keywords) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    parts = [ctx.segment(a) for a in call.args]
    for keyword in keywords:  # `fd=` is print's `file=`; `flush=` is print's own
        parts.append(f"{'file' if keyword.arg == 'fd' else 'flush'}={ctx.segment(keyword.value)}")
    return f"print({', '.join(parts)})"


def _print_run(ctx: FixContext, match: Match, stmt: ast.stmt) -> list[ast.stmt]:
    """The consecutive `xm.master_print(...)` statements around `stmt` in its block, each on a
    line of its own with nothing but blank lines between them (no comment to lose)."""
    block = body_of(ctx.analysis.parent(stmt), stmt)  # type: ignore[arg-type]
    if block is None:
        return [stmt]
    index = next(i for i, s in enumerate(block) if s is stmt)

    def printing(s: ast.stmt) -> bool:
        """A one-line master_print with no comment (a merge keeps neither layout nor comments)."""
        if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)) or s.lineno != s.end_lineno:
            return False
        if ctx.statement_lines(s) is None or kept_comments(ctx.src.line_text(s.lineno)):
            return False
        names = ctx.analysis.call_names(s.value, match.scope)
        if "torch_xla.core.xla_model.master_print" not in names or _print_of(ctx, match, s.value) is None:
            return False
        inner = [n for a in [*s.value.args, *s.value.keywords] for n in ast.walk(a)]
        return not any(  # another fix would edit inside the merged text
            q.startswith("torch_xla")
            for n in inner
            if isinstance(n, (ast.Name, ast.Attribute))
            for q in ctx.analysis.qualified(n, match.scope)
        )

    first = last = index
    while first > 0 and printing(block[first - 1]) and _only_blank_between(ctx, block[first - 1], block[first]):
        first -= 1
    while (
        last + 1 < len(block) and printing(block[last + 1]) and _only_blank_between(ctx, block[last], block[last + 1])
    ):
        last += 1
    return block[first : last + 1]


def _only_blank_between(ctx: FixContext, before: ast.stmt, after: ast.stmt) -> bool:
    end, start = ctx.src.node_span(before)[1], ctx.src.node_span(after)[0]
    return not ctx.src.text[end:start].strip()


# Reports NM207 and NM211 delete where they are printed: `xm.master_print(met.metrics_report())` goes whole.
_XLA_REPORTS = frozenset(
    {
        "torch_xla.debug.metrics.metrics_report",
        "torch_xla.debug.metrics.short_metrics_report",
        "torch_xla._XLAC._xla_metrics_report",
    }
)


def _prints_xla_report(ctx: FixContext, match: Match, call: ast.Call) -> bool:
    return any(
        isinstance(a, ast.Call) and ctx.analysis.qualified(a.func, match.scope) & _XLA_REPORTS for a in call.args
    )


def rendezvous(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.rendezvous(tag)` on its own line -> a barrier when a process group exists."""
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    stmt = ctx.expression_statement(match)
    if stmt is None or not only_args(call, {"tag": 0}, match):  # `payload=b""`, `replicas=[]`: defaults
        return None
    if _next_to_barrier(ctx, match, stmt):
        return ctx.delete_statement(stmt)  # the ranks meet at that barrier already
    guard = ctx.render("{dist}.is_initialized()", match)
    barrier = ctx.render("{dist}.barrier()", match)
    if guard is None or barrier is None:
        return None
    if group_exists(ctx, match, stmt):  # the function started the group: no guard
        return ctx.replace(call, barrier[0], barrier[1])
    one_line = _one_line_if(ctx, stmt)
    if one_line is not None:  # `if c: xm.rendezvous(t)` -> `if c and dist.is_initialized(): dist.barrier()`
        test = ctx.segment(one_line.test)
        if isinstance(one_line.test, (ast.BoolOp, ast.IfExp, ast.NamedExpr, ast.Lambda)):
            test = f"({test})"
        return ctx.replace_statement(one_line, [f"if {test} and {guard[0]}: {barrier[0]}"], guard[1])
    options = GuardedCall(guard[0], barrier[0])
    return ctx.transform(stmt, "neuron_migrate.checks.ranks_cst:guarded_call", options, guard[1])


def _next_to_barrier(ctx: FixContext, match: Match, stmt: ast.stmt) -> bool:
    """Whether the statement right before or after `stmt` in its block is `dist.barrier()`."""
    block = body_of(ctx.analysis.parent(stmt), stmt)  # type: ignore[arg-type]
    if block is None:
        return False
    index = next(i for i, s in enumerate(block) if s is stmt)
    for other in block[max(index - 1, 0) : index] + block[index + 1 : index + 2]:
        value = other.value if isinstance(other, ast.Expr) else None
        if isinstance(value, ast.Call) and not value.args and not value.keywords:
            names = ctx.analysis.call_names(value, match.scope)
            if names & {"torch.distributed.barrier", "torch.distributed.distributed_c10d.barrier"}:
                return True
    return False


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
    data, path = argument(call, "data", 0), argument(call, "file_or_path", 1)
    if stmt is None or not only_args(call, allowed) or data is None or path is None:
        return None
    options = [literal(argument(call, name, allowed[name])) for name in ("master_only", "global_master", "sync")]
    if any(value not in (None, True, False) for value in options):
        return None  # decided at run time; a human picks the ranks that write
    master_only, global_master, sync = (
        default if value is None else value for value, default in zip(options, (True, False, True))
    )
    # A file that gets `_move_to_device` (for its MpDeviceLoader) moves to the CPU with it too.
    loader = _has_device_loader(ctx)
    helper = (HelperRequest("device_loader", "torch"),) if loader else helper_imports(ctx, match, "to_cpu")
    save = ctx.render("{torch}.save", match)
    grouped = group_exists(ctx, match, stmt)  # the function started the group: no env read, no guard
    variable = "RANK" if global_master else "LOCAL_RANK"
    template = (
        "{dist}.get_rank() == 0" if grouped and global_master else f'int({{os}}.environ.get("{variable}", 0)) == 0'
    )
    guard = ctx.render(template, match)
    sync_test, barrier = ctx.render("{dist}.is_initialized()", match), ctx.render("{dist}.barrier()", match)
    if helper is None or save is None or guard is None or sync_test is None or barrier is None:
        return None
    if grouped:
        sync_test = ("", ())
    imports = helper + save[1] + (guard[1] if master_only else ()) + (sync_test[1] if sync else ())
    change = Save(
        save[0],
        "_move_to_device" if loader else "_to_cpu",
        guard[0] if master_only else "",
        barrier[0] if sync else "",
        sync_test[0] if sync else "",
    )
    return ctx.transform(stmt, "neuron_migrate.checks.ranks_cst:xla_save", change, tuple(dict.fromkeys(imports)))


_LOADERS = (
    "torch_xla.distributed.parallel_loader.MpDeviceLoader",
    "torch_xla.distributed.parallel_loader.ParallelLoader",
)


def _has_device_loader(ctx: FixContext) -> bool:
    """Whether the file has, or its loader fixes write, the `_move_to_device` helper (and no
    `_to_cpu` of its own yet)."""
    resolver = ctx.analysis.resolver
    if resolver.lookup("_to_cpu", resolver.module_scope):
        return False
    defined = resolver.lookup("_move_to_device", resolver.module_scope)
    if defined:
        return len(defined) == 1 and isinstance(defined[0].node, ast.FunctionDef)
    return any(
        set(_LOADERS) & ctx.analysis.call_names(call, resolver.module_scope) for call in ctx.analysis.nodes(ast.Call)
    )


def master_ordinal(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.is_master_ordinal()` -> `LOCAL_RANK == 0`; with `local=False`, global rank 0."""
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    if not only_args(call, {"local": 0}):
        return None
    local = literal(argument(call, "local", 0))
    if local is ...:
        return None
    if local is None or local:
        template = 'int({os}.environ.get("LOCAL_RANK", 0)) == 0'
    elif group_exists(ctx, match, call):
        template = "{dist}.get_rank() == 0"
    else:
        template = 'int({os}.environ.get("RANK", 0)) == 0'  # valid before init_process_group too
    target: ast.AST = call
    held = None if local is None or local else rank_variable(ctx, match, call)
    if held is not None:
        template = f"{held} == 0"  # the function holds the global rank already
    parent = ctx.analysis.parent(call)
    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
        target, template = parent, template.replace(" == 0", " != 0")  # not `not (... == 0)`
    rendered = ctx.render(template, match)
    return ctx.replace(target, rendered[0], rendered[1]) if rendered else None


# What a query of torchrun's environment becomes where the process group surely exists.
_GROUP_QUERIES = {"RANK": "{dist}.get_rank()", "WORLD_SIZE": "{dist}.get_world_size()"}
_ENV_READ = re.compile(r"""environ\.get\(\"(\w+)\"""")


def rank_query(ctx: FixContext, match: Match) -> Plan | None:
    """A rank or world-size query -> its torchrun environment variable (`new_call`), right before
    `init_process_group` and after it; `dist.get_rank()` / `dist.get_world_size()` where the
    function started the process group before the query (`group_exists`)."""
    call, entry = match.node, match.entry
    if not isinstance(call, ast.Call) or entry is None or not entry.new_call or call.args or call.keywords:
        return None
    template = entry.new_call
    found = _ENV_READ.search(template)
    if found is not None and found.group(1) in _GROUP_QUERIES and group_exists(ctx, match, call):
        template = _GROUP_QUERIES[found.group(1)]
    rendered = ctx.render(template, match)
    return ctx.replace(call, rendered[0], rendered[1]) if rendered else None


DETECTORS: Mapping[str, tuple[tuple[type, ...], DetectorFn]] = MappingProxyType({})


FIXES: Mapping[str, FixFn] = MappingProxyType(
    {
        "master_print": master_print,
        "rendezvous": rendezvous,
        "xla_save": xla_save,
        "master_ordinal": master_ordinal,
        "rank_query": rank_query,
    }
)
