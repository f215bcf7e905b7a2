"""The package's layers: no import cycles between modules or between rooms (packages), no module
importing a layer above its own, torch only in the smoke child, LibCST only in the fix halves.

Every import counts: at module level, in a function, and under `if TYPE_CHECKING:` (an import
for types only still ties the two modules together, and breaks as soon as it runs).
"""

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
        "neuron_migrate.signatures",
        "neuron_migrate.patterns",
        "neuron_migrate.effort",
        "neuron_migrate.trust",
    ),
    ("neuron_migrate.analysis",),
    ("neuron_migrate.compat",),
    ("neuron_migrate.checks",),
    ("neuron_migrate.registry", "neuron_migrate.api"),
    ("neuron_migrate.engine",),
    ("neuron_migrate.output", "neuron_migrate.config", "neuron_migrate.config_values", "neuron_migrate.report.model"),
    ("neuron_migrate.run",),
    (
        "neuron_migrate.docs",
        "neuron_migrate.sources",
        "neuron_migrate.api_coverage",
        "neuron_migrate.guide",
        "neuron_migrate.smoke",
        "neuron_migrate.report",
        "neuron_migrate.generate",
    ),
    ("neuron_migrate.cli", "neuron_migrate.__main__"),
)
# The only code that imports torch: the smoke run's child process (see smoke/child/__init__.py).
TORCH_ROOM = "neuron_migrate.smoke.child"
# LibCST, loaded only by --fix: the `_cst` halves of the concept modules and of add_imports, and
# the engine module that applies a fix's rewrite.
LIBCST_MODULES = frozenset({"neuron_migrate.engine.rewrite"})
MAX_LINES = 450  # every module of the package (STYLE §6: split along a seam, never trim to fit)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def _absolute(node: ast.ImportFrom, name: str) -> str:
    """The module an `from ... import` names, relative imports resolved against `name`."""
    if not node.level:
        return node.module or ""
    is_package = MODULES[name].name == "__init__.py"
    base = name.split(".")[: len(name.split(".")) - node.level + (1 if is_package else 0)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imported(name: str) -> list[str]:
    """Every module `name` imports, ours or not, wherever the import stands (TYPE_CHECKING too).

    `from a import b` counts as `a.b` when that is a module of ours, else as `a`.
    """
    found: list[str] = []
    for node in ast.walk(ast.parse(MODULES[name].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, name)
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                found.append(sub if sub in MODULES else module)
    return found


IMPORTED = {name: imported(name) for name in MODULES}
GRAPH = {name: {t for t in targets if t in MODULES} - {name} for name, targets in IMPORTED.items()}


def room_of(name: str) -> str:
    """A module's room: the package right under neuron_migrate it lives in, or the module itself
    (`neuron_migrate.engine.formats.notebook` -> `neuron_migrate.engine`; `neuron_migrate.config`)."""
    return ".".join(name.split(".")[:2])


ROOMS: dict[str, set[str]] = {}
for _name, _targets in GRAPH.items():
    ROOMS.setdefault(room_of(_name), set()).update(room_of(t) for t in _targets if room_of(t) != room_of(_name))


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


def cycles(graph: dict[str, set[str]]) -> list[str]:
    """Each cycle a depth-first walk of `graph` closes, as `a -> b -> a`."""
    found = []
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph.get(name, ())):
            if state.get(target) == 1:
                found.append(" -> ".join([*path[path.index(target) :], target]))
            elif target not in state:
                visit(target, [*path, target])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    return found


def _root(module: str) -> str:
    return module.split(".")[0]


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


def test_no_import_cycles_between_modules() -> None:
    assert cycles(GRAPH) == []


def test_no_import_cycles_between_rooms() -> None:
    """Packages as nodes: `config -> report.model` and `report.command -> config` are a cycle
    between the rooms `config` and `report`, though no two modules import each other."""
    assert cycles(ROOMS) == []


def test_only_the_smoke_child_imports_torch() -> None:
    outside = sorted(
        name
        for name, targets in IMPORTED.items()
        if any(_root(t) == "torch" for t in targets) and not (name == TORCH_ROOM or name.startswith(TORCH_ROOM + "."))
    )
    assert outside == []


def test_only_the_fix_halves_import_libcst() -> None:
    outside = sorted(
        name
        for name, targets in IMPORTED.items()
        if any(_root(t) == "libcst" for t in targets) and not name.endswith("_cst") and name not in LIBCST_MODULES
    )
    assert outside == []


def test_no_module_is_over_the_limit() -> None:
    long = {
        name: lines
        for name, path in MODULES.items()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_the_graph_is_read() -> None:
    """The checks above mean something only if imports are found: spot-check known edges,
    a type-only one among them, and that the forbidden imports are seen where they are allowed."""
    assert "neuron_migrate.analysis.names" in GRAPH["neuron_migrate.analysis.analyze"]
    assert "neuron_migrate.registry" in GRAPH["neuron_migrate.engine.ruleset"]
    assert "neuron_migrate.analysis.values" in GRAPH["neuron_migrate.compat"]  # only under TYPE_CHECKING
    assert "neuron_migrate.checks.toolkit" in GRAPH["neuron_migrate.registry"]  # only under TYPE_CHECKING
    assert "torch" in IMPORTED["neuron_migrate.smoke.child.emulate"]
    assert "libcst" in IMPORTED["neuron_migrate.engine.rewrite"]
    assert "neuron_migrate.engine" in ROOMS["neuron_migrate.run"]


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == ["a -> b -> c -> a"]


def test_the_plugin_surface_is_one_module_that_loads_no_libcst_and_the_docs_use_only_it() -> None:
    """`neuron_migrate.api` is what plugins import: the docs' example and the project fixture's
    plugins import nothing else of the package, and it pulls in no LibCST."""
    assert not any(_root(t) == "libcst" for name in _closure("neuron_migrate.api") for t in IMPORTED[name])
    plugins = sorted((ROOT / "fixtures" / "_project" / "nm_plugins").glob("*.py"))
    docs = (ROOT / "docs" / "writing-rules.md").read_text(encoding="utf-8")
    blocks = [b.split("\n", 1)[1] for b in docs.split("```python")[1:]]
    sources = [p.read_text(encoding="utf-8") for p in plugins] + [b.split("```", 1)[0] for b in blocks]
    used = {
        node.module
        for source in sources
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("neuron_migrate")
    }
    assert used == {"neuron_migrate.api"}


def _closure(name: str) -> set[str]:
    """`name` and every module of ours it imports, directly or not."""
    seen, pending = set(), [name]
    while pending:
        current = pending.pop()
        if current not in seen:
            seen.add(current)
            pending.extend(GRAPH[current])
    return seen
