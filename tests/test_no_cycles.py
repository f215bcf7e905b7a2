"""A file's tree, analysis and plans hold no reference cycle, so they are freed by reference
counting as soon as the file is done and the garbage collector finds none of them.

Parent links live in the analysis's own table (`Analysis.parents`, nodes never point back at
it), and an alias binding's scope (`names.Binding.scope`) is a weak reference, for that.
"""

from __future__ import annotations

import ast
import gc
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from neuron_migrate.engine.check import analyze
from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.engine.planning import ruleset_for
from neuron_migrate.engine.variants import variants
from neuron_migrate.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted((ROOT / "tests" / "e2e" / "programs").glob("*.py")) + sorted((ROOT / "fixtures").glob("*/basic.py"))
SETTINGS = Settings()
RUNS: dict[str, Callable[[str, str], object]] = {
    "check": lambda text, path: check_source(text, path, SETTINGS),
    "fix --unsafe-fixes": lambda text, path: check_source(text, path, replace(SETTINGS, fix=True, unsafe_fixes=True)),
    "report (check and both fix runs)": lambda text, path: variants(text, path, SETTINGS),
}


def _ours(obj: object) -> bool:
    return isinstance(obj, ast.AST) or type(obj).__module__.startswith(("neuron_migrate", "libcst"))


def _cyclic_garbage(run: Callable[[], object]) -> Iterator[str]:
    """The types of our objects (and ast or LibCST nodes) that only the collector frees after `run`."""
    run()  # caches filled first (rules, narrowed sets, parsed replacements): they stay
    gc.collect()
    gc.disable()
    try:
        run()
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        found = [type(o).__qualname__ for o in gc.garbage if _ours(o)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    yield from sorted(set(found))


@pytest.mark.parametrize("mode", sorted(RUNS))
def test_nothing_of_a_checked_file_is_left_for_the_collector(mode: str) -> None:
    """Every e2e program and every rule's basic fixture (stdlib closures such as `ast.dump`'s
    own recursive helper are not ours, and not counted)."""
    texts = [(path.read_text(encoding="utf-8"), str(path)) for path in FILES]

    def run_all() -> None:  # all files between two collections: one heap walk, not one per file
        for text, path in texts:
            RUNS[mode](text, path)

    assert len(FILES) > 100 and list(_cyclic_garbage(run_all)) == []


def test_parents_live_in_the_analysis_and_no_node_carries_one() -> None:
    text = "import torch_xla.core.xla_model as xm\n\ndef f():\n    return xm.xla_device()\n"
    tree = ast.parse(text)
    fresh = {id(n): set(vars(n)) for n in ast.walk(tree)}
    analysis, _ = analyze(text, tree, ruleset_for(SETTINGS))
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call))
    function = tree.body[1]
    parent = analysis.parent
    assert parent(call) is function.body[0] and parent(function) is tree and parent(tree) is None
    assert {id(n): set(vars(n)) for n in ast.walk(tree)} == fresh  # no attribute set on a node
