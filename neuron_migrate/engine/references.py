"""References to a mapped API that are not calls, and what each becomes.

A name the program reads without calling it (`f = xm.mark_step`, `default=xm.xla_device`,
`wrap = checkpoint_module if c else ...`, `isinstance(x, pl.MpDeviceLoader)`, `except ...:`)
keeps the torch_xla import alive as surely as a call does, so each gets the action its call
form has: what stands in its place is written in, or its finding says what to write.

The place of a reference decides what may stand there: a value (assigned, passed, a default, a
branch of a conditional expression, an attribute's value) takes any expression that behaves as
the API did when called; a type test (the classes of `isinstance` or `issubclass`, an `except`
target) takes only a class. The map entry names the stand-in (`ref`, `ref_helper`, `ref_class`),
or it is derived here from `new`, `new_call` or a dropping fix where the derivation is exact.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.index import XLA_ROOT
from neuron_migrate.analysis.values import Edit, Match, Plan
from neuron_migrate.catalogue import MapEntry
from neuron_migrate.checks.helpers import HELPERS, helper_imports
from neuron_migrate.checks.toolkit import FixContext
from neuron_migrate.checks.toolkit_calls import is_type_test
from neuron_migrate.model import Safety

CALL, VALUE, TYPE_TEST = "call", "value", "type test"
FORMS = (CALL, VALUE, TYPE_TEST)

# Fixes that delete a call used as a statement: as a value, a function doing nothing stands in.
_DROPPING = frozenset({"remove_statement"})
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_CALLEE = re.compile(r"^([\w.{}]+)\((\{args\}|\{0\})\)$")  # `{torch}.neuron.manual_seed({0})`
_DOTTED = re.compile(r"^[\w.{}]+$")  # a name or attribute chain, placeholders allowed


@dataclass(frozen=True)
class StandIn:
    """What a reference becomes: a template (placeholders as in `new`; `{helper}` is the name
    `helper` defines), and the helper written into the file for it."""

    template: str
    helper: str | None = None


def reference_form(analysis: Analysis, node: ast.AST) -> str:
    """CALL when `node` is a call's callee, TYPE_TEST when it names a class a type test checks, else VALUE."""
    parent = analysis.parent(node)
    if isinstance(parent, ast.Call) and parent.func is node:
        return CALL
    return TYPE_TEST if is_type_test(analysis, node) else VALUE


def is_reference(analysis: Analysis, match: Match) -> bool:
    """Whether the match is a reference to a torch_xla API (a name or attribute chain) that is not
    a call, of a map entry (the APIs a detector finds by other means keep their own handling); a
    constant's reads are its uses, not references."""
    node = match.node
    if (
        match.entry is None
        or match.entry.constant
        or not (match.qualified == XLA_ROOT or match.qualified.startswith(XLA_ROOT + "."))
    ):
        return False
    return isinstance(node, (ast.Name, ast.Attribute)) and reference_form(analysis, node) != CALL


def stand_in(entry: MapEntry, form: str) -> StandIn | None:
    """What a reference of `form` (VALUE or TYPE_TEST) to `entry`'s API becomes; None: a person decides."""
    value = _value_stand_in(entry)
    if form != TYPE_TEST:
        return value
    if entry.ref_class:
        return StandIn(entry.ref_class)
    if value is None:
        return None
    if value.helper is not None:
        return None  # a helper class is each file's own: a type test in one file misses another's instances
    return value if _DOTTED.match(value.template) else None


def _value_stand_in(entry: MapEntry) -> StandIn | None:
    if entry.ref_helper:
        return StandIn(entry.ref or "{helper}", entry.ref_helper)
    if entry.ref:
        return StandIn(entry.ref)
    if entry.new:
        return StandIn(entry.new)
    if entry.new_call:
        return _from_call_template(entry, entry.new_call)
    if entry.fix in _DROPPING and all(p.action == "drop" for p in entry.params):
        return StandIn(_lambda(entry, "None"))
    return None


def _from_call_template(entry: MapEntry, template: str) -> StandIn | None:
    """The function a `new_call` template describes, where it is exact: the callee itself when
    the template passes the arguments on unchanged, else a lambda that returns the template."""
    used = {key for key in _PLACEHOLDER.findall(template) if key == "args" or key.isdigit()}
    params = entry.params
    if not used:
        return StandIn(_lambda(entry, template)) if all(p.action == "drop" for p in params) else None
    callee = _CALLEE.match(template)
    if callee and all(p.action == "keep" for p in params) and (used == {"args"} or len(params) == 1):
        return StandIn(callee.group(1))
    positions = sorted(int(key) for key in used if key.isdigit())
    if "args" in used or not params or positions[-1] >= len(params):
        return None
    named = params[: positions[-1] + 1]
    if any(p.action != "keep" or not p.name.isidentifier() for p in named):
        return None
    if any(p.action != "drop" for p in params[len(named) :]):
        return None
    body = _PLACEHOLDER.sub(lambda m: named[int(m.group(1))].name if m.group(1).isdigit() else m.group(0), template)
    rest = ", *args, **kwargs" if len(params) > len(named) else ""
    return StandIn(f"lambda {', '.join(p.name for p in named)}{rest}: {body}")


