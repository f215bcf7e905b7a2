"""Structural fixes: a LibCST transform is the fix's only implementation (engine/rewrite.py).

The fix checks the transform's preconditions on the `ast`, so `check` counts the finding fixable
without running LibCST; the last test proves the claim on every fixture and e2e program: every
finding `check` reports with a structural fix is fixed by `--fix`, its transform never declining.
"""

from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass
from types import MappingProxyType

import libcst as cst
import pytest
from conftest import FIXTURES, ROOT

from neuron_migrate.analysis.source import decode
from neuron_migrate.analysis.values import EXPRESSION, IMPORTS, STATEMENT, Decline, Match, Plan, Transform
from neuron_migrate.checks.toolkit import FixContext
from neuron_migrate.engine import planning, suppress
from neuron_migrate.engine.check import Planned, concrete_edits
from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.engine.planning import first_round, ruleset_for
from neuron_migrate.engine.rewrite import transform_edit
from neuron_migrate.engine.ruleset import Ruleset, build_ruleset
from neuron_migrate.settings import Settings


@dataclass(frozen=True)
class Rename:
    func: str


def _rename(node: cst.CSTNode, options: Rename) -> cst.CSTNode:
    if not isinstance(node, cst.Call):
        raise Decline
    return node.with_changes(func=cst.parse_expression(options.func))


def _edit(change: Transform, text: str, unit: str = "    ") -> str | None:
    found = transform_edit(dataclasses.replace(change, span=(0, len(text))), text, unit, "\n")
    return None if found is None else found.text


def test_an_expression_keeps_its_comments() -> None:
    change = Transform(_rename, (0, 0), EXPRESSION, Rename("torch.device"))
    assert (
        _edit(change, 'xm.xla_device(\n    "neuron",  # the device\n)')
        == 'torch.device(\n    "neuron",  # the device\n)'
    )


def test_a_low_precedence_result_is_parenthesised_where_its_place_needs_it() -> None:
    def conditional(node: cst.CSTNode, options: None) -> cst.CSTNode:
        return cst.parse_expression("'a' if x else 'b'")

    assert _edit(Transform(conditional, (0, 0), EXPRESSION, None, parenthesize=True), "f()") == "('a' if x else 'b')"
    assert _edit(Transform(conditional, (0, 0), EXPRESSION, None), "f()") == "'a' if x else 'b'"


def test_a_transform_that_declines_or_cannot_parse_gives_no_edit() -> None:
    change = Transform(_rename, (0, 0), EXPRESSION, Rename("g"))
    assert _edit(change, "x.y") is None  # not a call: Decline
    assert _edit(change, "f(a,\nb") is None


def test_a_statement_keeps_its_indentation_and_takes_the_files_step() -> None:
    def guard(stmt: cst.CSTNode, options: None) -> cst.CSTNode:
        assert isinstance(stmt, cst.SimpleStatementLine)
        return cst.If(test=cst.Name("ready"), body=cst.IndentedBlock(body=[stmt]))

    text = '      go("now")  # soon\n'
    assert _edit(Transform(guard, (0, 0), STATEMENT), text, "   ") == '      if ready:\n         go("now")  # soon\n'


def test_a_removed_statement_leaves_its_comments() -> None:
    change = Transform(lambda stmt, options: cst.RemovalSentinel.REMOVE, (0, 0), STATEMENT)
    assert _edit(change, "    f(a,  # first\n      b)  # noqa: E501\n") == "    # first\n"


def _with_fix(monkeypatch: pytest.MonkeyPatch, name: str, fix: object) -> None:
    def with_fix(*args: object) -> Ruleset:
        ruleset = build_ruleset(*args)  # type: ignore[arg-type]
        return dataclasses.replace(ruleset, fixes=MappingProxyType({**ruleset.fixes, name: fix}))

    monkeypatch.setattr(planning, "build_ruleset", with_fix)


