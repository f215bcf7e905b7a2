"""The walk's shortcuts change no finding: per-text rule narrowing, `resolved_only` detectors,
the module node index, and the in-memory fix run that stops before an imports-only round."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.index import RuleIndex, resolved_only, resolved_only_on
from neuron_migrate.analysis.names import Scope
from neuron_migrate.analysis.source import DecodeError, decode
from neuron_migrate.analysis.values import Match
from neuron_migrate.analysis.walk import walk
from neuron_migrate.catalogue import RuleSpec
from neuron_migrate.engine import check, pipeline, waiting_imports
from neuron_migrate.engine import ruleset as ruleset_module
from neuron_migrate.engine.ruleset import Ruleset, build_ruleset, enabled_codes, narrowed
from neuron_migrate.model import Safety, Severity
from neuron_migrate.settings import Settings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
INPUTS = sorted(p for p in FIXTURES.rglob("*.py") if not p.name.endswith(".fixed.py") and "_project" not in p.parts)
E2E = FIXTURES.parent / "tests" / "e2e" / "programs"


def _text(path: Path) -> str:
    try:
        return decode(path.read_bytes())[0]
    except DecodeError:
        return ""  # the encoding fixtures: nothing to compare


def _ruleset(settings: Settings) -> Ruleset:
    return build_ruleset(enabled_codes(settings), settings.target_version, settings.rule_sources, settings.target)


def _keys(text: str, path: str, settings: Settings) -> list[object]:
    result = pipeline.check_source(text, path, settings)
    return [(f.code, f.start, f.message, f.fix) for f in result.findings] + [result.fixed_source]


def test_narrowing_keeps_only_rules_whose_triggers_are_present() -> None:
    ruleset = _ruleset(Settings())
    plain = narrowed(ruleset, "import torch\nx = torch.zeros(3, dtype=torch.float64)\n")
    assert "NM411" in plain.codes  # float64
    assert not {"NM102", "NM201", "NM299", "NM601"} & plain.codes  # nothing names xla
    xla = narrowed(ruleset, "import torch_xla.core.xla_model as xm\nxm.mark_step()\n")
    assert {"NM201", "NM299", "NM601"} <= xla.codes
    assert narrowed(ruleset, "import torch_xla\n") is narrowed(
        ruleset, "import torch_xla  # again\n"
    )  # cached per code set


@pytest.mark.parametrize(
    "settings",
    [Settings(), Settings(families=("cuda",)), Settings(target="accelerator")],
    ids=["neuron", "cuda", "accel"],
)
def test_a_narrowed_set_indexes_what_building_its_codes_does(settings: Settings) -> None:
    """`narrowed` filters the full index instead of building one: the result must be the index
    `build_ruleset` makes for the same codes, on every fixture's text."""
    ruleset = _ruleset(settings)
    seen: set[frozenset[str]] = set()
    for path in INPUTS:
        small = narrowed(ruleset, _text(path))
        if small is ruleset or small.codes in seen:
            continue
        seen.add(small.codes)
        built = build_ruleset(small.codes, ruleset.target_version, ruleset.sources, ruleset.target)
        assert small.index == built.index, path
        assert list(small.index.exact) == [k for k in ruleset.index.exact if k in built.index.exact]
        assert narrowed(small, _text(path)) is small  # its gates are the full set's, for its codes
    assert len(seen) > 10  # the fixtures narrow to many different sets


