"""Op compat data (rules/compat/*/ops.toml): the loader and the data.

The TOML files are generated from the lists in `neuron_migrate/generate/ops.py` by
`neuron-migrate dev generate`; tests/test_generated.py keeps them fresh.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from neuron_migrate.smoke import compat

ROOT = Path(__file__).resolve().parent.parent
VERSIONS = ("2.13", "2.14")


def test_rules_dir_falls_back_to_the_source_checkout() -> None:
    assert compat.rules_dir() == ROOT / "rules"
    assert set(VERSIONS) <= set(compat.available_versions())


def test_rules_dir_uses_the_copy_inside_an_installed_package(tmp_path: Path) -> None:
    # A wheel force-includes `rules` as `neuron_migrate/rules`; simulate that layout.
    package = tmp_path / "site" / "neuron_migrate"
    shutil.copytree(ROOT / "neuron_migrate", package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "rules", package / "rules")  # the whole folder, as the wheel ships it
    code = "from neuron_migrate.smoke import compat; print(compat.rules_dir()); compat.load_ops('2.13')"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path / "site")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == package / "rules"


@pytest.mark.parametrize("version", VERSIONS)
def test_linalg_and_fft_are_cpu_fallbacks_with_a_citation(version: str) -> None:
    ops = compat.load_ops(version)
    for name in (
        "aten::linalg_qr",
        "aten::_linalg_svd",
        "aten::_fft_r2c",
        "aten::_fft_c2c",
    ):
        assert ops[name].status == "cpu-fallback"
        assert "torchneuron-facts §8.3" in ops[name].source
    assert ops["aten::addmm"].status == "native"
    assert ops["c10d::monitored_barrier_"].status == "unsupported"


def test_every_entry_has_a_valid_status_and_source() -> None:
    for version in VERSIONS:
        for entry in compat.load_ops(version).values():
            assert entry.status in compat.STATUSES
            assert entry.source.startswith("torchneuron-facts §8.")


def test_status_of_uses_the_base_op_name_and_says_unknown() -> None:
    ops = compat.load_ops("2.14")
    assert compat.status_of(ops, "aten::add.Tensor") == "native"
    assert compat.status_of(ops, "linalg_qr") == "cpu-fallback"
    assert compat.status_of(ops, "aten::not_an_op") == compat.UNKNOWN
    assert compat.base_op_name("c10d::allreduce_") == "c10d::allreduce_"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('[ops."aten::x"]\nstatus = "fast"\nsource = "s"\n', "status must be one of"),
        ('[ops."aten::x"]\nstatus = "native"\n', "source must cite"),
        ("[ops\n", "ops.toml"),
    ],
)
def test_malformed_data_names_the_file_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, error: str
) -> None:
    folder = tmp_path / "compat" / "9.99"
    folder.mkdir(parents=True)
    (folder / "ops.toml").write_text(text)
    monkeypatch.setattr(compat, "rules_dir", lambda: tmp_path)
    compat.load_ops.cache_clear()
    try:
        with pytest.raises(compat.CompatDataError, match=error) as info:
            compat.load_ops("9.99")
        assert "9.99" in str(info.value) and "ops.toml" in str(info.value)
    finally:
        compat.load_ops.cache_clear()


def test_missing_version_is_an_error() -> None:
    with pytest.raises(compat.CompatDataError, match="no op compat data"):
        compat.load_ops("0.0")