def test_a_plugin_style_structural_fix_runs_through_the_pipeline(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fix written against the public interface: `check` counts it fixable without running the
    transform, JSON-like formats get its edit, and `--fix` writes it."""

    def xla_device(ctx: FixContext, match: Match) -> Plan | None:
        assert isinstance(match.node, ast.Call)
        return ctx.transform(match.node, _keep_arguments, Rename("torch.device"), (IMPORTS["torch"],))

    _with_fix(monkeypatch, "xla_device", xla_device)
    source = "import torch_xla.core.xla_model as xm\n\ndev = xm.xla_device(\n    0,  # the first core\n)\n"
    plain = check_source(source, "train.py", Settings(select=("NM101",), fix_edits=False))
    assert [(f.fix.applicability.value, f.fix.edits) for f in plain.findings if f.fix] == [("safe", ())]
    shown = check_source(source, "train.py", Settings(select=("NM101",), fix_edits=True))
    assert [[e.content for e in f.fix.edits] for f in shown.findings if f.fix] == [
        ["import torch\n", 'torch.device(\n    "neuron", 0,  # the first core\n)']
    ]
    fixed = check_source(source, "train.py", Settings(select=("NM101",), fix=True))
    assert (
        fixed.fixed_source
        == 'import torch_xla.core.xla_model as xm\nimport torch\n\ndev = torch.device(\n    "neuron", 0,  # the first core\n)\n'
    )


def _keep_arguments(node: cst.CSTNode, options: Rename) -> cst.CSTNode:
    assert isinstance(node, cst.Call)
    first = cst.Arg(cst.SimpleString('"neuron"'), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return node.with_changes(func=cst.parse_expression(options.func), args=[first, *node.args])


def test_a_transform_that_declines_leaves_its_finding_unfixed(monkeypatch: pytest.MonkeyPatch) -> None:
    def xla_device(ctx: FixContext, match: Match) -> Plan | None:
        return ctx.transform(match.node.func, _rename, Rename("torch.device"))  # type: ignore[attr-defined]  # a call

    _with_fix(monkeypatch, "xla_device", xla_device)
    source = "import torch_xla.core.xla_model as xm\n\nmake = [xm.xla_device()]  # `_rename` wants a call\n"
    monkeypatch.setattr(planning, "with_edits", lambda analysis, planned: planned)
    fixed = check_source(source, "train.py", Settings(select=("NM101",), fix=True))
    assert fixed.fixed_source is None
    assert [f.fix for f in fixed.findings if f.code == "NM101"] == [None]


CORPUS = sorted(
    p
    for p in [
        *FIXTURES.glob("NM*/*.py"),
        *FIXTURES.glob("_multi/*.py"),
        *(ROOT / "tests" / "e2e" / "programs").glob("*.py"),
    ]
    if not p.name.endswith(".fixed.py")
)


def _structural(text: str, path: str, settings: Settings) -> list[Planned]:
    start = first_round(text, path, settings, ruleset_for(settings))
    if not isinstance(start, tuple) or start[1] is None:
        return []
    reported = suppress.reporter(text, path, settings)  # not the findings a noqa comment silences
    return [p for p in start[0] if p.plan is not None and p.plan.transform is not None and reported(p.finding)]


def test_every_structural_fix_check_counts_is_made_by_its_transform_and_fixed_by_fix() -> None:
    """The claim `check` makes without LibCST holds: on every fixture and e2e program, each
    structural fix it reports runs (its transform does not decline), and `--fix` fixes the finding."""
    seen = 0
    for case in CORPUS:
        text, _ = decode(case.read_bytes())
        multi = case.parent.name in ("_multi", "programs")
        settings = Settings(
            select=("NM",) if multi else (case.parent.name,),
            target="accelerator" if case.stem.startswith(("accel_", "ok_accel_")) else "neuron",
            fix_edits=False,
        )
        structural = _structural(text, case.name, settings)
        if not structural:
            continue
        analysis = first_round(text, case.name, settings, ruleset_for(settings))[1]  # type: ignore[index]
        for item in structural:
            assert concrete_edits(analysis, item.plan) is not None, f"{case}: {item.finding.code} declined"  # type: ignore[arg-type]
        fixed = check_source(text, case.name, dataclasses.replace(settings, fix=True, unsafe_fixes=True))
        done = {(f.code, f.start) for f in fixed.fixed}
        for item in structural:
            assert (item.finding.code, item.finding.start) in done, f"{case}: {item.finding.code} not fixed"
        seen += len(structural)
    assert seen >= 20  # master_print, rendezvous, xm.save and xmp.spawn fixtures at least
