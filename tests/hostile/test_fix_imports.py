"""Item 2 of issue 24: an import a safe fix adds comes before its first use; `del NAME` is a use."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hostile_helpers import cli, out

pytestmark = pytest.mark.slow  # subprocesses of the installed script

STUB_TORCH = "def device(kind):\n    return kind\n"


def run_fixed(project: Path, name: str) -> subprocess.CompletedProcess[str]:
    """Run the fixed file with a stub `torch` (the fixes only need `torch.device`)."""
    (project / "torch").mkdir(exist_ok=True)
    (project / "torch" / "__init__.py").write_text(STUB_TORCH)
    return subprocess.run([sys.executable, name], cwd=project, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize(
    "source",
    [
        "import torch_xla.core.xla_model as xm\nd = xm.xla_device()\nimport json\nprint(json.dumps(str(d)))\n",
        '"""Doc."""\nimport torch_xla.core.xla_model as xm\nd = xm.xla_device()\nimport json, os\nprint(json.dumps(d))\n',
        "import os\nos.environ['A'] = '1'\nimport torch_xla.core.xla_model as xm\nd = xm.xla_device()\nimport json\nprint(d)\n",
    ],
)
def test_an_added_import_comes_before_its_first_use(tmp_path: Path, source: str) -> None:
    (tmp_path / "a.py").write_text(source)
    done = cli(["check", "--fix", "--no-cache", "a.py"], tmp_path)
    fixed = (tmp_path / "a.py").read_text()
    assert done.returncode == 0, out(done)
    assert fixed.index("import torch\n") < fixed.index("torch.device(")
    ran = run_fixed(tmp_path, "a.py")
    assert ran.returncode == 0, ran.stderr + fixed
    if "os.environ" in source:  # not moved above the code between the imports
        assert fixed.index("os.environ") < fixed.index("import torch\n")
    again = cli(["check", "--fix", "--no-cache", "a.py"], tmp_path)
    assert (tmp_path / "a.py").read_text() == fixed, out(again)  # a second --fix changes nothing


def test_the_reported_edits_put_the_import_before_its_use_too(tmp_path: Path) -> None:
    import json

    (tmp_path / "a.py").write_text("import torch_xla.core.xla_model as xm\nd = xm.xla_device()\nimport json\n")
    done = cli(["check", "--output-format", "json", "--no-cache", "a.py"], tmp_path)
    (finding,) = [f for f in json.loads(done.stdout) if f["code"] == "NM101"]
    (added,) = [e for e in finding["fix"]["edits"] if e["content"] == "import torch\n"]
    assert added["location"]["row"] == 2  # before `d = ...` on line 2, not after `import json`


def test_del_of_an_import_keeps_the_import(tmp_path: Path) -> None:
    (tmp_path / "b.py").write_text("import torch_xla.core.xla_model as xm\nd = xm.xla_device()\ndel xm\nprint(d)\n")
    done = cli(["check", "--fix", "--no-cache", "b.py"], tmp_path)
    fixed = (tmp_path / "b.py").read_text()
    assert "import torch_xla.core.xla_model as xm" in fixed and "del xm" in fixed
    assert "b.py:1:1: NM601 Remove the `torch_xla.core.xla_model` import" in out(done)
    assert "1 remaining" in out(done)  # never "0 remaining" for a file that would raise NameError
