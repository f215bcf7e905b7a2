"""The fixable count of torch_xla imports that other fixes leave unused, planned from the first
fix round's text for the import rules alone (`waiting_imports.fixed_by_round_two`), gives what
running every round in memory gives; an import only a later round frees runs them all."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.source import DecodeError, decode
from neuron_migrate.analysis.walk import walk, walk_imports
from neuron_migrate.engine import pipeline, waiting_imports
from neuron_migrate.engine.ruleset import build_ruleset, enabled_codes, narrowed
from neuron_migrate.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
INPUTS = sorted(
    p for p in (ROOT / "fixtures").rglob("*.py") if not p.name.endswith(".fixed.py") and "_project" not in p.parts
)
PROGRAMS = sorted((ROOT / "tests" / "e2e" / "programs").glob("*.py"))

FREED = "import torch_xla.core.xla_model as xm\n\nd = xm.xla_device()\nxm.mark_step()\n"
# The loader's fix rewrites the call around `xm.xla_device()`, whose own fix waits a round: `pl`
# is unused after the first round, `xm` only after the second.
LATER = (
    "import torch_xla.core.xla_model as xm\n"
    "import torch_xla.distributed.parallel_loader as pl\n\n\n"
    "def batches(loader):\n"
    "    return pl.MpDeviceLoader(loader, xm.xla_device())\n"
)


def _text(path: Path) -> str:
    try:
        return decode(path.read_bytes())[0]
    except DecodeError:
        return ""  # the encoding fixtures: nothing to compare


def _keys(text: str, path: str) -> list[object]:
    result = pipeline.check_source(text, path, Settings())
    return [(f.code, f.start, f.message, f.fix) for f in result.findings]


def _fix_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths of the whole in-memory fix runs made from now on."""
    runs: list[str] = []
    real = pipeline._fix_loop
    monkeypatch.setattr(pipeline, "_fix_loop", lambda *a, **k: runs.append(a[1]) or real(*a, **k))
    return runs


def _imports_fixable(text: str, path: str) -> list[bool]:
    return [f.fix is not None for f in pipeline.check_source(text, path, Settings()).findings if f.code == "NM601"]


def test_an_import_the_first_round_frees_is_fixable_without_a_fix_run(monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _fix_runs(monkeypatch)
    assert _imports_fixable(FREED, "freed.py") == [True]
    assert runs == []


def test_an_import_a_later_round_frees_runs_every_round(monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _fix_runs(monkeypatch)
    assert _imports_fixable(LATER, "later.py") == [True, True]
    assert runs == ["later.py"]


def test_a_first_round_that_breaks_the_file_leaves_it_to_the_whole_run(monkeypatch: pytest.MonkeyPatch) -> None:
    real = waiting_imports.apply_once

    def broken(*args: object, **kwargs: object) -> object:
        applied = real(*args, **kwargs)  # type: ignore[arg-type]
        return type(applied)(applied.text + "\n)\n", applied.fixed)

    monkeypatch.setattr(waiting_imports, "apply_once", broken)
    settings = Settings(fix=True)
    ruleset = pipeline.ruleset_for(settings)
    start = pipeline.first_round(FREED, "freed.py", settings, ruleset)
    assert not isinstance(start, pipeline.FileResult)
    planned, analysis = start
    assert analysis is not None
    assert waiting_imports.fixed_by_round_two(FREED, "freed.py", settings, ruleset, planned, analysis) is None
    assert (
        waiting_imports.fixed_by_round_two(
            FREED, "freed.py", Settings(fix=True, max_fix_iterations=1), ruleset, planned, analysis
        )
        is None
    )


@pytest.mark.parametrize("path", [*INPUTS, *PROGRAMS], ids=lambda p: str(p.relative_to(ROOT)))
def test_import_rules_match_at_import_statements_as_the_walk_does(path: Path) -> None:
    """What `walk_imports` finds is what the whole walk finds with the import rules."""
    text = _text(path)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return
    settings = Settings()
    ruleset = narrowed(build_ruleset(enabled_codes(settings), settings.target_version), text)
    codes = ruleset.index.import_codes
    analysis = Analysis(text, tree, ruleset.target_version, ruleset.target, ruleset.index.known)
    analysis.fixes = ruleset.fixes
    walked = [(m.rule.code, id(m.node), m.entry) for m in walk(analysis, ruleset.index) if m.rule.code in codes]
    alone = Analysis(text, ast.parse(text), ruleset.target_version, ruleset.target, ruleset.index.known)
    alone.fixes = ruleset.fixes
    found = [(m.rule.code, ast.dump(m.node), m.entry) for m in walk_imports(alone, ruleset.index)]
    by_node = {id(n): ast.dump(n) for n in ast.walk(tree)}
    assert sorted(found, key=repr) == sorted(((c, by_node[n], e) for c, n, e in walked), key=repr)


@pytest.mark.slow
def test_planning_the_second_round_changes_no_mark_or_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every fixture and e2e program (real training scripts) checks the same with the whole fix
    run in memory as with the second round planned for the import rules alone."""
    inputs = [*INPUTS, *PROGRAMS]
    planned = {p: _keys(_text(p), str(p)) for p in inputs}
    monkeypatch.setattr(waiting_imports, "fixed_by_round_two", lambda *args: None)
    assert [p.name for p in inputs if _keys(_text(p), str(p)) != planned[p]] == []
    assert len(inputs) > 300


def test_the_whole_run_after_it_plans_the_second_round_from_its_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the whole run must be made after all, it reuses the second round's parse: that text
    is not parsed and planned from scratch again."""
    seen: list[waiting_imports.RoundTwo | None] = []
    real_two = waiting_imports.fixed_by_round_two
    monkeypatch.setattr(waiting_imports, "fixed_by_round_two", lambda *a: seen.append(real_two(*a)) or seen[-1])
    planned_from_text: list[str] = []
    real_plan = pipeline._plan_with_analysis
    monkeypatch.setattr(pipeline, "_plan_with_analysis", lambda t, *a: planned_from_text.append(t) or real_plan(t, *a))
    assert _imports_fixable(LATER, "later.py") == [True, True]
    (two,) = seen
    assert two is not None and two.text is not None and two.tree is not None
    assert two.text not in planned_from_text
    assert len(planned_from_text) >= 2  # the source, and the rounds after the second
