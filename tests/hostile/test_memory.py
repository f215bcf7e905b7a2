"""Item 4 of issue 24: memory is bounded per file, and one file never ends the run.

Peak memory is the high-water mark of the CLI process (RUSAGE_CHILDREN of a wrapper whose only
child it is); the RLIMIT_AS runs check that a file too big for the address space left is
skipped with NM904 before the native LibCST parser can abort the whole process.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_helpers import XLA, cli, measured, out

pytestmark = pytest.mark.slow  # subprocesses measuring time and memory

MiB = 2**20
HEAD = "import torch_xla.core.xla_model as xm\nd = xm.xla_device()\n"
LISTS = {
    "strings": HEAD + "x = [" + '"",' * (700_000) + "]\n",  # 2 MB: 1 GB to check, 3 GB with --diff before
    "tuples": HEAD + "x = [" + "()," * (700_000) + "]\n",  # 2 MB: 1.5 GB to check, 5.4 GB to fix before
}


@pytest.mark.parametrize("name", sorted(LISTS))
@pytest.mark.parametrize("mode", [[], ["--diff"], ["--fix"]])
def test_a_2_mb_list_is_skipped_in_bounded_time_and_memory(tmp_path: Path, name: str, mode: list[str]) -> None:
    (tmp_path / "big.py").write_text(LISTS[name])
    got = measured(["check", "--no-cache", *mode, "--output-format", "json", "big.py"], tmp_path)
    assert got["peak"] < 300 * MiB, got["peak"]
    assert got["seconds"] < 30, got["seconds"]  # about 3 s on a loaded 2-core machine
    assert '"code": "NM904"' in got["stdout"] and "syntax nodes" in got["stdout"]
    assert (tmp_path / "big.py").read_text() == LISTS[name]


def test_the_estimate_itself_is_linear_in_memory(tmp_path: Path) -> None:
    """One 2 MB string: the estimate's regex took 134 times the file's size (268 MB)."""
    (tmp_path / "s.py").write_text(HEAD + "x = '" + "a" * (2 * MiB) + "'\n")
    got = measured(["check", "--no-cache", "s.py"], tmp_path)
    assert got["peak"] < 120 * MiB, got["peak"]
    assert "NM101" in got["stdout"]


@pytest.mark.parametrize("limit", [1024, 2048])
def test_under_an_address_space_limit_every_other_file_is_still_fixed(tmp_path: Path, limit: int) -> None:
    for name, text in LISTS.items():
        (tmp_path / f"{name}.py").write_text(text)
    (tmp_path / "small.py").write_text(XLA)
    middle = "".join(f"def f{i}(t):\n    return xm.mesh_reduce('x', t, sum)\n" for i in range(20_000))
    (tmp_path / "middle.py").write_text(HEAD + middle)  # 1 MB that fits: checked, and fixed where it can be
    done = cli(["check", "--no-cache", "--fix", "."], tmp_path, timeout=600, limit_as=limit * MiB)
    text = out(done)
    assert done.returncode == 1, text  # findings remain; never 134 (LibCST's abort) or a traceback
    assert "strings.py:1:1: NM904" in text and "tuples.py:1:1: NM904" in text
    assert 'torch.device("neuron")' in (tmp_path / "small.py").read_text()
    assert 'torch.device("neuron")' in (tmp_path / "middle.py").read_text() or "middle.py:1:1: NM904" in text
    assert "Traceback" not in text and "MemoryError" not in text
