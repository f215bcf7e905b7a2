"""The pure parts of scripts/ecosystem.py: undefined names, framework imports, the summary table."""

from __future__ import annotations

import collections
import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyflakes")
_PATH = Path(__file__).resolve().parent.parent / "scripts" / "ecosystem.py"
_SPEC = importlib.util.spec_from_file_location("ecosystem", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
ecosystem = importlib.util.module_from_spec(_SPEC)
sys.modules["ecosystem"] = ecosystem
_SPEC.loader.exec_module(ecosystem)


def test_undefined_names_counts_only_undefined() -> None:
    before = "import os\nprint(os.sep)\n"
    after = "print(os.sep, dist.get_rank())\n"
    added = ecosystem.undefined_names(after, "f.py") - ecosystem.undefined_names(before, "f.py")
    assert added == collections.Counter({"UndefinedName:os": 1, "UndefinedName:dist": 1})


def test_imports_module_reads_imports_not_text() -> None:
    assert ecosystem.imports_module("import torch_xla.core.xla_model as xm\n", "torch_xla")
    assert ecosystem.imports_module("from torch_xla import runtime\n", "torch_xla")
    assert not ecosystem.imports_module("# torch_xla is gone\nx = 'torch_xla'\n", "torch_xla")
    assert not ecosystem.imports_module("from .torch_xla import x\n", "torch_xla")


def test_render_reports_problems_and_rules() -> None:
    package = ecosystem.PackageResult("pkg==1", files=3, source_files=["a.py"])
    check = ecosystem.ModeResult(findings=collections.Counter({"NM201": 2}))
    fix = ecosystem.ModeResult(changed=["a.py"], off_source=["a.py"], new_undefined=["a.py: UndefinedName:dist"])
    package.modes = {"check": check, "fix": fix, "unsafe": ecosystem.ModeResult(changed=["a.py"])}
    report = ecosystem.render([package], "xla")
    assert "| pkg==1 | 3 | 1 | 2 | 0 | 1 / 1 | 0 / 0 | 1 / 0 | 0 / 0 | 1 / 0 |" in report
    assert "| NM201 | 2 | 0 | 0 |" in report
    assert "pkg==1 (fix): new undefined name: `a.py: UndefinedName:dist`" in report


def test_cuda_marker_reads_uses_not_look_alikes() -> None:
    marker = ecosystem.MARKERS["cuda"]
    assert ecosystem.imports_module("x = t.cuda()\n", marker)
    assert ecosystem.imports_module("ok = torch.cuda.is_available()\n", marker)
    assert ecosystem.imports_module("dist.init_process_group('nccl')\n", marker)
    assert ecosystem.imports_module('t.to("cuda:1")\n', marker)
    assert not ecosystem.imports_module("cuda_kernels = load()\nx = t.to(device)\n", marker)


def test_xla_call_sites_resolve_aliases_and_mark_spmd_files() -> None:
    text = (
        "import torch_xla.core.xla_model as xm\n"
        "from torch_xla.distributed import xla_multiprocessing as xmp\n"
        "def f(xm2=None):\n"
        "    d = xm.xla_device()\n"
        "    xmp.spawn(f)\n"
        "    xm = None\n"  # a local of f: its own `xm`, not torch_xla's
        "print(len([]))\n"
    )
    sites = ecosystem.xla_call_sites(text, "a.py")
    assert [(s.line, s.name, s.spmd_or_nxd) for s in sites] == [
        (5, "torch_xla.distributed.xla_multiprocessing.spawn", False)
    ]
    spmd = "import torch_xla.distributed.spmd as xs\nimport torch_xla.core.xla_model as xm\nxm.mark_step()\n"
    assert [(s.name, s.spmd_or_nxd) for s in ecosystem.xla_call_sites(spmd, "b.py")] == [
        ("torch_xla.core.xla_model.mark_step", True)
    ]


def test_blocker_findings_mark_their_call_sites() -> None:
    text = "import torch_xla.distributed.spmd as xs\nimport torch\nt = torch.ones(2)\nxs.mark_sharding(t, mesh, (0,))\n"
    sites = ecosystem.with_blockers(ecosystem.xla_call_sites(text, "s.py"), text, "s.py", "xla")
    assert [(s.line, s.blocker) for s in sites] == [(4, True)]


def test_the_site_table_gives_the_share_of_calls_left_without_a_blocker() -> None:
    site = ecosystem.XlaSite
    package = ecosystem.PackageResult("pkg==1")
    package.xla_sites = [site("a.py", i, "torch_xla.core.xla_model.mark_step") for i in range(10)]
    package.xla_sites += [site("s.py", 1, "torch_xla.distributed.spmd.mark_sharding", spmd_or_nxd=True)]
    left = [
        site("a.py", 3, "torch_xla.core.xla_model.mesh_reduce"),
        site("s.py", 1, "torch_xla.distributed.spmd.mark_sharding", blocker=True, spmd_or_nxd=True),
    ]
    modes = {"check": ecosystem.ModeResult(), "fix": ecosystem.ModeResult()}
    package.modes = {**modes, "unsafe": ecosystem.ModeResult(xla_sites=left)}
    report = ecosystem.render([package], "xla")
    assert "| pkg==1 | 11 | 2 | 1 | 1 | 9.1% | 10 | 1 | 10.0% |" in report
    assert "- `torch_xla.core.xla_model.mesh_reduce`: 1" in report


def test_quality_counts_what_a_reviewer_would_not_merge() -> None:
    before = (
        "import torch_xla.core.xla_model as xm\n"
        "\n"
        "\n"
        "def f(debug, x):\n"
        "    if debug:\n"
        "        xm.mark_step()\n"
        "    # sync the graph\n"
        "    xm.mark_step()\n"
        "    xm.master_print(x)\n"
        "    return x\n"
    )
    after = (
        "import os\n"
        "\n"
        "\n"
        "def _helper():\n"
        "    return 1\n"
        "\n"
        "\n"
        "def f(debug, x):\n"
        "    if debug:\n"
        "        pass\n"
        "    # sync the graph\n"
        "\n"
        "    if int(os.environ.get('RANK', 0)) == 0:\n"
        "        print(x)\n"
        "    return x\n"
    )
    counts = ecosystem.quality_counts(before, after)
    assert counts == collections.Counter({"rank_guards": 1, "dead_blocks": 1, "orphaned_comments": 1, "helpers": 1})
    assert sum(ecosystem.quality_counts(before, before).values()) == 0
