"""Issue 40 item 2: the cost estimate counts what the parsers really spend (f-string
placeholders, which CPython 3.11 parses in quadratic time; blank lines and comments, a LibCST
node each), so a pathological file ends as NM904 in bounded CPU time and memory, under
`check`, `--diff` and `--fix`, and a file just under the limits is still checked and fixed.

Before: 480 KB of `f"{x}{x}..."` took 32 s of CPU and 455 MB to check, 73 s and 1.26 GB with
`--diff`; 4 MB of blank lines 1.3 GB with `--diff`, and under a 1 GiB address-space limit the
fix ended in NM908 "MemoryError". Each run here has a CPU-time limit the old code exceeds.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_bounds import MiB, bounded

pytestmark = pytest.mark.slow  # subprocesses measuring CPU time and memory

HEAD = "import torch_xla.core.xla_model as xm\nd = xm.xla_device()\n"


def fstring(placeholders: int) -> str:
    return HEAD + 'x = 1\ny = f"' + "{x}" * placeholders + '"\n'


@pytest.mark.parametrize("mode", [[], ["--diff"], ["--fix"]])
def test_an_f_string_of_160k_placeholders_is_refused_in_bounded_time(tmp_path: Path, mode: list[str]) -> None:
    (tmp_path / "big.py").write_text(fstring(160_000))
    got = bounded(["check", "--no-cache", *mode, "--output-format", "json", "big.py"], tmp_path, cpu=20)
    assert got.rc == 1, got.out
    assert '"code": "NM904"' in got.out
    assert got.cpu < 5 and got.peak < 200 * MiB, (got.cpu, got.peak)
    assert (tmp_path / "big.py").read_text() == fstring(160_000)


def test_the_f_string_limit_refuses_the_slow_file_and_checks_the_one_below(tmp_path: Path) -> None:
    """A 150 KB f-string parses in about 3 s per parse (quadratic), twice per check: refused
    on the estimate of its parse time; 31,000 placeholders (93 KB) are still checked."""
    (tmp_path / "slow.py").write_text(fstring(50_000))
    (tmp_path / "near.py").write_text(fstring(31_000))
    got = bounded(["check", "--no-cache", "--jobs", "1", "slow.py", "near.py"], tmp_path, cpu=12)
    assert got.rc == 1, got.out
    assert "slow.py:1:1: NM904 Exclude this file or split it; parsing its 50,000 f-string placeholders" in got.out
    assert "near.py:2:5: NM101" in got.out and "near.py:1:1: NM904" not in got.out
    assert got.cpu < 8, got.cpu


@pytest.mark.parametrize("mode", [["--diff"], ["--fix"]])
def test_4_mb_of_blank_lines_is_checked_but_not_fixed_under_a_1_gib_limit(tmp_path: Path, mode: list[str]) -> None:
    text = HEAD + "\n" * 4_000_000
    (tmp_path / "blank.py").write_text(text)
    got = bounded(["check", "--no-cache", *mode, "blank.py"], tmp_path, cpu=30, space=1024 * MiB)
    assert "MemoryError" not in got.out and "NM908" not in got.out, got.out
    assert got.rc == 1, got.out
    assert got.cpu < 8 and got.peak < 400 * MiB, (got.cpu, got.peak)
    if mode == ["--fix"]:
        assert "NM904 Fix this file by hand or split it; analysing its 4,000,002 lines with --fix" in got.out
        assert "blank.py:2:5: NM101" in got.out  # still checked
    assert (tmp_path / "blank.py").read_text() == text


def test_the_line_limit_refuses_a_slow_fix_and_fixes_the_file_below(tmp_path: Path) -> None:
    """LibCST spends about 6 us on each line (and 4 us more on a comment), whatever it holds:
    1,000,000 comment lines are refused for --fix; 200,000 blank lines are fixed."""
    (tmp_path / "slow.py").write_text(HEAD + "#\n" * 1_000_000)
    (tmp_path / "near.py").write_text(HEAD + "\n" * 200_000)
    got = bounded(["check", "--no-cache", "--fix", "--jobs", "1", "slow.py", "near.py"], tmp_path, cpu=30)
    assert "slow.py:1:1: NM904 Fix this file by hand or split it; " in got.out, got.out
    assert 'torch.device("neuron")' in (tmp_path / "near.py").read_text()
    assert 'torch.device("neuron")' not in (tmp_path / "slow.py").read_text()
    assert got.cpu < 10 and got.peak < 300 * MiB, (got.cpu, got.peak)
