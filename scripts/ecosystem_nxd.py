"""NxD references in real training code, and what neuron-migrate does with each, by effort tier.

A reference is a use of a `neuronx_distributed` name in code (a call, a class, a module attribute;
imports are not counted), resolved alias-aware by neuron-migrate's own resolver. Its *tier*
(mechanical, semi-mechanical, manual) is the one the current NxD rules give its API, so the
before and after columns count the same references. Its *action* under a given tool version:

- `fixed`: a finding at the reference has a fix `--fix --unsafe-fixes` applies;
- `exact`: a finding names what to write for this API (an NxD concept rule, NM320-NM336, NM340);
- `generic`: only a generic finding (the old NM214 "port to DTensor, FSDP2 or TorchTitan", the
  NM337 catch-all);
- `none`: no finding at all.

`fixed` and `exact` are terminal actions: the user is done, or told exactly what to write. The tool
versions run in subprocesses, each from its own source tree (`PYTHONPATH`), so the current tree can
be compared with an earlier commit (`git archive <rev> neuron_migrate rules | tar -x`).
"""

from __future__ import annotations

import ast
import collections
import json
import os
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

NXD = "neuronx_distributed"
TIERS = ("mechanical", "semi-mechanical", "manual")
ACTIONS = ("fixed", "exact", "generic", "none")
# The rules whose findings name the native code to write, by code; the rest are generic.
GENERIC = frozenset({"NM214", "NM299", "NM337", "NM338"})

_COLLECT = """
import json, sys
from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.settings import Settings
out = {}
for path in sys.argv[1:]:
    text = open(path, encoding="utf-8", errors="replace").read()
    result = check_source(text, path, Settings(select=("NM",), unsafe_fixes=True))
    out[path] = [[f.code, f.start.line, f.start.column, f.fix is not None] for f in result.findings]
json.dump(out, sys.stdout)
"""


@dataclass(frozen=True)
class Reference:
    """One use of an NxD name: where, and which API (fully qualified)."""

    path: str
    line: int
    column: int  # 1-based, as neuron-migrate reports findings
    name: str


def references(text: str, path: str) -> list[Reference]:
    """Every NxD name a load reaches (a whole `a.b.c` chain counts once), outside import statements."""
    from neuron_migrate.analysis.names import Resolver

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    resolver = Resolver(tree)
    found: list[Reference] = []

    def visit(node: ast.AST, scope: object, in_chain: bool) -> None:
        if node in resolver.scope_of:
            scope = resolver.scope_for(node)
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load) and not in_chain:
            names = sorted(n for n in resolver.qualified_names(node, scope) if n.split(".")[0] == NXD)  # type: ignore[arg-type]
            if names:
                found.append(Reference(path, node.lineno, node.col_offset + 1, names[0]))
                return
        for child in ast.iter_child_nodes(node):
            visit(child, scope, isinstance(node, ast.Attribute) and child is node.value)

    visit(tree, resolver.module_scope, False)
    return found


def collect(files: list[Path], tool: Path | None) -> dict[str, list[list]]:
    """The findings of the tool at `tool` (a source tree; None: this one) on `files`, in a subprocess."""
    env = dict(os.environ)
    if tool is not None:
        env["PYTHONPATH"] = str(tool)
    done = subprocess.run(
        [sys.executable, "-c", _COLLECT, *map(str, files)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=3600,
        cwd=tool or Path.cwd(),
    )
    return dict(json.loads(done.stdout))


def tier_of(name: str) -> str:
    """The effort tier the current NxD rules give the API `name` (manual where none maps it)."""
    from neuron_migrate.catalogue import load_catalogue
    from neuron_migrate.checks.toolkit_calls import entry_for

    for spec in load_catalogue():
        entry = entry_for(spec, name) if spec.detector == "qualified" else None
        if entry is not None and spec.tier_of(entry):
            return spec.tier_of(entry)
    return "manual"


def action(reference: Reference, findings: list[list]) -> str:
    """What the tool does at the reference, from its findings there (see the module docstring)."""
    here = [f for f in findings if (f[1], f[2]) == (reference.line, reference.column)]
    if any(f[3] for f in here):
        return "fixed"
    if any(f[0] not in GENERIC for f in here):
        return "exact"
    return "generic" if here else "none"


def tally(refs: list[Reference], findings: dict[str, list[list]]) -> dict[str, collections.Counter[str]]:
    """Actions by tier (and `all`)."""
    counts: dict[str, collections.Counter[str]] = {tier: collections.Counter() for tier in (*TIERS, "all")}
    for ref in refs:
        done = action(ref, findings.get(ref.path, []))
        counts[tier_of(ref.name)][done] += 1
        counts["all"][done] += 1
    return counts


def _share(counter: collections.Counter[str]) -> str:
    total = sum(counter.values())
    terminal = counter["fixed"] + counter["exact"]
    return f"{100 * terminal / total:.1f}% ({terminal}/{total})" if total else "-"


def render(refs: list[Reference], before: dict, after: dict, before_label: str) -> list[str]:
    """The NxD section: references by tier, and the terminal share before and after."""
    old, new = tally(refs, before), tally(refs, after)
    lines = [
        "",
        "### NxD references: terminal actions by tier",
        "",
        "A reference is a use of a `neuronx_distributed` API in code (imports excluded); its tier is the one",
        "the NxD rules give its API. Terminal: fixed by `--fix --unsafe-fixes`, or a finding that names what",
        f"to write. *Before*: neuron-migrate at {before_label}; *after*: this tree.",
        "",
        (
            "| tier | references | before: fixed / exact / generic / none | before: terminal "
            "| after: fixed / exact / generic / none | after: terminal |"
        ),
        "|---|---|---|---|---|---|",
    ]
    for tier in (*TIERS, "all"):
        total = sum(new[tier].values())
        cells = [" / ".join(str(c[a]) for a in ACTIONS) for c in (old[tier], new[tier])]
        lines.append(f"| {tier} | {total} | {cells[0]} | {_share(old[tier])} | {cells[1]} | {_share(new[tier])} |")
    names = collections.Counter(r.name for r in refs if action(r, after.get(r.path, [])) not in ("fixed", "exact"))
    if names:
        lines += ["", "Not terminal after, by API:", ""]
        lines += [f"- `{name}`: {count}" for name, count in names.most_common(25)]
    return lines


def nxd_files(root: Path) -> list[Path]:
    """The `.py` files under `root` that import neuronx_distributed."""
    found = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if NXD in text and references(text, str(path)):
            found.append(path)
    return found


def section(roots: list[Path], before: Path | None, before_label: str) -> list[str]:
    """The NxD section for the folders `roots`, comparing the tool at `before` with this tree."""
    files = [path for root in roots for path in nxd_files(root)]
    if not files:
        return []
    refs = [r for path in files for r in references(path.read_text(encoding="utf-8", errors="replace"), str(path))]
    return render(refs, collect(files, before), collect(files, None), before_label)
