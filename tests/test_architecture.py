"""The package's layers: no import cycles, and no module importing a layer above its own."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "neuron_migrate"
# Lowest first. A module may import its own layer and the layers below, never one above.
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "neuron_migrate",
        "neuron_migrate.__init__",
        "neuron_migrate.model",
        "neuron_migrate.settings",
        "neuron_migrate.catalogue",
        "neuron_migrate.patterns",
    ),
    ("neuron_migrate.analysis",),
    ("neuron_migrate.compat",),
    ("neuron_migrate.checks",),
    ("neuron_migrate.registry",),
    ("neuron_migrate.engine",),
    ("neuron_migrate.output", "neuron_migrate.config", "neuron_migrate.report.model"),
    ("neuron_migrate.run",),
    ("neuron_migrate.docs", "neuron_migrate.guide", "neuron_migrate.smoke", "neuron_migrate.report"),
    ("neuron_migrate.cli", "neuron_migrate.__main__"),
)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def _runtime_nodes(node: ast.AST) -> list[ast.AST]:
    """Every node below `node`, except those under `if TYPE_CHECKING:` (imports for types only)."""
    out = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and isinstance(child.test, ast.Name) and child.test.id == "TYPE_CHECKING":
            out.extend(n for stmt in child.orelse for n in [stmt, *_runtime_nodes(stmt)])
            continue
        out.append(child)
        out.extend(_runtime_nodes(child))
    return out


def imports_of(path: Path) -> set[str]:
    """Every module of ours that `path` imports at run time, at module level or in a function."""
    found: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in MODULES)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in MODULES:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in MODULES else node.module)
    return found


GRAPH = {name: imports_of(path) - {name} for name, path in MODULES.items()}


def layer_of(name: str) -> int:
    best = max(
        (
            (len(prefix), index)
            for index, group in enumerate(LAYERS)
            for prefix in group
            if name == prefix or name.startswith(prefix + ".")
        ),
        default=None,
    )
    assert best is not None, f"{name} is in no layer; add it to LAYERS"
    return best[1]


def test_every_module_has_a_layer() -> None:
    for name in MODULES:
        layer_of(name)


def test_no_module_imports_upwards() -> None:
    upward = sorted(
        f"{name} -> {target}"
        for name, targets in GRAPH.items()
        for target in targets
        if layer_of(target) > layer_of(name)
    )
    assert upward == []


def test_no_import_cycles() -> None:
    cycles = []
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(GRAPH[name]):
            if state.get(target) == 1:
                cycles.append(" -> ".join([*path[path.index(target) :], target]))
            elif target not in state:
                visit(target, [*path, target])
        state[name] = 2

    for name in sorted(GRAPH):
        if name not in state:
            visit(name, [name])
    assert cycles == []


def test_the_graph_is_read() -> None:
    """The checks above mean something only if imports are found: spot-check known edges."""
    assert "neuron_migrate.analysis.names" in GRAPH["neuron_migrate.analysis.analyze"]
    assert "neuron_migrate.registry" in GRAPH["neuron_migrate.engine.check"]
