"""The walk skips the statements no enabled rule can match in (`analysis/reach.py`): this changes
no finding, no fix and no fixed text, and it does skip."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest

from neuron_migrate.analysis import walk as walk_module
from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.index import NEEDLES
from neuron_migrate.analysis.reach import Reach, skipper
from neuron_migrate.analysis.source import DecodeError, decode
from neuron_migrate.analysis.values import Match
from neuron_migrate.analysis.walk import walk
from neuron_migrate.engine import pipeline
from neuron_migrate.engine.check import analyze as check_analyze
from neuron_migrate.engine.ruleset import Ruleset, build_ruleset, enabled_codes
from neuron_migrate.registry import registry
from neuron_migrate.settings import FAMILIES, Settings

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
INPUTS = sorted(
    [
        *(p for p in FIXTURES.rglob("*.py") if "_project" not in p.parts),
        *(ROOT / "tests" / "e2e" / "programs").glob("*.py"),
        *(ROOT / "tests" / "e2e" / "cuda").glob("*.py"),
    ]
)


def _text(path: Path) -> str:
    try:
        return decode(path.read_bytes())[0]
    except DecodeError:
        return ""  # the encoding fixtures: nothing to compare


def _result(text: str, path: str, settings: Settings) -> object:
    result = pipeline.check_source(text, path, settings)
    return result.findings, result.fixed, result.suppressed, result.fixed_source


def _ruleset(settings: Settings) -> Ruleset:
    return build_ruleset(enabled_codes(settings), settings.target_version, settings.rule_sources, settings.target)


def _own_rule(path: Path, fix: bool) -> Settings:
    """As tests/test_fixtures.py runs a case: only its rule (every rule for `_multi` and the rest)."""
    code = path.parent.name
    select = (code,) if code.startswith("NM") and code[2:].isdigit() else ("NM",)
    target = "accelerator" if path.stem.startswith(("accel_", "ok_accel_")) else "neuron"
    return Settings(select=select, fix=fix, unsafe_fixes=fix, target=target, families=FAMILIES)


@pytest.mark.parametrize(
    "make",
    [
        lambda p: Settings(families=FAMILIES),
        lambda p: _own_rule(p, fix=False),
        lambda p: _own_rule(p, fix=True),
        lambda p: Settings(families=FAMILIES, fix=True, unsafe_fixes=True, target="accelerator"),
    ],
    ids=["check-all", "check-own-rule", "fix-own-rule", "fix-all-accelerator"],
)
def test_skipping_changes_no_finding_fix_or_fixed_text(
    make: Callable[[Path], Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every fixture and e2e program, with skipping on and off: the same findings and fixed text."""
    texts = {p: _text(p) for p in INPUTS}
    skipping = {p: _result(texts[p], str(p), make(p)) for p in INPUTS}
    monkeypatch.setattr(walk_module, "SKIP_UNREACHABLE", False)
    assert [p.name for p in INPUTS if _result(texts[p], str(p), make(p)) != skipping[p]] == []
    assert len(INPUTS) > 600


def test_fixtures_do_skip() -> None:
    """Skipping is on in most fixture files (a guard against it silently turning off)."""
    ruleset = _ruleset(Settings(families=FAMILIES))
    skipped = 0
    for path in INPUTS:
        text = _text(path)
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        skipped += bool(check_analyze(text, tree, ruleset)[0].skipped)
    assert skipped > len(INPUTS) // 2


def test_every_shipped_detector_declares_needles() -> None:
    """A detector without needles turns skipping off wherever it may fire; none of ours lacks them."""
    assert [name for name, (_, detector) in registry().detectors.items() if not hasattr(detector, NEEDLES)] == []
    assert _ruleset(Settings(families=FAMILIES)).index.reach is not None


MODULE = """\
import numpy as np
import torch_xla.core.xla_model as xm

step = xm.mark_step


def helper(values):
    total = np.zeros(3)
    for value in values:
        total += value
    return total


class Trainer:
    def run(self):
        go = step
        go()

xm.master_print("done")
"""


def _analysis(text: str, settings: Settings | None = None) -> tuple[Analysis, list[Match]]:
    return check_analyze(text, ast.parse(text), _ruleset(settings or Settings(families=FAMILIES)))


