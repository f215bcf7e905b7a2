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
