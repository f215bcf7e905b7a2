"""`report` learns a file's check, its `--fix` and `--fix --unsafe-fixes` runs and its facts from
one reading and one analysis (`engine/variants.py`, `report.command.report_file`): each equals
what the separate runs give, and a cold report runs no fix pass and parses no checked file again."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

from neuron_migrate.analysis.source import DecodeError, decode
from neuron_migrate.engine import pipeline, planning
from neuron_migrate.engine.ruleset import might_match
from neuron_migrate.engine.variants import variants
from neuron_migrate.model import Safety
from neuron_migrate.report import command, facts
from neuron_migrate.run.discover import discover
from neuron_migrate.run.parallel import run_targets
from neuron_migrate.settings import Settings

INPUTS = sorted(p for p in FIXTURES.rglob("*.py") if not p.name.endswith(".fixed.py") and "_project" not in p.parts)
E2E = sorted((ROOT / "tests" / "e2e" / "programs").glob("*.py"))
FILES = {
    "auto.py": "import torch_xla.core.xla_model as xm\ndevice = xm.xla_device()\nxm.mark_step()\n",
    "unsafe.py": "import torch\n\n\ndef f(t):\n    return t.double()\n",
    "uses.py": "from auto import device\n\nimport torch\nx = torch.zeros(2, device='neuron')\n",
    "plain.py": "import os\n\nprint(os.getcwd())\n",
}


def _text(path: Path) -> str | None:
    try:
        return decode(path.read_bytes())[0]
    except DecodeError:
        return None


@pytest.mark.slow
@pytest.mark.parametrize("settings", [Settings(), Settings(families=("xla", "cuda"))], ids=["xla", "xla+cuda"])
def test_variants_equal_the_separate_runs_on_every_fixture_and_program(settings: Settings) -> None:
    safe, unsafe = replace(settings, fix=True, unsafe_fixes=False), replace(settings, fix=True, unsafe_fixes=True)
    differ = []
    for path in [*INPUTS, *E2E]:
        text = _text(path)
        if text is None:
            continue
        name = str(path.relative_to(ROOT))
        found = variants(text, name, settings)
        check = pipeline.check_source(text, name, settings)
        fixes = {s for f in check.findings if f.fix is not None for s in [f.fix.applicability]}
        expected = (
            check,
            pipeline.check_source(text, name, safe) if Safety.SAFE in fixes else None,
            pipeline.check_source(text, name, unsafe) if fixes & {Safety.SAFE, Safety.UNSAFE} else None,
        )
        if (found.check, found.safe, found.unsafe) != expected:
            differ.append(name)
    assert differ == []


def test_the_unsafe_run_is_the_safe_one_only_when_no_round_plans_an_unsafe_fix() -> None:
    only_safe = "import torch_xla.core.xla_model as xm\n\nxm.mark_step()\n"
    found = variants(only_safe, "s.py", Settings())
    assert found.safe is not None and found.unsafe is found.safe  # one run stood for both
    both = (
        "import torch_xla.core.xla_model as xm\nimport torch\n\nxm.mark_step()\n\n\ndef f(t):\n    return t.double()\n"
    )
    found = variants(both, "b.py", Settings())
    assert found.safe is not None and found.unsafe is not None and found.unsafe is not found.safe
    assert found.unsafe == pipeline.check_source(both, "b.py", Settings(fix=True, unsafe_fixes=True))
    assert found.unsafe.fixed_source != found.safe.fixed_source


def test_facts_from_the_checks_tree_equal_a_walk_of_every_node() -> None:
    """`report_file` reads the facts of an analysed file from the check's tree, through
    `fact_nodes`: the same facts as a walk of every node of a parse of its own."""
    neuron = 0
    for path in [*INPUTS, *E2E]:
        text = _text(path)
        if text is None:
            continue
        analysis = variants(text, path.name, Settings()).analysis
        if analysis is not None:
            whole = facts.facts_of_nodes(ast.walk(ast.parse(text)))
            assert facts.facts_of_nodes(facts.fact_nodes(analysis.tree, text)) == whole == facts.facts_of(text), path
            neuron += whole.neuron
    assert neuron > 20  # files with `neuron` code, found outside their imports too


NESTED_IMPORTS = """\
import a
try:
    import b
except ImportError:
    from c import d
else:
    import e
finally:
    from .f import g
match x:
    case 1:
        import h
with ctx():
    for i in j:
        import k
    else:
        import l
class M:
    def n(self):
        while True:
            from ..o import p
        import q
async def r():
    async with s:
        import t