def test_a_statement_without_a_needle_is_skipped_and_an_alias_is_not() -> None:
    analysis, matches = _analysis(MODULE)
    skipped = [type(s).__name__ + ":" + str(s.lineno) for s in analysis.skipped]
    assert skipped == ["Import:1", "FunctionDef:7"]  # `helper` spells no API any rule maps
    # `go = step` and `go()` spell no torch_xla name, but `go` and `step` are aliases of mark_step
    found = sorted((m.rule.code, m.node.lineno) for m in matches)
    assert found == [("NM201", 4), ("NM201", 16), ("NM201", 17), ("NM304", 19), ("NM601", 2)]


def test_skipping_off_walks_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    on = _analysis(MODULE)[1]
    monkeypatch.setattr(walk_module, "SKIP_UNREACHABLE", False)
    analysis, off = _analysis(MODULE)
    assert analysis.skipped == []
    assert [(m.rule.code, m.node.lineno, m.qualified) for m in off] == [
        (m.rule.code, m.node.lineno, m.qualified) for m in on
    ]


@pytest.mark.parametrize(
    "text",
    [
        "from torch_xla.core.xla_model import *\nimport os\ndef f():\n    return os.sep\nmark_step()\n",  # star import
        (
            "import torch_xla.core.xla_model as xm\ndef f():\n    x = 1\n    def g():\n        nonlocal x\n"
            "        x = 2\n    return x\n"
        ),  # nonlocal
        "import torch_xla.core.xla_model as xm\na = b.x\nb = a.y\nxm.mark_step()\ndef f():\n    return 1\n",  # a cycle
        "import torch_xla.core.xla_model as \uff58m\ndef f():\n    return 1\nxm.mark_step()\n",  # NFKC: a fullwidth x
    ],
    ids=["star", "nonlocal", "alias-cycle", "nfkc"],
)
def test_files_that_defeat_the_argument_are_walked_whole(text: str) -> None:
    analysis, _ = _analysis(text)
    assert analysis.skipped == []


def test_nfkc_spelling_still_matches() -> None:
    text = "import torch_xla.core.xla_model as \uff58m\ndef f():\n    \uff58m.mark_step()\n"
    codes = {m.rule.code for m in _analysis(text)[1]}
    assert "NM201" in codes  # the fullwidth name is `xm` to Python: f's call is found


def test_a_chain_is_found_through_its_last_part_and_a_bound_name_through_its_import() -> None:
    reach = Reach(frozenset(), (), frozenset({"torch_xla.core.xla_model.mark_step"}), frozenset())
    text = (
        "import torch_xla.core.xla_model as xm\n"
        "from torch_xla.core.xla_model import mark_step as ms\n"
        "xm.mark_step()\n"  # 3: spells mark_step
        "ms()\n"  # 4: ms is bound to it
        "xm.get_ordinal()\n"  # 5: neither
        "s = xm\n"  # 6: neither (s is no alias of mark_step)
    )
    analysis = Analysis(text, ast.parse(text))
    skip = skipper(reach, analysis.resolver, analysis.src)
    assert skip is not None
    assert [skip(s) for s in analysis.tree.body] == [True, False, False, False, True, True]


def test_decorators_count_as_the_definitions_source() -> None:
    text = "import torch\n\n@torch.compile\ndef f(x):\n    return x\n\ndef g(x):\n    return x\n"
    analysis, matches = _analysis(text, Settings())
    # `f` spells `compile` only in its decorator, above its `def` line: it is walked (its body is not)
    assert [(type(s).__name__, s.lineno) for s in analysis.skipped] == [
        ("Import", 1),
        ("Return", 5),
        ("FunctionDef", 7),
    ]
    # backend and dynamic unset: one finding, NM507's, whose fix passes both (NM503 leaves it to NM507)
    assert {m.rule.code for m in matches if m.node.lineno == 3} == {"NM507"}


