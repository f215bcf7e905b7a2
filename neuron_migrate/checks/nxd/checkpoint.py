"""NxD checkpoints (NM327) -> Distributed Checkpoint of `get_state_dict`.

`nxd.save_checkpoint(dir, tag, model=m, optimizer=o)` wrote one file per tensor- and
pipeline-parallel rank; natively every rank saves its DTensor shards (and its ZeRO optimizer state)
into one folder:

    model_state, optimizer_state = get_state_dict(m, o)
    dcp.save({"model": model_state, "optimizer": optimizer_state}, checkpoint_id=os.path.join(dir, tag))

and `load_checkpoint` reads them back into the state dicts of the model it is given, then sets
them (`dcp.load` fills the dictionaries in place; `set_state_dict` loads them into the model and
optimizer). Old NxD checkpoints need a one-time conversion (NM327's documentation says how).
"""

from __future__ import annotations

import ast

from neuron_migrate.analysis.values import Match, Plan, Request
from neuron_migrate.checks.toolkit import FixContext
from neuron_migrate.checks.toolkit_calls import argument

_NAMES = ("model_state", "optimizer_state")  # the state dicts the new statements bind


def _parts(ctx: FixContext, match: Match, names: tuple[str, ...]) -> tuple[ast.stmt, list[str]] | None:
    """The call's statement and the texts of its path, tag, model and optimizer, all given."""
    call = match.node
    stmt = ctx.expression_statement(match) if isinstance(call, ast.Call) else None
    if stmt is None:
        return None
    assert isinstance(call, ast.Call)
    values = [argument(call, name, index) for index, name in enumerate(names)]
    if any(v is None for v in values) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    if any(_bound(ctx, match, name) for name in _NAMES):
        return None  # the state dicts' names are taken here
    return stmt, [ctx.segment(v) for v in values]  # type: ignore[arg-type]  # none is None


def _bound(ctx: FixContext, match: Match, name: str) -> bool:
    resolver = ctx.analysis.resolver
    return bool(resolver.lookup(name, match.scope)) or resolver.is_loaded(name)


_STATES = '{{"model": model_state, "optimizer": optimizer_state}}'
_SPLIT = "model_state, optimizer_state = {get_state_dict}({model}, {optimizer})"


def save_checkpoint(ctx: FixContext, match: Match) -> Plan | None:
    """`nxd.save_checkpoint(dir, tag, model=m, optimizer=o)` -> `dcp.save` of `get_state_dict(m, o)`."""
    found = _parts(ctx, match, ("checkpoint_dir_str", "tag", "model", "optimizer"))
    if found is None:
        return None
    stmt, values = found
    save = "{dcp}.save(" + _STATES + ", checkpoint_id={os}.path.join({folder}, {tag}))"
    return _statements(ctx, match, stmt, [_SPLIT, save], values)


def load_checkpoint(ctx: FixContext, match: Match) -> Plan | None:
    """`nxd.load_checkpoint(dir, tag, model=m, optimizer=o)` -> `dcp.load` into `get_state_dict(m, o)`, then `set_state_dict`."""
    found = _parts(ctx, match, ("path", "tag", "model", "optimizer"))
    if found is None:
        return None
    stmt, values = found
    load = "{dcp}.load(" + _STATES + ", checkpoint_id={os}.path.join({folder}, {tag}))"
    restore = "{set_state_dict}({model}, {optimizer}, model_state_dict=model_state, optim_state_dict=optimizer_state)"
    return _statements(ctx, match, stmt, [_SPLIT, load, restore], values)


def _statements(ctx: FixContext, match: Match, stmt: ast.stmt, templates: list[str], values: list[str]) -> Plan | None:
    given = dict(zip(("folder", "tag", "model", "optimizer"), values, strict=True))
    lines: list[str] = []
    imports: list[Request] = []
    for template in templates:
        rendered = ctx.render(template.replace("{{", "{").replace("}}", "}"), match, given)
        if rendered is None:
            return None
        lines.append(rendered[0])
        imports += rendered[1]
    return ctx.replace_statement(stmt, lines, tuple(dict.fromkeys(imports)))
