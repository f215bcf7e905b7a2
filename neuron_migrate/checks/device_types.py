"""NM104's tests of the device type (`xr.device_type() == "NEURON"`, `xm.xla_device_hw(dev) == "TPU"`),
as tests of `torch.accelerator.current_accelerator()`; `devices` lists the fix. Apart from it
for size: a recipe's hardware test may sit in a variable, read by several comparisons."""

from __future__ import annotations

import ast

from neuron_migrate.analysis.values import Edit, Match, Plan
from neuron_migrate.checks.toolkit import FixContext
from neuron_migrate.checks.toolkit_calls import matched_call, string_literal, string_value
from neuron_migrate.model import Safety

_DEVICE_TYPES = {"NEURON": "neuron", "CUDA": "cuda", "GPU": "cuda", "TPU": "tpu"}


def device_type(ctx: FixContext, match: Match) -> Plan | None:
    """`xr.device_type() == "NEURON"` -> a test of `torch.accelerator.current_accelerator()`; also
    `xm.xla_device_hw(dev) == "TPU"` (recipes' bf16 branch, which is neuron's now: unsafe)."""
    call = matched_call(match)
    compare = ctx.analysis.parent(call) if call is not None else None
    hardware = match.qualified.endswith(".xla_device_hw")
    if call is None or len(call.args) != hardware or call.keywords:
        return None
    if hardware and isinstance(compare, ast.Assign):
        return _held_hardware(ctx, match, call, compare)
    if not isinstance(compare, ast.Compare):
        return None
    if len(compare.ops) != 1 or isinstance(compare.ops[0], (ast.In, ast.NotIn)):
        return _device_type_in(ctx, match, call, compare)
    kind = string_value(compare.comparators[0] if compare.left is call else compare.left)
    if kind is None or not isinstance(compare.ops[0], (ast.Eq, ast.NotEq)):
        return None
    equal = isinstance(compare.ops[0], ast.Eq)
    if kind == "CPU":
        template = "{torch}.accelerator.current_accelerator() is " + ("None" if equal else "not None")
    elif kind in _DEVICE_TYPES:
        operator = "==" if equal else "!="
        target = "neuron" if hardware and kind == "TPU" else _DEVICE_TYPES[kind]
        template = f'getattr({{torch}}.accelerator.current_accelerator(), "type", None) {operator} "{target}"'
    else:
        return None
    rendered = ctx.render(template, match)
    unsafe = Safety.UNSAFE if hardware and kind == "TPU" else None
    return ctx.replace(compare, rendered[0], rendered[1], safety=unsafe) if rendered else None


def _device_type_in(ctx: FixContext, match: Match, call: ast.Call, compare: ast.Compare) -> Plan | None:
    """`xr.device_type() in ("TPU", "NEURON")` (or a list or set of names) -> `getattr(<accelerator>, "type",
    None) in ("tpu", "neuron")`."""
    collections = (ast.Tuple, ast.List, ast.Set)
    if len(compare.ops) != 1 or compare.left is not call or not isinstance(compare.comparators[0], collections):
        return None
    kinds = [string_value(e) for e in compare.comparators[0].elts]
    if not kinds or any(k not in _DEVICE_TYPES for k in kinds):
        return None
    operator = "in" if isinstance(compare.ops[0], ast.In) else "not in"
    names = [f'"{t}"' for t in dict.fromkeys(_DEVICE_TYPES[k] for k in kinds if k is not None)]  # GPU, CUDA: one "cuda"
    test = f"({', '.join(names)}{',' if len(names) == 1 else ''})"
    template = f'getattr({{torch}}.accelerator.current_accelerator(), "type", None) {operator} {test}'
    rendered = ctx.render(template, match)
    return ctx.replace(compare, rendered[0], rendered[1]) if rendered else None


def _held_hardware(ctx: FixContext, match: Match, call: ast.Call, assign: ast.Assign) -> Plan | None:
    """`hw = xm.xla_device_hw(dev)` whose every test is `hw == "TPU"` (or `!=`, another type): the
    value becomes the accelerator's type and each tested string its TorchNeuron name, `"TPU"`
    (recipes' bf16 branch) `"neuron"`, so the recipe runs that branch. Unsafe, as inline."""
    owner = ctx.analysis.owner(assign)
    target = assign.targets[0] if len(assign.targets) == 1 else None
    if not isinstance(target, ast.Name):
        return None
    name, edits = target.id, list[Edit]()
    for node in ast.walk(owner):
        if isinstance(node, ast.Name) and node.id == name and node is not target:
            if not isinstance(node.ctx, ast.Load):
                return None  # assigned again: the value is not only the hardware
            test = ctx.analysis.parent(node)
            if isinstance(test, ast.Compare):
                other = test.comparators[0] if test.left is node else test.left
                kind = string_value(other)
                if len(test.ops) != 1 or not isinstance(test.ops[0], (ast.Eq, ast.NotEq)) or kind not in _DEVICE_TYPES:
                    return None
                literal = string_literal(ctx, other, "neuron" if kind == "TPU" else _DEVICE_TYPES[kind])
                if literal is None:
                    return None
                edits.append(Edit(*ctx.src.node_span(other), literal))
    rendered = ctx.render('getattr({torch}.accelerator.current_accelerator(), "type", None)', match)
    if not edits or rendered is None:
        return None
    return Plan((Edit(*ctx.src.node_span(call), rendered[0]), *edits), rendered[1], safety=Safety.UNSAFE)
