"""Devices (NM101-NM105): `xm.xla_device()`, `"xla"` device strings, device types, autocast.

An `"xla"` device string is rewritten only where a torch API receives it. A string passed to
the user's own function is rewritten only when that function is in the file and every `"xla"`
test in it is rewritten too, so the same branch runs. The user's comparisons
(`device == "xla"`, `x.device.type == "xla"`, `"xla" in str(device)`) are rewritten to
`"neuron"`: after migration they would otherwise never be true. A device held in a variable
(`DEVICE = "xla"`, a class attribute, a default argument) is rewritten where it is defined.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import TypeGuard

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.index import needles
from neuron_migrate.analysis.names import Scope
from neuron_migrate.analysis.values import Edit, Match, Plan
from neuron_migrate.catalogue import MapEntry, RuleSpec
from neuron_migrate.checks.device_types import device_type
from neuron_migrate.checks.optimizer import grad_scaler, syncfree_optimizer
from neuron_migrate.checks.toolkit import DetectorFn, FixContext, FixFn
from neuron_migrate.checks.toolkit_calls import (
    ACCEL_DEVICE,
    ACCEL_TYPE,
    argument,
    is_default,
    keyword_of,
    literal,
    only_args,
    replace_string,
    string_value,
)
from neuron_migrate.checks.toolkit_layout import appended, inserted, moved, one_line, renamed
from neuron_migrate.model import Safety

DEVICE_STRING = re.compile(r"^xla(?::(\d+))?$")


_DEVICE_KEYWORDS = {"device", "device_type", "map_location"}


_DEVICE_CALLS = {
    "torch.device",
    "torch.autocast",
    "torch.amp.autocast",
    "torch.amp.autocast_mode.autocast",
    "torch.distributed.device_mesh.DeviceMesh",
    "torch.distributed.device_mesh.init_device_mesh",
    "torch.distributed.DeviceMesh",
    "torch.distributed.init_device_mesh",
}


# Tensor and Module methods that take a device; their receivers cannot be resolved by name.
_DEVICE_METHODS = {"to", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "to_empty"}
_OTHER_MESSAGE = 'Replace `"{old}"` with `"{new}"` if `{callee}` passes it to torch; check its device tests'
_COMPARE_MESSAGE = 'Test for `"{new}"` instead of `"{old}"` once this value holds a TorchNeuron device'
_USER_MESSAGE = 'Replace `"{old}"` with `"{new}"` once `{callee}` no longer tests for `"{old}"`'


def new_device(text: str) -> str | None:
    found = DEVICE_STRING.match(text)
    if found is None:
        return None
    return "neuron" if found.group(1) is None else f"neuron:{found.group(1)}"


# A call's device slot is a keyword, `.to(...)` or a device call; a compared operand is `str(x)`,
# `x.type` or a name holding "device" (`_device_operand`).
@needles("to", "type", "str", *_DEVICE_KEYWORDS, fragments=("device",), names=_DEVICE_CALLS)
def device_string(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
    """`"xla"` / `"xla:N"` where a device is expected, and the user's tests for it."""
    if isinstance(node, ast.Call):
        yield from _device_call(rule, analysis, node, scope)
    elif isinstance(node, ast.Compare):
        for target, exact in compare_targets(analysis, node, scope):
            yield _match(rule, target, scope) if exact else _match(rule, target, scope, _COMPARE_MESSAGE)
        for _, operand, _ in compare_operands(node):
            default = parameter_default(analysis, operand, scope)
            if default is not None:
                yield _match(rule, default, scope)  # the default changes with the test


# -- calls ---------------------------------------------------------------------------------
def device_slots(analysis: Analysis, call: ast.Call, scope: Scope) -> list[ast.AST]:
    """The argument values of `call` that hold a device."""
    slots: list[ast.AST] = [k.value for k in call.keywords if k.arg in _DEVICE_KEYWORDS]
    func = call.func
    if (call.args and isinstance(func, ast.Attribute) and func.attr == "to") or (
        call.args and analysis.call_names(call, scope) & _DEVICE_CALLS
    ):
        slots.append(call.args[0])
    return slots


