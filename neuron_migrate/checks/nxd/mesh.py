"""NxD's process-group state (NM320) -> one module-level `DeviceMesh`, `_MESH`.

`parallel_state.initialize_model_parallel(tensor_model_parallel_size=tp)` becomes
`_MESH = init_device_mesh("neuron", (dist.get_world_size() // tp, tp), mesh_dim_names=("dp", "tp"))`
(with a leading `pp` dimension when pipeline parallelism is asked for): tensor parallelism is the
last, fastest dimension, NxD's rank order. The getters then read the mesh:
`get_tensor_model_parallel_size()` -> `_MESH["tp"].size()`, `..._rank()` -> `.get_local_rank()`,
`..._group()` -> `.get_group()`. Both need the other: a getter is rewritten only in the file that
builds the mesh, and the mesh only where every getter of its function can follow it.
"""

from __future__ import annotations

import ast

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.names import Scope
from neuron_migrate.analysis.values import Match, Plan
from neuron_migrate.catalogue import RuleSpec
from neuron_migrate.checks.toolkit import FixContext
from neuron_migrate.checks.toolkit_calls import ACCEL_TYPE, argument, entry_for, line_length, literal, operand
from neuron_migrate.signatures import default_argument

MESH = "_MESH"
INIT = frozenset(
    {
        "neuronx_distributed.parallel_layers.parallel_state.initialize_model_parallel",
        "neuronx_distributed.parallel_layers.initialize_model_parallel",
    }
)
_STATE = "neuronx_distributed.parallel_layers.parallel_state."
_DIMS = {"tensor_model_parallel": "tp", "data_parallel": "dp", "pipeline_model_parallel": "pp"}
_METHODS = {"size": "size()", "rank": "get_local_rank()", "group": "get_group()", "replica_groups": "get_group()"}
_MESH_FACTORY = "torch.distributed.device_mesh.init_device_mesh"
# The collectives whose fix takes a process group for `groups=` (checks/collectives.py).
GROUP_TAKERS = frozenset({"torch_xla.core.xla_model.all_reduce"})


def getter_parts(qualified: str) -> tuple[str, str] | None:
    """`...get_data_parallel_rank` -> ("dp", "get_local_rank()"); None for another name."""
    if not qualified.startswith(_STATE + "get_"):
        return None
    rest = qualified[len(_STATE + "get_") :]
    for prefix, dim in _DIMS.items():
        if rest.startswith(prefix + "_") and rest[len(prefix) + 1 :] in _METHODS:
            return dim, _METHODS[rest[len(prefix) + 1 :]]
    return None


def scope_at(analysis: Analysis, node: ast.AST) -> Scope:
    """The scope of the function (or module) whose body holds `node`."""
    return analysis.resolver.scope_for(analysis.owner(node))


def _find_init_calls(analysis: Analysis) -> list[ast.Call]:
    calls = analysis.nodes(ast.Call)
    return [call for call in calls if analysis.call_names(call, scope_at(analysis, call)) & INIT]


def _init_calls(analysis: Analysis) -> list[ast.Call]:
    """NxD's `initialize_model_parallel(...)` calls in the file (indexed once)."""
    return analysis.fact(_find_init_calls)


def _find_mesh_assignments(analysis: Analysis) -> list[ast.Assign]:
    found = []
    for node in analysis.nodes(ast.Assign):
        target, value = node.targets[0], node.value
        if len(node.targets) != 1 or not (isinstance(target, ast.Name) and target.id == MESH):
            continue
        if isinstance(value, ast.Call) and _MESH_FACTORY in analysis.call_names(value, scope_at(analysis, node)):
            found.append(node)
    return found


def _mesh_assignments(analysis: Analysis) -> list[ast.Assign]:
    """`_MESH = init_device_mesh(...)` statements (what an earlier round of this fix wrote)."""
    return analysis.fact(_find_mesh_assignments)


