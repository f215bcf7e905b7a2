"""Hostile and unusual input: bounded time and memory, clear errors, and `--fix` that never surprises.

Time and memory bounds are measured in a fresh subprocess (peak RSS of that process) and are
generous: they catch exponential and quadratic blow-ups, not small regressions.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.settings import Settings

ROOT = Path(__file__).resolve().parents[1]

_MEASURE = """
import json, resource, sys, time
from pathlib import Path
from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.settings import Settings
text = Path(sys.argv[1]).read_text()
settings = Settings(fix=sys.argv[2] == "fix")
start = time.perf_counter()
result = check_source(text, sys.argv[1], settings)
elapsed = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"seconds": elapsed, "peak": peak, "codes": sorted({f.code for f in result.findings})}))
"""


def measure(tmp_path: Path, text: str, mode: str = "check") -> dict:
    """Check `text` in a fresh interpreter; its time, peak memory in bytes and finding codes."""
    path = tmp_path / "measured.py"
    path.write_text(text)
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path), mode],
        capture_output=True, text=True, timeout=120, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


# -- 1. the alias resolver is linear in the number of bindings -----------------------------
def test_rebinding_one_alias_many_times_checks_fast(tmp_path: Path) -> None:
    rebinds = "".join(f"x = x.{name}\n" for name in "abcdefghijkl")  # twelve; six took 217 s
    text = f"import torch_xla.core.xla_model as x\n{rebinds}x.xla_device()\n"
    got = measure(tmp_path, text)
    assert got["seconds"] < 1.0
    assert got["peak"] < 200 * 2**20
    assert "NM101" in got["codes"]


# -- 2. memory is bounded by the file's size --------------------------------------------------
MILLION_INTS = "import torch_xla.core.xla_model as xm\nDATA = [" + ", ".join(["7"] * 1_000_000) + "]\nxm.xla_device()\n"


@pytest.mark.parametrize("mode", ["check", "fix"])
def test_million_element_list_stays_under_300_mb(tmp_path: Path, mode: str) -> None:
    got = measure(tmp_path, MILLION_INTS, mode)
    assert got["peak"] < 300 * 2**20
    assert got["codes"] == ["NM904"]  # refused with the reason, before parsing


def test_file_too_big_to_fix_is_still_checked() -> None:
    text = "import torch_xla.core.xla_model as xm\nDATA = [" + ", ".join(["7"] * 100_000) + "]\nxm.xla_device()\n"
    result = check_source(text, "mid.py", Settings(fix=True))
    assert result.fixed_source is None
    assert sorted(f.code for f in result.findings) == ["NM101", "NM601", "NM904"]
    assert any("with --fix needs about" in f.message for f in result.findings)


# -- 3. indent_unit does not backtrack over a long line ------------------------------------
def test_long_css_string_checks_fast(tmp_path: Path) -> None:
    text = 'import torch_xla.core.xla_model as xm\nSTYLE = "' + "color:#fff;" * 16_000 + '"\nxm.mark_step()\n'
    got = measure(tmp_path, text, "fix")
    assert got["seconds"] < 2.0  # 27 s before


# -- 5. a file that does not parse is never changed ----------------------------------------
def test_unparsable_file_keeps_noqa_inside_a_string() -> None:
    text = 'msg = "use # noqa: NM101 to silence"\nx = (1,\n'
    result = check_source(text, "broken.py", Settings(fix=True))
    assert result.fixed_source is None
