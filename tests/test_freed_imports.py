"""A torch_xla import that other fixes free: `check` marks it fixable from the analysis alone (its
own deletion, requiring the fixes of its uses), parses each file once and runs no fix."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

from neuron_migrate.engine import apply, fix_loop, pipeline, planning
from neuron_migrate.model import Finding, Requirement, Safety
from neuron_migrate.output import text as text_output
from neuron_migrate.settings import Settings

CHECK = Settings()
CORPUS = sorted(
    p
    for p in [*FIXTURES.glob("NM*/*.py"), *FIXTURES.glob("_multi/*.py"), *(ROOT / "tests/e2e/programs").glob("*.py")]
    if not p.name.endswith(".fixed.py")
)


def _import(text: str, settings: Settings = CHECK) -> Finding:
    (found,) = [f for f in pipeline.check_source(text, "t.py", settings).findings if f.code in ("NM601", "NM602")]
    return found


def test_a_plain_check_parses_each_file_once_and_runs_no_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    real = ast.parse
    monkeypatch.setattr(planning.ast, "parse", lambda source, *a, **k: parsed.append(source) or real(source, *a, **k))
    for module in (apply, fix_loop):
        monkeypatch.setattr(module, "apply_once", lambda *a: pytest.fail("a plain check applied a fix"))
    freed = 0
    for case in CORPUS:
        text = case.read_text(encoding="utf-8", errors="replace")
        for settings in (CHECK, replace(CHECK, unsafe_fixes=True), replace(CHECK, fix_edits=True)):
            parsed.clear()
            result = pipeline.check_source(text, case.name, settings)
            assert parsed.count(text) <= 1, case
            freed += sum(1 for f in result.findings if f.fix is not None and f.fix.requires)
    assert freed > 100  # the corpus has imports that other fixes free, and they were marked


def test_an_import_its_uses_fixes_free_is_deleted_once_they_are_made() -> None:
    found = _import("import torch_xla.core.xla_model as xm\n\nd = xm.xla_device()\n")
    assert found.fix is not None and found.fix.certain
    assert found.fix.requires == (Requirement("NM101", found.fix.requires[0].start),)
    assert found.fix.requires[0].start.line == 3
    assert [(e.start.line, e.end.line, e.content) for e in found.fix.edits] == [(1, 2, "")]  # its own deletion
    assert found.fix.message == "Remove the import; `--fix` removes it once the fixes of its uses leave it unused"


def test_a_use_no_fix_takes_away_keeps_the_import() -> None:
    found = _import("import torch_xla.core.xla_model as xm\n\nd = xm.xla_device()\nxm.some_private_thing()\n")
    assert found.fix is None


def test_with_only_its_own_rule_an_import_waits_on_no_fix() -> None:
    """Uses that no enabled rule reports keep the import, even when their code has a fix."""
    found = _import("import torch_xla.core.xla_model as xm\n\nd = xm.xla_device()\n", Settings(select=("NM601",)))
    assert found.fix is None


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
def test_a_string_no_fix_edits_keeps_its_import_and_the_check_agrees_with_fix(name: str) -> None:
    text = _KEPT_BY_STRINGS[name]
    checked = pipeline.check_source(text, "t.py", CHECK)
    imports = [f for f in checked.findings if f.code.startswith("NM60")]
    assert [f.fix is None for f in imports].count(True) == 1, imports  # the import the string keeps
    fixed = pipeline.check_source(text, "t.py", replace(CHECK, fix=True))
    assert sorted(f.code for f in fixed.fixed) == sorted(f.code for f in checked.findings if f.fix is not None)


def test_a_backend_string_a_fix_rewrites_is_waited_on() -> None:
    text = (FIXTURES / "_multi" / "backend_import_after_fix.py").read_text(encoding="utf-8")
    found = _import(text)
    assert found.fix is not None and found.fix.certain
    assert {r.code for r in found.fix.requires} == {"NM310"}  # the `"xla"` backend rewritten


def test_a_string_in_the_try_another_import_deletes_waits_on_that_import() -> None:
    """The `"xla"` in the `except` of an optional import goes with the `try`, once `xm` is
    unused: the backend import requires the other import's deletion, known statically."""
    text = (
        "import torch_xla.distributed.xla_backend\n\ntry:\n    import torch_xla.core.xla_model as xm\n"
        'except ImportError:\n    _unused = "xla"\n\n\ndef step():\n    xm.mark_step()\n'
    )
    checked = {f.code: f for f in pipeline.check_source(text, "t.py", CHECK).findings}
    backend, xla = checked["NM602"].fix, checked["NM601"].fix
    assert backend is not None and xla is not None and backend.certain and xla.certain
    assert [r.code for r in backend.requires] == ["NM601"] and [r.code for r in xla.requires] == ["NM201"]
    fixed = pipeline.check_source(text, "t.py", replace(CHECK, fix=True))
    assert "xla_backend" not in (fixed.fixed_source or "")  # --fix removes it in a third round


