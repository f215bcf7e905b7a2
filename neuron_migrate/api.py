"""The plugin surface: everything a project's own Python check needs, from one module.

A plugin module (`plugins = ["nm_plugins.acme"]` in the config) lists `RULES` (rule tables in the
TOML schema), `DETECTORS` (`{name: ((ast node types...), detector)}`) and `FIXES`
(`{name: fix}`), and imports what it uses from here; the rest of the package is private and may
change. See docs/writing-rules.md.

- A detector is `(rule, analysis, node, scope) -> Iterator[Match]` (`DetectorFn`). It reads names
  with `analysis.call_names(call, scope)` / `analysis.qualified(node, scope)`, parents with
  `analysis.parent(node)`, whole-module facts once with `analysis.fact(function)`. The markers
  `resolved_only`, `resolved_only_on`, `needles` and `import_rule` say where it can match.
- A fix is `(ctx, match) -> Plan | None` (`FixFn`), None meaning "a person decides". A span edit
  is text: `ctx.replace`, `ctx.delete_statement`, `ctx.replace_statement`, `ctx.render`, and the
  layout-keeping call edits `renamed`, `appended`, `inserted`, `dropped`. A structural rewrite is
  a LibCST transform, planned with `ctx.transform(node, "pkg.module:function", options)` and
  raising `Decline` where it cannot apply; the fix checks its preconditions on the `ast`.
- The new code's imports and helpers are asked for, never written: `ImportRequest` (the common
  ones in `IMPORTS`, by the name they bind) and `HelperRequest`, in the plan's `imports`.

Importing this module loads no LibCST and no rules.
"""

from __future__ import annotations

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.index import import_rule, needles, resolved_only, resolved_only_on
from neuron_migrate.analysis.names import Scope
from neuron_migrate.analysis.values import (
    IMPORTS,
    Decline,
    Detail,
    Edit,
    HelperRequest,
    ImportRequest,
    Match,
    Plan,
)
from neuron_migrate.catalogue import MapEntry, RuleSpec
from neuron_migrate.checks.toolkit import DetectorFn, FixContext, FixFn
from neuron_migrate.checks.toolkit_calls import (
    argument,
    keyword_of,
    literal,
    matched_call,
    only_args,
    operand,
    plain_args,
    string_literal,
    string_value,
)
from neuron_migrate.checks.toolkit_layout import appended, arguments, dropped, inserted, one_line, renamed
from neuron_migrate.model import Safety

__all__ = [
    "IMPORTS",
    "Analysis",
    "Decline",
    "Detail",
    "DetectorFn",
    "Edit",
    "FixContext",
    "FixFn",
    "HelperRequest",
    "ImportRequest",
    "MapEntry",
    "Match",
    "Plan",
    "RuleSpec",
    "Safety",
    "Scope",
    "appended",
    "argument",
    "arguments",
    "dropped",
    "import_rule",
    "inserted",
    "keyword_of",
    "literal",
    "matched_call",
    "needles",
    "one_line",
    "only_args",
    "operand",
    "plain_args",
    "renamed",
    "resolved_only",
    "resolved_only_on",
    "string_literal",
    "string_value",
]
