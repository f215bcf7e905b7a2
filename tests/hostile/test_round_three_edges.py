"""Issue 40 item 10: long lines cost linear time; a file Python does not compile keeps its unused
`# noqa` and gets NM901; a 255-byte file name can be fixed; a notebook saved with CR-only line
ends keeps the layout of its `source` arrays.

Before: 20,000 aliases on one import, each used once, took 45 s of CPU to check (each finding
scanned the 600 KB first line for its line end); `return` at module level beside an unused
`# noqa` was edited; `--fix` of a 255-byte name said "File name too long" (its temporary name
added 35 bytes); a CR notebook's cell became one string."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hostile_bounds import bounded
from hostile_helpers import XLA, cli, no_stray, out

pytestmark = pytest.mark.slow  # subprocesses of the installed script


def aliases(n: int) -> str:
    head = "from torch_xla.core.xla_model import xla_device, " + ", ".join(f"xla_device as o{i}" for i in range(n))
    return head + "\nxla_device()\n" + "".join(f"o{i}()\n" for i in range(n))


@pytest.mark.parametrize("mode", [[], ["--fix"]])
def test_twenty_thousand_aliases_on_one_line_check_in_linear_time(tmp_path: Path, mode: list[str]) -> None:
    (tmp_path / "long.py").write_text(aliases(20_000))
    got = bounded(["check", "--no-cache", "--statistics", *mode, "long.py"], tmp_path, cpu=20)
    assert got.cpu < 8, got.cpu  # 45 s before; 5,000 aliases took 3.7 s
    assert got.rc in (0, 1), got.out
    if not mode:
        assert "20001\tNM101" in got.out


BROKEN = {
    "ret.py": ("x = 1  # noqa: NM101\nreturn 5\n", "2:1: NM901 Fix the syntax error before migrating: 'return'"),
    "wait.py": ("x = 1  # noqa: NM1\nawait g()\n", "2:1: NM901 Fix the syntax error before migrating: 'await'"),
    "nonlocal.py": ("x = 1  # noqa: NM101\nnonlocal q\n", "2:1: NM901 Fix the syntax error before migrating: nonloc"),
}


@pytest.mark.parametrize("fix", [False, True])
def test_a_file_python_does_not_compile_keeps_its_unused_noqa(tmp_path: Path, fix: bool) -> None:
    for name, (text, _) in BROKEN.items():
        (tmp_path / name).write_text(text)
    done = cli(["check", "--no-cache", *(["--fix"] if fix else []), "."], tmp_path)
    text = out(done)
    assert done.returncode == 1, text
    for name, (source, finding) in BROKEN.items():
        assert f"{name}:{finding}" in text
        assert (tmp_path / name).read_text() == source
    assert "NM910" not in text and "fixed" not in text.replace("0 fixed", "")


@pytest.mark.parametrize("stem", ["a" * 252, "\u00e9" * 126], ids=["ascii", "utf-8"])
def test_a_255_byte_file_name_is_fixed(tmp_path: Path, stem: str) -> None:
    path = tmp_path / f"{stem}.py"
    assert len(path.name.encode()) == 255
    path.write_text(XLA)
    done = cli(["check", "--no-cache", "--fix", "."], tmp_path)
    assert done.returncode == 0, out(done)
    assert 'torch.device("neuron")' in path.read_text()
    assert no_stray(tmp_path) == []
    report = "r" * 250 + ".html"  # an output file named so long is written the same way
    done = cli(["report", "--no-cache", "-o", report, "."], tmp_path)
    assert done.returncode == 0 and (tmp_path / report).is_file(), out(done)


def notebook(sources: list[list[str]]) -> str:
    cells = [
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}
        for source in sources
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


@pytest.mark.parametrize("end", ["\r", "\r\n", "\n"], ids=["cr", "crlf", "lf"])
def test_a_notebook_keeps_its_source_arrays_whatever_its_line_ends(tmp_path: Path, end: str) -> None:
    lines = ["import torch_xla.core.xla_model as xm", "d = xm.xla_device()", "print(d)"]
    (tmp_path / "n.ipynb").write_text(notebook([[line + end for line in lines] + ["x = 1"]]), newline="")
    done = cli(["check", "--no-cache", "--fix", "n.ipynb"], tmp_path)
    assert done.returncode == 0, out(done)
    fixed = ["import torch", 'd = torch.device("neuron")', "print(d)"]
    expected = notebook([[line + end for line in fixed] + ["x = 1"]])
    assert (tmp_path / "n.ipynb").read_bytes() == expected.encode()