_IDENTITY = re.compile(r"^lambda (\w+): \1$")  # `lambda fn: fn`: what `assume_pure` and the like become


def _decorator(analysis: Analysis, node: ast.AST) -> bool:
    parent = analysis.parent(node)
    decorated = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return isinstance(parent, decorated) and any(d is node for d in parent.decorator_list)


def _without_decorator(ctx: FixContext, node: ast.AST) -> Plan | None:
    """`@assume_pure` over a function -> nothing: the decorator returned the function itself."""
    lineno = getattr(node, "lineno", 0)
    start, end = ctx.src.node_span(node)
    line_start = ctx.src.line_start(lineno)
    if ctx.src.text[line_start:start].strip() != "@" or ctx.src.line_text(lineno)[end - line_start :].strip():
        return None  # not alone on its line: a person removes it
    return Plan((Edit(line_start, ctx.src.line_start(lineno + 1), ""),))


def _partial_with_keywords(analysis: Analysis, node: ast.AST, found: StandIn) -> bool:
    """`functools.partial(assume_pure, add_rng_seed_argument=True)`: a derived function takes only
    the declared parameters, so keywords given to it beside them would raise."""
    parent = analysis.parent(node)
    if not isinstance(parent, ast.Call) or not parent.args or parent.args[0] is not node or not parent.keywords:
        return False
    func = parent.func
    named = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return named == "partial" and found.template.startswith("lambda")


def _lambda(entry: MapEntry, body: str) -> str:
    """A function of any arguments (of none, for an API that takes none) returning `body`."""
    return f"lambda *args, **kwargs: {body}" if entry.params else f"lambda: {body}"


def reference_plan(ctx: FixContext, match: Match) -> Plan | None:
    """Replace a reference with its stand-in (and the helper it names); None when it has none."""
    entry = match.entry
    if entry is None:
        return None
    found = stand_in(entry, reference_form(ctx.analysis, match.node))
    if found is None or _partial_with_keywords(ctx.analysis, match.node, found):
        return None
    if (found.helper is not None or found.template.startswith("lambda")) and attribute_base(ctx.analysis, match):
        return None  # a helper or a lambda has none of the torch_xla object's attributes
    if _IDENTITY.match(found.template) and _decorator(ctx.analysis, match.node):
        return _without_decorator(ctx, match.node)
    values: dict[str, str] = {}
    imports: tuple = ()
    if found.helper is not None:
        needed = helper_imports(ctx, match, found.helper)
        if needed is None:
            return None
        values["helper"], imports = HELPERS[found.helper][1], needed
    rendered = ctx.render(found.template, match, values)
    if rendered is None or (ctx.analysis.target == "accelerator" and '"neuron"' in rendered[0]):
        return None  # `--target accelerator` writes no `neuron` code; the finding says what the call becomes
    return ctx.replace(match.node, rendered[0], (*imports, *rendered[1]), new=rendered[0])


def attribute_base(analysis: Analysis, match: Match) -> bool:
    """Whether the reference is the object of an attribute (`ZeroRedundancyOptimizer._clip_grad_norm = f`):
    a helper or lambda standing in has none of the torch_xla object's internals, so patching or
    reading them there would change nothing the program relies on."""
    parent = analysis.parent(match.node)
    return isinstance(parent, ast.Attribute) and parent.value is match.node


ATTRIBUTE_MESSAGE = "Port the use of `{old}`'s attribute by hand: its replacement has none of torch_xla's internals"


# The message of a reference whose entry rewrites calls (a `new_call` or a fix): its own, as the
# call's message would describe a call that is not there.
FIXED_MESSAGE = "Replace `{old}` with `{new}`; it is referenced here, not called"
MANUAL_MESSAGE = "Port `{old}` by hand where it is referenced, not called: `--fix` rewrites only its calls"


DECORATOR_MESSAGE = "Remove the `@{old}` decorator; it returned the function unchanged"


def reference_message(analysis: Analysis, match: Match, fixed: bool, own_fix: bool) -> str | None:
    """The message template of a reference to the match's API; None where the entry's own applies:
    its call is not rewritten (a finding, a blocker), only its name is (`new`), or its fix rewrote
    the reference itself (`own_fix`)."""
    entry = match.entry
    if entry is None or not (entry.fix or entry.new_call) or own_fix:
        return None
    blocker = match.rule.blocker if entry.blocker is None else entry.blocker
    if blocker or (entry.safety or match.rule.safety) is Safety.MANUAL:
        return None
    if fixed:
        identity = _IDENTITY.match((stand_in(entry, VALUE) or StandIn("")).template)
        return DECORATOR_MESSAGE if identity and _decorator(analysis, match.node) else FIXED_MESSAGE
    return ATTRIBUTE_MESSAGE if attribute_base(analysis, match) else entry.ref_message or MANUAL_MESSAGE