@pytest.mark.slow
@pytest.mark.parametrize(
    "settings",
    [Settings(), Settings(fix=True, unsafe_fixes=True), Settings(families=("cuda",))],
    ids=["check", "fix", "cuda"],
)
def test_narrowing_changes_no_finding_on_any_fixture(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    narrowed = {p: _keys(_text(p), str(p), settings) for p in INPUTS}
    monkeypatch.setattr(check, "narrowed", lambda ruleset, text: ruleset)
    differ = [p.name for p in INPUTS if _keys(_text(p), str(p), settings) != narrowed[p]]
    assert differ == []
    assert len(INPUTS) > 300


@pytest.mark.slow
def test_fixable_counts_without_the_imports_only_round(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stopping the in-memory run before a round that only removes imports gives the same marks."""
    settings = Settings()
    shortcut = {p: _keys(_text(p), str(p), settings) for p in INPUTS}
    monkeypatch.setattr(pipeline, "_only_imports", lambda chosen, ruleset: False)
    assert [p.name for p in INPUTS if _keys(_text(p), str(p), settings) != shortcut[p]] == []


@pytest.mark.slow
def test_fixable_counts_without_the_fix_run_for_imports_a_fixless_use_keeps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Skipping the in-memory run when every waiting import keeps a use no safe fix touches gives
    the same marks and messages as running it (the e2e programs too: real training scripts)."""
    settings = Settings()
    inputs = [*INPUTS, *sorted(E2E.glob("*.py"))]
    shortcut = {p: _keys(_text(p), str(p), settings) for p in inputs}
    monkeypatch.setattr(waiting_imports, "may_go", lambda *args: True)
    assert [p.name for p in inputs if _keys(_text(p), str(p), settings) != shortcut[p]] == []


def test_an_import_with_a_use_no_fix_touches_runs_no_fix_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = pipeline._fix_loop
    monkeypatch.setattr(pipeline, "_fix_loop", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    kept = "import torch_xla.core.xla_model as xm\n\nd = xm.xla_device()\nxm.some_private_thing()\n"
    result = pipeline.check_source(kept, "kept.py", Settings())
    assert calls == [] and [f.code for f in result.findings if f.fix is not None] == ["NM101"]
    freed = "import torch_xla.core.xla_model as xm\n\nd = xm.xla_device()\n"
    result = pipeline.check_source(freed, "freed.py", Settings())  # its second round: the imports alone
    assert calls == [] and all(f.fix is not None for f in result.findings)


def _spec(code: str) -> RuleSpec:
    return RuleSpec(
        code=code, name="probe", message="m", severity=Severity.WARNING, safety=Safety.MANUAL, detector="probe"
    )


def test_resolved_only_detectors_skip_calls_that_resolve_to_nothing() -> None:
    seen: dict[str, list[str]] = {"any": [], "resolved": []}

    def record(kind: str):  # type: ignore[no-untyped-def]
        def detector(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
            seen[kind].append(ast.unparse(node))
            yield from ()

        return detector

    anyone, resolved = record("any"), resolved_only(record("resolved"))
    rules = [(_spec("NMX001"), anyone), (_spec("NMX002"), resolved)]
    index = RuleIndex(detectors={ast.Call: rules}, unresolved={ast.Call: rules[:1]})
    text = "import torch\nmodel = make()\ntorch.zeros(1)\nmodel.step()\n"
    walk(Analysis(text, ast.parse(text)), index)
    assert seen["any"] == ["make()", "torch.zeros(1)", "model.step()"]
    assert seen["resolved"] == ["torch.zeros(1)"]


def test_resolved_only_on_skips_only_the_node_types_it_names() -> None:
    seen: list[str] = []

    @resolved_only_on(ast.Name)
    def detector(rule: RuleSpec, analysis: Analysis, node: ast.AST, scope: Scope) -> Iterator[Match]:
        seen.append(ast.unparse(node))
        yield from ()

    spec = _spec("NMX003")
    index = RuleIndex(
        detectors={ast.Call: [(spec, detector)], ast.Name: [(spec, detector)]},
        unresolved={ast.Call: [(spec, detector)]},  # as build_ruleset indexes it (the next test)
    )
    text = "import torch\nmodel = make()\ntorch\nmodel\n"
    walk(Analysis(text, ast.parse(text)), index)
    # The call that resolves to nothing is still asked, and so is a name that is stored; the
    # loaded `model`, which resolves to nothing, is not.
    assert seen == ["model", "make()", "torch"]


def test_build_ruleset_indexes_resolved_only_on_per_node_type() -> None:
    ruleset = build_ruleset(frozenset({"NM411"}), "2.14")  # float64_dtype: resolved-only on names
    index = ruleset.index
    on = {kind for kind, rules in index.unresolved.items() if any(s.code == "NM411" for s, _ in rules)}
    assert ast.Call in on and ast.Name not in on and ast.Attribute not in on
    assert {ast.Call, ast.Name, ast.Attribute} <= {
        k for k, r in index.detectors.items() if any(s.code == "NM411" for s, _ in r)
    }


@pytest.mark.slow
def test_resolved_only_markers_change_no_finding_on_any_fixture(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every detector asked about every node (no marker honoured) finds what the marked walk does."""
    settings = Settings(families=("xla", "cuda"))
    inputs = [*INPUTS, *sorted(E2E.glob("*.py"))]
    marked = {p: _keys(_text(p), str(p), settings) for p in inputs}
    monkeypatch.setattr(ruleset_module, "RESOLVED_ONLY", "nm_no_such_marker")
    ruleset_module.build_ruleset.cache_clear()
    try:
        assert [p.name for p in inputs if _keys(_text(p), str(p), settings) != marked[p]] == []
    finally:
        ruleset_module.build_ruleset.cache_clear()


def test_module_node_index_is_ast_walk_order() -> None:
    text = (FIXTURES / "NM201" / "basic.py").read_text(encoding="utf-8")
    tree = ast.parse(text)
    analysis = Analysis(text, tree)
    expected = [n for n in ast.walk(tree) if isinstance(n, (ast.Call, ast.Constant))]
    assert analysis.nodes(ast.Call, ast.Constant) == expected
    assert analysis.nodes(ast.Call, ast.Constant) is analysis.nodes(ast.Call, ast.Constant)  # computed once


@pytest.mark.parametrize("settings", [Settings(), Settings(families=("cuda",))], ids=["neuron", "cuda"])
def test_narrowing_looks_for_a_word_only_where_the_words_it_contains_are(settings: Settings) -> None:
    """`narrowed` skips the search for a gate word when a gate word inside it is absent (no
    `torch_xla` without `xla`): the codes it keeps are those of searching for every word."""
    ruleset = _ruleset(settings)
    tests = dict(ruleset.gate_tests)
    if "torch_xla" in tests:
        assert "xla" in tests["torch_xla"] and not tests["xla"]
    assert any(tests.values())  # some search is skippable
    texts = [_text(path) for path in INPUTS] + ["graph", "cudagraphs", "XLA_FLAGS", "torchxla", "openxla"]
    for text in texts:
        present = {word for word in ruleset.gate_words if word in text}
        codes = {g.code for g in ruleset.gates if present & (g.substrings | g.identifiers)}
        small = narrowed(ruleset, text)
        assert (small.codes if small is not ruleset else {g.code for g in ruleset.gates}) == codes, text[:80]


_KEPT_BY_STRINGS = {
    "annotation": (
        "from typing import TYPE_CHECKING\nimport torch_xla.core.xla_model as xm\n\nif TYPE_CHECKING:\n"
        "    from torch_xla.distributed.parallel_loader import MpDeviceLoader\n\n\n"
        'def wrap(loader) -> "MpDeviceLoader":\n    xm.mark_step()\n    return loader\n'
    ),
    "exported": 'import torch_xla.core.xla_model as xm\n\n__all__ = ["xm"]\nxm.mark_step()\n',
    "patched": (
        "from unittest import mock\nimport torch_xla.core.xla_model as xm\n\nxm.mark_step()\n"
        'with mock.patch("pkg.xm.mark_step"):\n    pass\n'
    ),
    "backend": (
        "import torch.distributed as dist\nimport torch_xla.distributed.xla_backend\n"
        'import torch_xla.core.xla_model as xm\n\nxm.mark_step()\nprint("xla")\n'
    ),
}


@pytest.mark.parametrize("name", sorted(_KEPT_BY_STRINGS))
def test_an_import_a_string_keeps_runs_no_fix_rounds(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A string that keeps an import (a string annotation, `__all__`, a patch target, an `xla`
    backend string) and that no fix edits keeps it through every round: no in-memory fix run
    for it, and the marks the run would give."""
    text = _KEPT_BY_STRINGS[name]
    calls: list[str] = []
    real = pipeline._fix_loop
    monkeypatch.setattr(pipeline, "_fix_loop", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    shortcut = _keys(text, "t.py", Settings())
    assert calls == []
    kept = [f for f in pipeline.check_source(text, "t.py", Settings()).findings if f.code.startswith("NM60")]
    assert [f.fix is None for f in kept].count(True) == 1, kept  # the import the string keeps
    monkeypatch.setattr(waiting_imports, "may_go", lambda *args: True)
    assert _keys(text, "t.py", Settings()) == shortcut
    assert calls  # it did run every round, to the same marks


def test_a_string_an_import_fix_may_delete_later_does_not_keep_the_import(monkeypatch: pytest.MonkeyPatch) -> None:
    """The `"xla"` in the `except` of an optional import goes when a later round removes the
    `try` (once `xm` is unused), and then the backend import goes too: `may_go` leaves it to
    the run."""
    text = (
        "import torch_xla.distributed.xla_backend\n\ntry:\n    import torch_xla.core.xla_model as xm\n"
        'except ImportError:\n    _unused = "xla"\n\n\ndef step():\n    xm.mark_step()\n'
    )
    fixed = pipeline.check_source(text, "t.py", Settings(fix=True))
    assert "xla_backend" not in (fixed.fixed_source or "")  # --fix removes it in a third round
    answers: dict[str, bool] = {}
    real = waiting_imports.may_go
    monkeypatch.setattr(
        waiting_imports,
        "may_go",
        lambda analysis, planned, waiting, *rest: answers.setdefault(
            waiting.finding.code, real(analysis, planned, waiting, *rest)
        ),
    )
    pipeline.check_source(text, "t.py", Settings())
    assert answers == {"NM602": True, "NM601": True}
