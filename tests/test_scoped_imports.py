"""A module that imports torch only inside functions still imports without torch once fixed.

The fixed module is imported in a fresh interpreter in which `import torch` fails, then its
helper runs with torch back (it imports what it needs itself).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES

from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.settings import Settings

_IMPORT_WITHOUT_TORCH = """
import sys
sys.modules["torch"] = None  # `import torch` now raises ImportError
import migrated
print("imported")
"""


def _fixed(name: str) -> str:
    source = (FIXTURES / "_multi" / f"{name}.py").read_text()
    fixed = check_source(source, f"{name}.py", Settings(fix=True)).fixed_source
    assert fixed is not None
    return fixed


def test_fixed_module_imports_without_torch(tmp_path: Path) -> None:
    (tmp_path / "migrated.py").write_text(_fixed("local_torch_imports"))
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_WITHOUT_TORCH],
        cwd=tmp_path,
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "imported"


def test_the_original_layout_would_need_torch_at_import(tmp_path: Path) -> None:
    """Control: a module-level torch import, as the fix wrote before, fails the same check."""
    (tmp_path / "migrated.py").write_text("import torch.distributed as dist\n" + _fixed("local_torch_imports"))
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_WITHOUT_TORCH], cwd=tmp_path, check=False, capture_output=True, timeout=60
    )
    assert done.returncode != 0


def test_helper_and_functions_run_with_torch(tmp_path: Path) -> None:
    pytest.importorskip("torch")  # the `dev` extra's fast loop has no torch
    (tmp_path / "migrated.py").write_text(_fixed("local_torch_imports"))
    program = (
        "import torch, migrated\n"
        "model = torch.nn.Linear(2, 1)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=1.0)\n"
        "before = model.weight.detach().clone()\n"
        "migrated.train_step(model, opt, torch.ones(3, 2))\n"
        "assert not torch.equal(before, model.weight), 'no step'\n"
        "print('stepped')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=tmp_path, check=False, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stepped"