def mesh_source(analysis: Analysis, rule: RuleSpec) -> ast.AST | None:
    """The one statement that builds the file's mesh: NxD's init call (when its fix can rewrite
    it), or the `_MESH` assignment that replaced it; None when there is none, or more than one."""
    sources: list[ast.AST] = [*_init_calls(analysis), *_mesh_assignments(analysis)]
    if len(sources) != 1:
        return None
    if isinstance(sources[0], ast.Call) and not _rewritable(analysis, rule, sources[0]):
        return None
    bindings = analysis.resolver.module_scope.bindings.get(MESH) or []
    ours = {id(node) for stmt in _mesh_assignments(analysis) for node in (stmt, stmt.targets[0])}
    if any(b.node is not None and id(b.node) not in ours for b in bindings):
        return None  # `_MESH` is the user's own name
    return sources[0]


def atom(ctx: FixContext, node: ast.expr) -> str:
    """`node`'s text, parenthesised unless it is an atom (`tp`, `args.tp`, `2`, `int(x)`, `cfg["tp"]`)."""
    atoms = (ast.Constant, ast.Name, ast.Attribute, ast.Call, ast.Subscript)
    return ctx.segment(node) if isinstance(node, atoms) else operand(ctx, node)


def _rewritable(analysis: Analysis, rule: RuleSpec, call: ast.Call) -> bool:
    """Whether `mesh_init` rewrites the init call: a statement of its own, sizes it may evaluate
    twice, and no argument its entry declines."""
    stmt = analysis.parent(call)
    sizes = [argument(call, "tensor_model_parallel_size", 0), argument(call, "pipeline_model_parallel_size", 1)]
    if not (isinstance(stmt, ast.Expr) and stmt.value is call) or any(v is not None and not _simple(v) for v in sizes):
        return False
    return not _declined(analysis, rule, call)


def _declined(analysis: Analysis, rule: RuleSpec, call: ast.Call) -> bool:
    """Whether the init call passes an argument its entry declines (`context_parallel_size=2`)."""
    names = analysis.call_names(call, scope_at(analysis, call)) & INIT
    entry = entry_for(rule, min(names)) if names else None
    if entry is None or any(isinstance(a, ast.Starred) for a in call.args) or len(call.args) > 2:
        return True
    declined = {p.name for p in entry.params if p.action == "decline"}
    return any(
        k.arg is None or (k.arg in declined and not default_argument(entry.old, k.arg, k.value)) for k in call.keywords
    )


def _simple(node: ast.expr) -> bool:
    """Safe to evaluate twice: constants, names, attribute chains, constant subscripts, and calls of
    a name or chain on such arguments (`dist.get_world_size()`, `int(os.environ["TP"])`)."""
    if isinstance(node, ast.Call):
        func = node.func
        while isinstance(func, ast.Attribute):
            func = func.value
        arguments = [*node.args, *(k.value for k in node.keywords)]
        return isinstance(func, ast.Name) and all(_simple(a) for a in arguments if not isinstance(a, ast.Starred))
    if isinstance(node, ast.Subscript):
        return _simple(node.value) and isinstance(node.slice, ast.Constant)
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, (ast.Name, ast.Constant))