import u
"""


def test_facts_of_a_text_without_neuron_reads_the_imports_in_walk_order() -> None:
    """Without the word `neuron`, `facts_of` visits only statements; the imports, and their
    order, must be those of a walk of every node."""
    texts = [NESTED_IMPORTS] + [t for t in (_text(p) for p in [*INPUTS, *E2E]) if t is not None]
    pruned = 0
    for text in texts:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        assert facts.facts_of(text) == facts.facts_of_nodes(ast.walk(tree))
        pruned += "neuron" not in text
    assert pruned > 100  # most fixtures take the pruned path
    found = facts.facts_of(NESTED_IMPORTS).imports
    assert [module for _, module, _ in found] == [*"aubefchklqto"]  # by depth, as ast.walk goes
    assert found[4] == (1, "f", ("g",)) and found[-1] == (2, "o", ("p",))


# Each holds `neuron` code in a place the pruned reading must still visit.
NEURON_CODE = [
    'x = torch.device(\n    "neuron"\n)\n',
    'class M:\n    def f(self):\n        if ok:\n            t.to("neuron")\n',
    '@wrap(device="neuron")\ndef f():\n    pass\n',
    'def f(d=torch.device("neuron:0")):\n    pass\n',
    "match x:\n    case torch.neuron.Thing():\n        pass\n",
    "try:\n    pass\nexcept ValueError:\n    y = lambda: torch.neuron.current_device()\n",
    'for d in [torch.device("neuron")]:\n    pass\nelse:\n    pass\n',
    'with torch.autocast("neuron"):\n    pass\n',
    "from torch import neuron\n",
]
NOT_NEURON_CODE = [
    '# torch.device("neuron")\nx = 1\n',
    'def f():\n    """Runs on torch.device("neuron")."""\n',
    "neurons = count_neurons(layer)\n",
    'torch.device("cpu")  # not "neuron"\n',
]


@pytest.mark.parametrize("text", NEURON_CODE + NOT_NEURON_CODE)
def test_the_pruned_facts_of_neuron_code_equal_a_walk_of_every_node(text: str) -> None:
    tree = ast.parse(text)
    whole = facts.facts_of_nodes(ast.walk(tree))
    assert whole.neuron is (text in NEURON_CODE)
    assert facts.facts_of_nodes(facts.fact_nodes(tree, text)) == whole == facts.facts_of(text)


def _project(tmp_path: Path, pool: int = 0) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    files = {**FILES, **{f"more/auto_{i}.py": FILES["auto.py"] for i in range(pool)}}
    (folder / "more").mkdir()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
        os.utime(folder / name, (time.time() - 60, time.time() - 60))  # past the cache's racy window
    return folder


def _report(folder: Path, *flags: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "neuron_migrate", "report", ".", "--format", "json", "-q", *flags],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    data["settings"].pop("date")  # the minute the report was made: two runs may straddle one
    return data


def test_a_report_after_a_check_equals_a_cold_one(tmp_path: Path) -> None:
    """Where check's result cache answers, the report runs the fixes apart (the check's work
    is not at hand): the report is the same as one that learnt everything in one pass, and
    as a warm one; with `--jobs 2` too (what the workers learnt travels back: 16 files or more
    start a pool, `run/parallel.py`)."""
    folder = _project(tmp_path, pool=14)
    cold = _report(folder, "--no-cache")
    pooled = _report(folder, "--no-cache", "--jobs", "2")
    subprocess.run([sys.executable, "-m", "neuron_migrate", "check", ".", "-q", "--exit-zero"], cwd=folder, check=True)
    after_check = _report(folder)
    warm = _report(folder)
    assert cold == pooled == after_check == warm


def test_a_cold_report_runs_no_fix_pass_and_parses_no_checked_file_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _project(tmp_path)
    monkeypatch.chdir(folder)
    apart: list[str] = []
    parsed: list[str] = []
    real_runs, real_facts = command._fix_runs, facts.facts_of
    monkeypatch.setattr(
        command, "_fix_runs", lambda todo, *a: apart.extend(r.path for r in todo) or real_runs(todo, *a)
    )
    monkeypatch.setattr(facts, "facts_of", lambda source: parsed.append(source) or real_facts(source))
    options = {**_OPTIONS, "no_cache": True}
    rep = command.collect((), options, folder)
    assert apart == []
    ruleset = planning.ruleset_for(Settings())
    unparsed = [text for text in FILES.values() if not might_match(text, ruleset)]  # the check never parsed these
    assert unparsed and sorted(parsed) == sorted(unparsed)
    assert {r.path: r.status for r in rep.files}["uses.py"] == "done"
    assert rep.relation.left_after_fix < rep.relation.found


_OPTIONS = {
    "select": (),
    "ignore": (),
    "extend_select": (),
    "exclude": (),
    "target_version": None,
    "config_file": None,
    "jobs": 1,
}


def test_what_the_worker_learnt_comes_back_from_the_pool(tmp_path: Path) -> None:
    folder = _project(tmp_path, pool=14)
    targets = discover([folder], Settings(), folder)
    alone: dict[str, object] = {}
    pooled: dict[str, object] = {}
    one = run_targets(targets, Settings(), jobs=1, write=False, worker=command.report_file, extras=alone)
    two = run_targets(targets, Settings(), jobs=2, write=False, worker=command.report_file, extras=pooled)
    assert len(targets) >= 16 and one == two
    assert sorted(pooled) == sorted(t.display for t in targets)
    assert [pooled[k][0] for k in sorted(pooled)] == [alone[k][0] for k in sorted(alone)]  # type: ignore[index]
