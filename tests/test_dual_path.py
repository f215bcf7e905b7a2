"""The two halves of a structural fix agree: the text edit `check` reports and the LibCST rewrite
`--fix` writes (`ctx.with_rewrite`) give the same program.

Layout may differ (keeping comments and one-argument-per-line is why the rewrite exists); the
AST may not. The dual path stays because `check` must not load LibCST (tests/test_startup.py);
this test is what keeps the two from drifting apart.

For every fixture case, every first-round plan that has a rewrite is applied alone both ways
(`apply_once` with and without `text_only`: the same import and empty-block handling, its text
edit or its rewrite), and the two results must parse to equal `ast.dump`s. A round's plans
applied together must agree too: a rewrite replaces its whole span, so another plan's edit inside
that span must wait for the next round rather than be overwritten.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.source import DecodeError, decode
from neuron_migrate.engine import pipeline
from neuron_migrate.engine.apply import apply_once
from neuron_migrate.engine.check import Planned
from neuron_migrate.engine.ruleset import build_ruleset, enabled_codes, might_match
from neuron_migrate.settings import Settings

CASES = sorted(
    p for p in [*FIXTURES.glob("NM*/*.py"), *FIXTURES.glob("_multi/*.py")] if not p.name.endswith(".fixed.py")
)


def _settings(case: Path) -> Settings:
    """As tests/test_fixtures.py fixes each case: its own rule (all for `_multi`), unsafe fixes on."""
    select = ("NM",) if case.parent.name == "_multi" else (case.parent.name,)
    target = "accelerator" if case.stem.startswith(("accel_", "ok_accel_")) else "neuron"
    return Settings(select=select, fix=True, unsafe_fixes=True, target=target)


def _planned(case: Path) -> tuple[Analysis | None, list[Planned]]:
    """The case's first-round plans (what `check` reports), and the analysis they were made on."""
    try:
        text = decode(case.read_bytes())[0]
    except DecodeError:
        return None, []
    settings = _settings(case)
    ruleset = build_ruleset(enabled_codes(settings), settings.target_version, settings.rule_sources, settings.target)
    if not might_match(text, ruleset):
        return None, []
    planned, _, analysis = pipeline._plan_with_analysis(text, case.name, ruleset)
    return analysis, [p for p in planned if p.plan is not None]


REWRITTEN = [case for case in CASES if any(p.plan and p.plan.rewrite for p in _planned(case)[1])]


def _dump(text: str) -> str:
    return ast.dump(ast.parse(text))


def _named_rewrites() -> set[str]:
    """Every `"neuron_migrate.checks.<concept>_cst:<name>"` string in checks/: the built-in rewrites."""
    return {
        node.value
        for path in (ROOT / "neuron_migrate" / "checks").glob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and re.fullmatch(r"neuron_migrate\.checks\.\w+_cst:\w+", node.value)
    }


def test_every_built_in_rewrite_is_compared_on_a_fixture() -> None:
    exercised = {p.plan.rewrite.function for c in REWRITTEN for p in _planned(c)[1] if p.plan and p.plan.rewrite}
    named = _named_rewrites()
    assert len(named) >= 9  # the strings are found
    assert named - exercised == set()


@pytest.mark.parametrize("case", REWRITTEN, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_each_rewrite_gives_the_program_its_text_edit_gives(case: Path) -> None:
    analysis, planned = _planned(case)
    assert analysis is not None
    differ = []
    for item in planned:
        if item.plan is None or item.plan.rewrite is None:
            continue
        text = apply_once(analysis, [item], text_only=True).text
        rewritten = apply_once(analysis, [item]).text
        if _dump(text) != _dump(rewritten):
            differ.append(f"{item.finding.code} at {item.finding.start.line}:{item.finding.start.column}")
    assert differ == []


@pytest.mark.parametrize("case", REWRITTEN, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_round_of_fixes_gives_one_program_either_way(case: Path) -> None:
    analysis, planned = _planned(case)
    assert analysis is not None
    assert _dump(apply_once(analysis, planned, text_only=True).text) == _dump(apply_once(analysis, planned).text)
