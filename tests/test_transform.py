"""The LibCST rewrite interface (engine/rewrite.py), alone and through the pipeline."""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
from types import MappingProxyType

import libcst as cst
import pytest

from neuron_migrate.analysis.values import EXPRESSION, IMPORTS, STATEMENT, Decline, Match, Plan, Rewrite
from neuron_migrate.checks.fixes import FixContext
from neuron_migrate.engine import pipeline
from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.engine.rewrite import apply_rewrite
from neuron_migrate.engine.ruleset import Ruleset, build_ruleset
from neuron_migrate.settings import Settings


def _rename(node: cst.CSTNode, func: str) -> cst.CSTNode:
    if not isinstance(node, cst.Call):
        raise Decline
    return node.with_changes(func=cst.parse_expression(func))


def test_an_expression_keeps_its_comments() -> None:
    rewrite = Rewrite(_rename, (0, 0), EXPRESSION, (("func", "torch.device"),))
    text = 'xm.xla_device(\n    "neuron",  # the device\n)'
    assert apply_rewrite(rewrite, text, "    ", "\n") == 'torch.device(\n    "neuron",  # the device\n)'


def test_an_expression_takes_parentheses_and_quotes() -> None:
    def conditional(node: cst.CSTNode) -> cst.CSTNode:
        return cst.parse_expression('"a" if x else "b"')

    rewrite = Rewrite(conditional, (0, 0), EXPRESSION, quotes=('"',), parenthesize=True)
    assert apply_rewrite(rewrite, "f()", "    ", "\n") == "('a' if x else 'b')"


def test_a_declined_or_unparsable_span_keeps_the_text_edit() -> None:
    rewrite = Rewrite(_rename, (0, 0), EXPRESSION, (("func", "g"),))
    assert apply_rewrite(rewrite, "x.y", "    ", "\n") is None  # not a call: Decline
    assert apply_rewrite(rewrite, "f(a,\nb", "    ", "\n") is None


def test_a_statement_is_rewritten_at_its_indentation() -> None:
    def guard(stmt: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(stmt, cst.SimpleStatementLine)
        return cst.If(test=cst.Name("ready"), body=cst.IndentedBlock(body=[stmt]))

    rewrite = Rewrite(guard, (0, 0), STATEMENT)
    text = '      go("now")  # soon\n'
    assert apply_rewrite(rewrite, text, "   ", "\n") == '      if ready:\n         go("now")  # soon\n'


def test_a_removed_statement_leaves_its_comments() -> None:
    rewrite = Rewrite(lambda stmt: cst.RemovalSentinel.REMOVE, (0, 0), STATEMENT)
    text = "    f(a,  # first\n      b)  # noqa: E501\n"
    assert apply_rewrite(rewrite, text, "    ", "\n") == "    # first\n"


def test_a_plugin_style_fix_runs_through_the_pipeline(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fix written against the public interface: the text edit for check, LibCST for --fix."""

    def xla_device(ctx: FixContext, match: Match) -> Plan | None:
        assert isinstance(match.node, ast.Call)
        plan = ctx.replace(match.node, 'torch.device("neuron")', (IMPORTS["torch"],))
        return ctx.with_rewrite(plan, match.node, _keep_arguments, func="torch.device")

    def with_fix(*args: object) -> Ruleset:
        ruleset = build_ruleset(*args)  # type: ignore[arg-type]
        return dataclasses.replace(ruleset, fixes=MappingProxyType({**ruleset.fixes, "xla_device": xla_device}))

    monkeypatch.setattr(pipeline, "build_ruleset", with_fix)
    source = "import torch_xla.core.xla_model as xm\n\ndev = xm.xla_device(\n    0,  # the first core\n)\n"
    checked = check_source(source, "train.py", Settings(select=("NM101",)))
    assert [[e.content for e in f.fix.edits] for f in checked.findings if f.fix] == [
        ["import torch\n", 'torch.device("neuron")']
    ]
    fixed = check_source(source, "train.py", Settings(select=("NM101",), fix=True, unsafe_fixes=True))
    assert (
        fixed.fixed_source
        == 'import torch_xla.core.xla_model as xm\nimport torch\n\ndev = torch.device(\n    "neuron", 0,  # the first core\n)\n'
    )


def _keep_arguments(node: cst.CSTNode, func: str) -> cst.CSTNode:
    assert isinstance(node, cst.Call)
    first = cst.Arg(cst.SimpleString('"neuron"'), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return node.with_changes(func=cst.parse_expression(func), args=[first, *node.args])


def test_the_old_plugin_import_path_is_an_alias_without_libcst() -> None:
    """`neuron_migrate.analysis.transform.Decline` (the old path plugins use) is the same class,
    and importing it loads no LibCST (a plugin's detector module may import it)."""
    probe = (
        "import sys\n"
        "from neuron_migrate.analysis import values, transform\n"
        "assert transform.Decline is values.Decline and transform.Rewrite is values.Rewrite\n"
        "print('libcst' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
