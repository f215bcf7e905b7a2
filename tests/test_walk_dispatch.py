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
from neuron_migrate.engine import check, pipeline
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