def test_parents_inside_skipped_statements_are_linked_when_first_asked() -> None:
    analysis, _ = _analysis(MODULE)
    helper = next(s for s in analysis.skipped if isinstance(s, ast.FunctionDef))
    loop = helper.body[1]
    assert isinstance(loop, ast.For)
    augmented = loop.body[0]
    assert augmented not in analysis.parents  # not linked by the walk
    assert analysis.parent(helper) is analysis.tree
    assert analysis.parent(augmented) is loop  # linked now, with every other skipped statement
    expected = {id(child): node for node in ast.walk(helper) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(helper):
        if node is not helper and not isinstance(node, ast.expr_context):
            assert analysis.parent(node) is expected[id(node)]
    assert analysis.owner(augmented) is helper
    assert analysis.parent(analysis.tree) is None


def test_a_detector_asking_about_a_skipped_statement_during_the_walk_gets_its_parent() -> None:
    """`torch.tensor(a)` reads the statement that assigned `a` (skipped: it spells no needle) to learn
    that `a` holds float64."""
    text = "import numpy as np\nimport torch\na = np.zeros(3)\nt = torch.tensor(a)\n"
    analysis, matches = _analysis(text, Settings())
    assert any(isinstance(s, ast.Assign) and s.lineno == 3 for s in analysis.skipped)
    assert [(m.rule.code, m.node.lineno) for m in matches] == [("NM413", 4)]


def test_walk_of_a_tree_twice_keeps_its_links() -> None:
    text = MODULE
    tree = ast.parse(text)
    ruleset = _ruleset(Settings(families=FAMILIES))
    first = Analysis(text, tree)
    walk(first, ruleset.index)
    second = Analysis(text, tree)
    walk(second, ruleset.index)
    helper = tree.body[3]
    assert isinstance(helper, ast.FunctionDef)
    assert first.parent(helper.body[0]) is helper and second.parent(helper.body[0]) is helper


@pytest.mark.parametrize(
    ("text", "code", "line"),
    [
        ('import torch_xla\nimport torch\nok = cfg.run_Device == "xla"\n', "NM102", 3),  # fragment "device"
        ('import torch_xla\nimport torch\nDIST_BACKEND = "xla"\n', "NM310", 3),  # fragment "backend"
        ("import torch\nimport torch_xla\nnp_value = x.double()\n", "NM412", 3),  # word "double"
    ],
    ids=["device-fragment", "backend-fragment", "method-word"],
)
def test_a_statement_spelling_only_a_detectors_needle_is_walked(text: str, code: str, line: int) -> None:
    analysis, matches = _analysis(text, Settings())
    assert (code, line) in {(m.rule.code, m.node.lineno) for m in matches}
    assert analysis.skipped  # skipping was on in this file: the needle kept the statement


_WORDS = ["xm", "to", "device", "mark_step", "x_1", "é", "ß", "_", "a"]


def test_the_word_search_finds_what_one_pass_over_the_identifiers_does() -> None:
    """`spelled_by_search` (a search per word, for files with few words) against the one pass
    it replaces, on every fixture and on generated texts: words inside longer identifiers, at
    either end of the text, next to Unicode letters and digits, and overlapping themselves."""
    from neuron_migrate.analysis import reach

    hypothesis = pytest.importorskip("hypothesis")
    strategies = hypothesis.strategies
    words = set(_WORDS) | {"aa"}
    for path in INPUTS:
        text = _text(path)
        assert reach.spelled_by_search(text, words) == reach.spelled_by_pass(text, words), path

    @hypothesis.settings(max_examples=300, deadline=None, derandomize=True)
    @hypothesis.given(
        strategies.lists(
            strategies.sampled_from([*_WORDS, "aaa", " ", ".", "(", "\n", "0", "ǅ", "٣", "-"]), max_size=12
        ),
        strategies.sets(strategies.sampled_from([*_WORDS, "aa", "aaa"]), max_size=5),
    )
    def check(parts: list[str], chosen: set[str]) -> None:
        text = "".join(parts)
        assert reach.spelled_by_search(text, chosen) == reach.spelled_by_pass(text, chosen), (text, chosen)

    check()


def test_the_skipper_searches_for_few_words_and_passes_once_for_many(monkeypatch: pytest.MonkeyPatch) -> None:
    from neuron_migrate.analysis import reach

    calls: list[str] = []
    for name in ("spelled_by_search", "spelled_by_pass"):
        real = getattr(reach, name)
        monkeypatch.setattr(
            reach, name, lambda text, words, real=real, name=name: calls.append(name) or real(text, words)
        )
    few = {f"w{i}" for i in range(reach._FEW_WORDS)}
    reach._spelled_at("w1 w2", few)
    reach._spelled_at("w1 w2", few | {"w_more"})
    reach._spelled_at("a.b", {"a.b"})  # not a run of word characters: only the pass is right
    assert calls == ["spelled_by_search", "spelled_by_pass", "spelled_by_pass"]