def test_where_only_the_run_can_tell_the_fix_is_uncertain_and_says_so() -> None:
    """An `if` whose body a fix empties may go with it, with the use in its test: known only
    once the fix is made (`[~]`), never simulated."""
    text = (
        "try:\n    import torch_xla.core.xla_model as xm\nexcept ImportError:\n    xm = None\n\n\n"
        "def step():\n    if xm is not None:\n        xm.mark_step()\n"
    )
    checked = pipeline.check_source(text, "t.py", CHECK)
    found = _import(text)
    assert found.fix is not None and not found.fix.certain
    lines = text_output.render([checked]).splitlines()
    assert any(" NM601 [~] " in line for line in lines)
    assert "[~] 1 more may be fixable with the `--fix` option, once the fixes they wait on are made." in lines
    assert "[*] 1 fixable with the `--fix` option." in lines  # the NM201 alone
    fixed = pipeline.check_source(text, "t.py", replace(CHECK, fix=True))
    assert sorted(f.code for f in fixed.fixed) == ["NM201", "NM601"]


def test_a_star_import_is_uncertain() -> None:
    found = _import("from torch_xla.core.xla_model import *\n\nmark_step()\n")
    assert found.fix is not None and not found.fix.certain and [r.code for r in found.fix.requires] == ["NM201"]


def test_a_suppressed_use_keeps_its_import_without_a_fix() -> None:
    text = "import torch_xla.core.xla_model as xm\n\nd = xm.xla_device()\nxm.mark_step()  # noqa: NM201\n"
    assert _import(text).fix is None


def test_the_fix_counts_of_check_are_what_fix_fixes_on_every_fixture() -> None:
    """File by file, the findings `check` marks `[*]` are those `--fix` fixes (and the `[~]` may be)."""
    differ = []
    for case in CORPUS:
        text = case.read_text(encoding="utf-8", errors="replace")
        checked = pipeline.check_source(text, case.name, CHECK)
        safe = [f for f in checked.findings if f.fix is not None and f.fix.applicability is Safety.SAFE]
        sure = sorted(f.code for f in safe if f.fix.certain)  # type: ignore[union-attr]  # safe: with a fix
        maybe = sorted(f.code for f in safe if not f.fix.certain)  # type: ignore[union-attr]  # (as above)
        fixed = sorted(f.code for f in pipeline.check_source(text, case.name, replace(CHECK, fix=True)).fixed)
        if not (set(sure) <= set(fixed) and len(sure) <= len(fixed) <= len(sure) + len(maybe)):
            differ.append((case.name, sure, maybe, fixed))
    assert differ == []


def test_json_and_sarif_carry_the_deletion_and_what_it_requires(tmp_path: Path) -> None:
    from neuron_migrate.output import json as json_output
    from neuron_migrate.output import sarif

    text = "import torch_xla.core.xla_model as xm\n\nd = xm.xla_device()\n"
    result = pipeline.check_source(text, str(tmp_path / "t.py"), replace(CHECK, fix_edits=True))
    (row,) = [json_output.finding_to_dict(f) for f in result.findings if f.code == "NM601"]
    assert row["fix"]["requires"] == [{"code": "NM101", "location": {"row": 3, "column": 5}}]
    assert row["fix"]["certain"] is True and row["fix"]["edits"]
    assert '"requires"' in sarif.render([result])
