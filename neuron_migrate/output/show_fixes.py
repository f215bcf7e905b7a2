"""`--show-fixes`: the fixes that were applied, grouped by file, as Ruff prints them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from neuron_migrate.model import FileResult
from neuron_migrate.output.base import printable_path
from neuron_migrate.output.statistics import shown_name


def render(results: Sequence[FileResult]) -> str:
    """`Fixed N findings:` then `- path:` and `    count × CODE (name)` per rule; empty when none."""
    fixed = [r for r in sorted(results, key=lambda r: r.path) if r.fixed]
    total = sum(len(r.fixed) for r in fixed)
    if not total:
        return ""
    lines = [f"Fixed {total} {'finding' if total == 1 else 'findings'}:"]
    for result in fixed:
        lines.append(f"- {printable_path(result.path)}:")
        per_rule = Counter((f.code, f.name) for f in result.fixed)
        lines += [f"    {n} × {code} ({shown_name(name)})" for (code, name), n in sorted(per_rule.items())]
    return "\n".join(lines) + "\n"