def receiver(analysis: Analysis, call: ast.Call, scope: Scope) -> tuple[str, ast.AST | None]:
    """Who receives the call's arguments: ("torch", None), ("user", def node) or ("other", None)."""
    names = analysis.call_names(call, scope)
    if names and all(n == "torch" or n.startswith("torch.") for n in names):
        return "torch", None
    func = call.func
    if isinstance(func, ast.Attribute) and not names and func.attr in _DEVICE_METHODS:
        return "torch", None
    if isinstance(func, ast.Name) and not names:
        bindings = analysis.resolver.lookup(func.id, scope)
        if len(bindings) == 1 and isinstance(bindings[0].node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return "user", bindings[0].node
    return "other", None


def _device_call(rule: RuleSpec, analysis: Analysis, call: ast.Call, scope: Scope) -> Iterator[Match]:
    slots = device_slots(analysis, call, scope)
    if not slots:
        return
    kind, definition = receiver(analysis, call, scope)
    for value in slots:
        literal = string_value(value)
        if literal is not None and isinstance(value, ast.Constant) and new_device(literal) is not None:
            if kind == "torch" or (kind == "user" and definition is not None and consistent(analysis, definition)):
                yield _match(rule, value, scope)
            else:
                yield _match(
                    rule, value, scope, _USER_MESSAGE if kind == "user" else _OTHER_MESSAGE, analysis.segment(call.func)
                )
        elif kind == "torch":
            source = string_source(analysis, value, scope)
            if source is not None and isinstance(source.value, str) and new_device(source.value) is not None:
                yield _match(rule, source, scope, safety=variable_safety(analysis, value))


def _match(
    rule: RuleSpec,
    node: ast.Constant,
    scope: Scope,
    message: str | None = None,
    callee: str = "",
    safety: Safety | None = None,
) -> Match:
    text = str(node.value)  # a string constant: callers pass no other
    entry = MapEntry(old=text, fix=None if message else "replace_string", message=message, safety=safety)
    values = (("new", new_device(text) or "neuron"), ("callee", callee))
    return Match(rule, node, scope, entry, text, text, values)


def consistent(analysis: Analysis, definition: ast.AST) -> bool:
    """Whether every `"xla"` string in a user function (or class) is one NM102 rewrites."""
    memo = analysis.fact(_consistency)
    key = id(definition)
    if key not in memo:
        memo[key] = _consistent(analysis, definition)
    return memo[key]


def _consistency(analysis: Analysis) -> dict[int, bool]:
    """Whether each user definition asked about so far is `consistent`, by its id (filled as asked)."""
    return {}


def _consistent(analysis: Analysis, definition: ast.AST) -> bool:
    scope = analysis.resolver.scope_of.get(definition, analysis.resolver.module_scope)
    params = {a.arg for a in ast.walk(definition) if isinstance(a, ast.arg)}
    rewritten: set[int] = set()
    for node in ast.walk(definition):
        if isinstance(node, ast.Compare):
            for constant, operand, how in compare_operands(node):
                if how == "exact" or (isinstance(operand, ast.Name) and operand.id in params):
                    rewritten.add(id(constant))
        elif isinstance(node, ast.Call) and receiver(analysis, node, scope)[0] == "torch":
            rewritten.update(id(v) for v in device_slots(analysis, node, scope))
        elif isinstance(node, ast.arguments):  # defaults change with the tests that read them
            rewritten.update(id(d) for d in [*node.defaults, *node.kw_defaults] if d is not None)
    strings = [n for n in ast.walk(definition) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return all(id(n) in rewritten for n in strings if isinstance(n.value, str) and new_device(n.value) is not None)


# -- comparisons -----------------------------------------------------------------------------
def _device_operand(node: ast.AST) -> str | None:
    """ "exact" for a torch device's text (`x.device.type`, `str(device)`); "named" for a value
    named like a device (`device`, `args.device_type`), which may hold any string; else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str" and len(node.args) == 1:
        return "exact"
    if isinstance(node, ast.Attribute) and node.attr == "type":
        return "exact"
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return "named" if "device" in name.lower() else None


def compare_operands(node: ast.Compare) -> list[tuple[ast.Constant, ast.AST, str]]:
    """The `"xla"` strings a device comparison tests against: (string, operand, how sure)."""
    found: list[tuple[ast.Constant, ast.AST, str]] = []
    operands = [node.left, *node.comparators]
    for op, left, right in zip(node.ops, operands, operands[1:]):
        if isinstance(op, (ast.Eq, ast.NotEq)):
            for text, other in ((left, right), (right, left)):
                how = _device_operand(other)
                if how and _is_device_string(text):
                    found.append((text, other, how))
        elif isinstance(op, (ast.In, ast.NotIn)):
            if _device_operand(right) and _is_device_string(left):
                found.append((left, right, _device_operand(right) or ""))
            elif _device_operand(left) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
                found += [(e, left, _device_operand(left) or "") for e in right.elts if _is_device_string(e)]
    return found


def compare_targets(analysis: Analysis, node: ast.Compare, scope: Scope) -> list[tuple[ast.Constant, bool]]:
    """Each `"xla"` a device comparison tests against, and whether rewriting it keeps behaviour.

    A torch device's type or text is `"neuron"` after migration, so its test is rewritten. A value
    that is only named like a device is rewritten when it is a parameter that this file passes a
    device string to (a call or the default, both rewritten); anything else may hold a string from
    elsewhere (`str(DistributedType.XLA).lower()`), so it is only reported.
    """
    out = []
    for constant, operand, how in compare_operands(node):
        out.append((constant, how == "exact" or _fed_parameter(analysis, operand, scope)))
    return out


def _fed_parameter(analysis: Analysis, operand: ast.AST, scope: Scope) -> bool:
    """Whether `operand` is a parameter fed a device string here (its default, or a call in this
    file), in a function whose every `"xla"` string is rewritten, so all of them change together."""
    default = parameter_default(analysis, operand, scope)
    if default is not None:
        return True
    if not isinstance(operand, ast.Name) or not isinstance(scope.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    bindings = analysis.resolver.lookup(operand.id, scope)
    if len(bindings) != 1 or not isinstance(bindings[0].node, ast.arg):
        return False
    fed = operand.id in _device_fed_parameters(analysis).get(id(scope.node), ())
    return fed and consistent(analysis, scope.node)


def parameter_default(analysis: Analysis, operand: ast.AST, scope: Scope) -> ast.Constant | None:
    """The device-string default of the parameter `operand`, when its function is consistent."""
    if not isinstance(operand, ast.Name) or not isinstance(scope.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    bindings = analysis.resolver.lookup(operand.id, scope)
    if len(bindings) != 1 or not isinstance(bindings[0].node, ast.arg):
        return None
    default = analysis.resolver.string_definitions.get(id(bindings[0].node))
    if not _is_device_string(default) or not consistent(analysis, scope.node):
        return None
    return default


def _device_fed_parameters(analysis: Analysis) -> dict[int, set[str]]:
    """Function node id -> its parameters that a call in this file passes a device string to."""
    return analysis.fact(_find_device_fed_parameters)


def _find_device_fed_parameters(analysis: Analysis) -> dict[int, set[str]]:
    found: dict[int, set[str]] = {}
    functions = {n.name: n for n in analysis.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in analysis.nodes(ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id in functions:
            function = functions[node.func.id]
            params = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
            fed = {k.arg for k in node.keywords if k.arg and _is_device_string(k.value)}
            fed |= {params[i] for i, a in enumerate(node.args) if i < len(params) and _is_device_string(a)}
            found.setdefault(id(function), set()).update(fed)
    return found


def _is_device_string(node: ast.AST | None) -> TypeGuard[ast.Constant]:
    text = string_value(node)
    return text is not None and new_device(text) is not None


# -- variables ---------------------------------------------------------------------------------
def string_source(analysis: Analysis, node: ast.AST, scope: Scope) -> ast.Constant | None:
    """The string constant a name, class attribute or parameter default was set to, if only one."""
    if isinstance(node, ast.Name):
        bindings = analysis.resolver.lookup(node.id, scope)
        if len(bindings) != 1 or bindings[0].node is None:
            return None
        return analysis.resolver.string_definitions.get(id(bindings[0].node))
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
        return _class_attribute(scope, node.attr)
    return None


def _class_attribute(scope: Scope, name: str) -> ast.Constant | None:
    """`self.name` in a method: the string the enclosing class body assigns to `name`."""
    owner = scope.parent
    if owner is None or not owner.is_class or not isinstance(owner.node, ast.ClassDef):
        return None
    assigned = [
        s
        for s in owner.node.body
        if isinstance(s, ast.Assign)
        and len(s.targets) == 1
        and isinstance(s.targets[0], ast.Name)
        and s.targets[0].id == name
    ]
    value = assigned[0].value if len(assigned) == 1 else None
    return value if isinstance(value, ast.Constant) and isinstance(value.value, str) else None


def variable_safety(analysis: Analysis, value: ast.AST) -> Safety | None:
    """Unsafe when the variable is also compared somewhere: that test may change its branch."""
    name = value.id if isinstance(value, ast.Name) else getattr(value, "attr", "")
    for node in analysis.nodes(ast.Compare):
        if not compare_operands(node) and any(
            (isinstance(o, ast.Name) and o.id == name) or (isinstance(o, ast.Attribute) and o.attr == name)
            for o in [node.left, *node.comparators]
        ):
            return Safety.UNSAFE
    return None


# -- fixes ------------------------------------------------------------------------------------
def xla_device(ctx: FixContext, match: Match) -> Plan | None:
    """`xm.xla_device()` -> `torch.device("neuron")`; with an index, an unsafe `torch.device("neuron", n)`."""
    call = match.node
    if not isinstance(call, ast.Call):
        return None  # referenced, not called: a finding without a fix
    devkind = keyword_of(call, "devkind")
    if not only_args(call, {"n": 0, "index": 0, "devkind": 1}) or len(call.args) > 1:
        return None
    if devkind is not None and not is_default(match, devkind):
        return None  # an XLA device kind: TorchNeuron has only `neuron`
    index = argument(call, "n", 0) or argument(call, "index", 0)
    if ctx.analysis.target == "accelerator":
        return _accelerator_device(ctx, match, call, index)
    if index is None or literal(index) is None:
        rendered = ctx.render('{torch}.device("neuron")', match)
        return ctx.replace(call, rendered[0], rendered[1]) if rendered else None
    rendered = ctx.render('{torch}.device("neuron", {n})', match, {"n": ctx.segment(index)})
    if rendered is None:
        return None
    return ctx.replace(call, rendered[0], rendered[1], safety=Safety.UNSAFE)


def _accelerator_device(ctx: FixContext, match: Match, call: ast.Call, index: ast.expr | None) -> Plan | None:
    """`--target accelerator`: the current accelerator, else the CPU; an index is dropped (unsafe)."""
    rendered = ctx.render(ACCEL_DEVICE, match)
    if rendered is None:
        return None
    dropped = index is not None and literal(index) is not None
    return ctx.replace(call, rendered[0], rendered[1], safety=Safety.UNSAFE if dropped else None)


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
    spread = [k for k in call.keywords if k.arg is None]  # `**autocast_args`: a recipe's per-device dict
    bare = ast.Call(call.func, call.args, [k for k in call.keywords if k.arg is not None])
    if not call.args or len(spread) > 1 or not only_args(bare, allowed):
        return None
    if spread:
        return _autocast_spread(ctx, match, bare, spread[0], allowed)
    accelerator = ctx.analysis.target == "accelerator"  # also autocasts on the CPU now: unsafe
    names = ctx.render("{torch}|" + (ACCEL_TYPE if accelerator else '"neuron"'), match)
    if names is None or ctx.enclosing_quotes(call):
        return None
    torch, device = names[0].split("|", 1)
    callee = f"{torch}.autocast"
    edits = [*renamed(ctx, call, callee), Edit(*ctx.src.node_span(call.args[0]), device)]
    for position, value in enumerate(call.args[1:], 1):  # the two signatures order them differently
        edits.append(Edit(ctx.src.node_span(value)[0], ctx.src.node_span(value)[0], f"{_AUTOCAST[position]}="))
    if argument(call, "dtype", allowed["dtype"]) is None:  # torch_xla's default on the device
        later = keyword_of(call, "cache_enabled")
        dtype = f"dtype={torch}.bfloat16"
        shift = moved(ctx, call, callee)
        edits.append(inserted(ctx, call, later, dtype) if later else appended(ctx, call, dtype, shift))
    safety = Safety.UNSAFE if accelerator else None
    return Plan(tuple(edits), names[1], safety, new=one_line(ctx, call, edits))


_AUTOCAST = ("device", "enabled", "dtype", "cache_enabled")


def _autocast_spread(
    ctx: FixContext, match: Match, call: ast.Call, spread: ast.keyword, allowed: dict[str, int]
) -> Plan | None:
    """`autocast(device, **kw)` -> `torch.autocast("neuron", **{"dtype": torch.bfloat16, **kw})`:
    the dict may hold a dtype or not, and torch_xla's bfloat16 default must hold when it does not."""
    parts = ['"neuron"'] if ctx.analysis.target != "accelerator" else [ACCEL_TYPE]
    values = {}
    for name in ("enabled", "dtype", "cache_enabled"):
        value = argument(call, name, allowed[name])
        if value is not None:
            parts.append(f"{name}={{{name}}}")
            values[name] = ctx.segment(value)
    values["spread"] = ctx.segment(spread.value)
    default = "" if "dtype" in values else '"dtype": {torch}.bfloat16, '
    parts.append("**{" + default + "**{spread}}" if default else "**{spread}")
    rendered = ctx.render("{torch}.autocast(" + ", ".join(parts) + ")", match, values)
    if rendered is None:
        return None
    accelerator = ctx.analysis.target == "accelerator"  # also autocasts on the CPU now: unsafe
    return ctx.replace(match.node, rendered[0], rendered[1], safety=Safety.UNSAFE if accelerator else None)


DETECTORS: Mapping[str, tuple[tuple[type, ...], DetectorFn]] = MappingProxyType(
    {
        "device_string": ((ast.Call, ast.Compare), device_string),
    }
)


FIXES: Mapping[str, FixFn] = MappingProxyType(
    {
        "xla_device": xla_device,
        "autocast": autocast,
        "syncfree_optimizer": syncfree_optimizer,  # NM105's optimizers: the code lives with the steps
        "grad_scaler": grad_scaler,
        "replace_string": replace_string,
        "device_type": device_type,
    }
)