def mesh_init(ctx: FixContext, match: Match) -> Plan | None:
    """`initialize_model_parallel(tensor_model_parallel_size=tp[, pipeline_model_parallel_size=pp])`
    -> `_MESH = init_device_mesh("neuron", ([pp, ]world // ([pp * ]tp), tp), mesh_dim_names=...)`."""
    call = match.node
    stmt = ctx.expression_statement(match) if isinstance(call, ast.Call) else None
    if stmt is None or mesh_source(ctx.analysis, match.rule) is not call:
        return None
    assert isinstance(call, ast.Call)
    tp = argument(call, "tensor_model_parallel_size", 0)
    pp = argument(call, "pipeline_model_parallel_size", 1)
    tp_text = atom(ctx, tp) if tp is not None else "1"
    pipeline = pp is not None and literal(pp) != 1
    world = "{dist}.get_world_size()"
    if pipeline:
        pp_text = atom(ctx, pp)  # type: ignore[arg-type]  # not None when `pipeline`
        shape, names = f"({pp_text}, {world} // ({pp_text} * {tp_text}), {tp_text})", '("pp", "dp", "tp")'
    else:
        shape, names = f"({world} // {tp_text}, {tp_text})", '("dp", "tp")'
    device = f"{ACCEL_TYPE}" if ctx.analysis.target == "accelerator" else '"neuron"'
    rendered = ctx.render(f"{MESH} = {{init_device_mesh}}({device}, {shape}, mesh_dim_names={names})", match)
    if rendered is None:
        return None
    lines = [rendered[0]]
    if len(ctx.src.indent_of(stmt.lineno)) + len(rendered[0]) > line_length(ctx.src.text):
        head, _, rest = rendered[0].partition("(")
        arguments = rest[: -len(")")].split(", mesh_dim_names=")
        lines = [f"{head}(", f"\t{arguments[0].split(', ', 1)[0]},", f"\t{arguments[0].split(', ', 1)[1]},"]
        lines += [f"\tmesh_dim_names={arguments[1]},", ")"]
    owner = ctx.analysis.owner(stmt)
    if not isinstance(owner, ast.Module) and not _declares_global(owner):
        lines.insert(0, f"global {MESH}")
    return ctx.replace_statement(stmt, lines, rendered[1])


def _declares_global(function: ast.AST) -> bool:
    return any(isinstance(n, ast.Global) and MESH in n.names for n in ast.walk(function))


def mesh_getter(ctx: FixContext, match: Match) -> Plan | None:
    """A getter -> the mesh's own call (`_MESH["tp"].size()`), in the file that builds the mesh."""
    call = match.node
    parts = getter_parts(match.qualified)
    source = mesh_source(ctx.analysis, match.rule)
    if not isinstance(call, ast.Call) or parts is None or source is None or call.args:
        return None
    if not _follows(ctx, source, call):
        return None
    dim, method = parts
    lists = match.qualified.endswith("_replica_groups") or literal(argument(call, "as_list", -1)) not in (None, False)
    if lists and not _passed_as_group(ctx, match, call):
        return None  # a list of ranks read by other code: a ProcessGroup would change its meaning
    if dim == "tp" and lists:
        return None  # gradients summed over the tensor-parallel group: NM323 says to delete that
    return ctx.replace(call, f'{MESH}["{dim}"].{method}')


def _follows(ctx: FixContext, source: ast.AST, call: ast.Call) -> bool:
    """Whether `call` may read `_MESH`: not before the mesh is built in the same function."""
    function = ctx.analysis.owner(call)
    if function is ctx.analysis.owner(source) and not isinstance(function, ast.Module):
        return (call.lineno, call.col_offset) > (getattr(source, "lineno", 0), getattr(source, "col_offset", 0))
    return True


def _passed_as_group(ctx: FixContext, match: Match, call: ast.Call) -> bool:
    """Whether the rank lists are the `groups=` of a collective whose fix takes a process group."""
    parent = ctx.analysis.parent(call)
    if not (isinstance(parent, ast.keyword) and parent.arg == "groups"):
        return False
    collective = ctx.analysis.parent(parent)
    return isinstance(collective, ast.Call) and bool(ctx.analysis.call_names(collective, match.scope) & GROUP_TAKERS)


def src_rank(ctx: FixContext, match: Match) -> Plan | None:
    """`get_tensor_model_parallel_src_rank()` -> `dist.get_global_rank(_MESH["tp"].get_group(), 0)`."""
    call = match.node
    source = mesh_source(ctx.analysis, match.rule)
    if (
        not isinstance(call, ast.Call)
        or call.args
        or call.keywords
        or source is None
        or not _follows(ctx, source, call)
    ):
        return None
    dim = "tp" if "tensor_model" in match.qualified else "dp"
    rendered = ctx.render(f'{{dist}}.get_global_rank({MESH}["{dim}"].get_group(), 0)', match)
    return ctx.replace(call, rendered[0], rendered[1]) if rendered else None
