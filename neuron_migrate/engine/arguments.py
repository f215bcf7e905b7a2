"""A mapped call's arguments against its map entry's declared parameters (`[map.params]`).

Each parameter of a torch_xla API a rule maps is declared with what its fix does with it (keep,
rename, drop, decline; see `catalogue.PARAM_ACTIONS`). Here a call's arguments are bound to those
parameters, as Python binds them, to find the one that stops the fix: a `decline` parameter given
a value other than its default, or a keyword the API does not have. The engine then plans no fix
and the finding says why, so a fix is never declined for an argument nobody decided about.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from neuron_migrate.catalogue import MapEntry, Param
from neuron_migrate.signatures import default_argument


@dataclass(frozen=True)
class Declined:
    """The argument that leaves a call to a human, and why."""

    argument: str  # `flush=` or the parameter a positional argument binds to
    reason: str


def _bound(call: ast.Call, params: tuple[Param, ...]) -> Iterator[tuple[Param | None, str, ast.expr]]:
    """(parameter or None when unknown, argument name, value) for each argument Python would bind."""
    if any(p.name == "..." for p in params):
        return  # the signature is another library's (`torch.optim.SGD`): every argument passes through
    positional = [p for p in params if not p.name.startswith("**")]
    index = 0
    for value in call.args:
        if isinstance(value, ast.Starred) or index >= len(positional):
            break
        param = positional[index]
        yield param, param.name, value
        if not param.name.startswith("*"):
            index += 1
    varkw = next((p for p in params if p.name.startswith("**")), None)
    for keyword in call.keywords:
        if keyword.arg is None:
            continue  # `**options`: its keys are unknown here
        named = next((p for p in params if p.name == keyword.arg), None)
        yield named or varkw, keyword.arg, keyword.value


# The releases whose signatures rules/signatures*.toml holds, by library.
_RELEASES = {"torch_xla": "torch_xla 2.5 or 2.8", "neuronx_distributed": "neuronx_distributed 0.10 or 0.18"}


def declined(entry: MapEntry | None, node: ast.AST) -> Declined | None:
    """The first argument of `node` (a call) whose declared action is `decline`, or that the API lacks."""
    if entry is None or not entry.params or not isinstance(node, ast.Call):
        return None
    api = entry.old.rsplit(".", 1)[-1]
    for param, name, value in _bound(node, entry.params):
        if param is None:
            return Declined(
                f"{name}=",
                f"`{api}` has no parameter `{name}` in {_RELEASES.get(entry.old.split('.')[0], 'its library')}",
            )
        if param.action == "decline" and not default_argument(entry.old, param.name, value):
            shown = param.name if param.name.startswith("*") else f"{param.name}="
            return Declined(shown if param.name == name else f"{name}=", param.note)
    return None


def spread_reason(entry: MapEntry | None, node: ast.AST, segment: Callable[[ast.AST], str]) -> str | None:
    """Why a fix planned nothing for a call passing `*args` or `**kwargs`, for its finding:
    which arguments the spread binds is known only when it runs, and the fix must see the ones
    it drops, declines or renames (`[map.params]`, the first three named), or, with none
    declared, every one. The engine shows it only where the fix plans one without the spreads."""
    if entry is None or not (entry.fix or entry.new or entry.new_call) or not isinstance(node, ast.Call):
        return None
    spread = next((f"**{segment(k.value)}" for k in node.keywords if k.arg is None), None)
    spread = spread or next((f"*{segment(a.value)}" for a in node.args if isinstance(a, ast.Starred)), None)
    if spread is None:
        return None
    watched = [p for p in entry.params if p.action in _VERBS and not p.name.startswith("*") and p.name != "..."]
    shown = [f"`{p.name}`, which it {_VERBS[p.action]}" for p in watched[:3]]
    more = f", and {len(watched) - 3} more" if len(watched) > 3 else ""
    seen = f"; the fix must see {', '.join(shown)}{more}" if watched else ""
    return f"`{spread}` hides which arguments it passes{seen}"


_VERBS = {"drop": "drops", "decline": "declines unless it is the default", "rename": "renames"}


def declined_message(written: str, found: Declined) -> str:
    """The finding's message for a call its fix leaves alone because of one argument."""
    shown = found.argument + "..." if found.argument.endswith("=") else found.argument
    return f"Port `{written}(..., {shown})` by hand: {found.reason}"


_HELPER_PROMISE = re.compile(r"^Replace (`[^`]+`) with the (`[^`]+`) helper written into this file(.*)$")


def unwritten_helper(message: str) -> str:
    """A message that promises a helper, for a finding whose fix wrote none (it says so instead)."""
    found = _HELPER_PROMISE.match(message)
    if found is None:
        return message
    old, helper, rest = found.groups()
    return f"Replace {old} by hand: `--fix` could not write the {helper} helper for this call{rest}"
