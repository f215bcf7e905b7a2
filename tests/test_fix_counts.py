"""What a finding says about its fix adds up: an applicability only with edits, a message that
says what `--fix` does, per-rule fixable counts, and no `[*]` on findings whose fixes were rolled back.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, ROOT

from neuron_migrate.cli import main
from neuron_migrate.engine import fix_loop, pipeline

SCRIPT = Path(sys.executable).with_name("neuron-migrate")
BACKEND = (FIXTURES / "_multi" / "backend_import_after_fix.py").read_text(encoding="utf-8")
TRAIN = "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\nxm.mark_step()\n"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [str(SCRIPT), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_an_import_its_uses_fixes_free_carries_its_deletion_and_what_it_requires(tmp_path: Path) -> None:
    (tmp_path / "dist.py").write_text(BACKEND, encoding="utf-8")
    text = cli("check", "--no-cache", "dist.py", cwd=tmp_path).stdout
    (line,) = [x for x in text.splitlines() if " NM602 " in x]
    assert " NM602 [*] Remove the `torch_xla.distributed.xla_backend` import; `--fix` removes it" in line
    assert "Keep" not in line
    rows = json.loads(cli("check", "--no-cache", "--output-format", "json", "dist.py", cwd=tmp_path).stdout)
    (nm602,) = [r for r in rows if r["code"] == "NM602"]
    assert nm602["fix"]["applicability"] == "safe" and nm602["fix"]["certain"] is True
    assert [e["content"] for e in nm602["fix"]["edits"]] == [""]  # its own deletion
    assert [r["code"] for r in nm602["fix"]["requires"]] == ["NM310"]  # once the `"xla"` backend is rewritten
    sarif = json.loads(cli("check", "--no-cache", "--output-format", "sarif", "dist.py", cwd=tmp_path).stdout)
    (result,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "NM602"]
    assert [r["ruleId"] for r in result["fixes"][0]["properties"]["requires"]] == ["NM310"]
    fixed = cli("check", "--no-cache", "--fix", "dist.py", cwd=tmp_path)
    assert "xla_backend" not in (tmp_path / "dist.py").read_text(encoding="utf-8")  # and `--fix` does remove it
    assert fixed.returncode == 0


def test_no_finding_in_the_corpus_has_an_applicability_without_edits(tmp_path: Path) -> None:
    out = cli("check", "--no-cache", "--unsafe-fixes", "--output-format", "json", str(FIXTURES), cwd=tmp_path)
    rows = json.loads(out.stdout)
    with_fix = [r for r in rows if r["fix"] is not None]
    assert len(with_fix) > 200
    assert all(r["fix"]["edits"] and r["fix"]["applicability"] in ("safe", "unsafe") for r in with_fix)
    sarif = json.loads(
        cli("check", "--no-cache", "--unsafe-fixes", "--output-format", "sarif", str(FIXTURES), cwd=tmp_path).stdout
    )
    for result in sarif["runs"][0]["results"]:
        assert ("fixApplicability" in result["properties"]) == bool(result.get("fixes")), result["ruleId"]


def test_statistics_mark_partly_fixable_rules_and_count_them(tmp_path: Path) -> None:
    # Two NM101 findings: a plain call (a safe fix), and one where `torch` is taken (no fix).
    (tmp_path / "a.py").write_text(TRAIN, encoding="utf-8")
    (tmp_path / "b.py").write_bytes((FIXTURES / "NM101" / "torch_name_taken.py").read_bytes())
    rows = json.loads(cli("check", "--no-cache", "--statistics", "--output-format", "json", ".", cwd=tmp_path).stdout)
    by_code = {r["code"]: r for r in rows}
    nm101 = by_code["NM101"]
    assert nm101["count"] == 2 and nm101["fixable_count"] == 1 and nm101["fixable"] is True
    text = cli("check", "--no-cache", "--statistics", ".", cwd=tmp_path).stdout
    assert "2\tNM101\t[~] xla-device-call" in text.splitlines()
    assert "1\tNM201\t[*] xla-mark-step-call" in text.splitlines()
    total = sum(r["fixable_count"] for r in rows)
    assert f"[*] {total} fixable with the `--fix` option." in text


def test_a_rolled_back_file_shows_no_fixable_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    monkeypatch.setattr(fix_loop, "verify", lambda text, path: "SyntaxError: pretend the fixes broke it")
    result = CliRunner().invoke(main, ["check", "--no-cache", "--fix", "train.py"], catch_exceptions=False)
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == TRAIN  # rolled back
    lines = result.stdout.splitlines()
    assert any(" NM906 " in x for x in lines) and any(" NM101 " in x for x in lines)
    assert not any("[*]" in x for x in lines), result.stdout
    assert result.exit_code == 1


def test_an_unwritable_file_shows_no_fixable_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    monkeypatch.setattr(pipeline, "write_back", lambda path, data, seen: "Make this file writable; pretend")
    result = CliRunner().invoke(main, ["check", "--no-cache", "--fix", "train.py"], catch_exceptions=False)
    lines = result.stdout.splitlines()
    assert any(" NM903 " in x for x in lines) and any(" NM101 " in x for x in lines)
    assert not any("[*]" in x for x in lines), result.stdout


# A fix inside a call another fix rewrites without it: `--fix` rewrites the outer call, and the
# inner code is gone with it. Both are fixed, as the check counts them (pytorch/xla's
# test/test_autocast.py and examples/train_resnet_amp.py write this).
NESTED = "import torch\nimport torch_xla\nfrom torch_xla.amp import autocast\n\nwith autocast(torch_xla.device()):\n    y = torch.ones(2) * 2\n"
# The outer rewrite keeps the inner call (`MpDeviceLoader(loader, device)`): the inner fix
# follows in the next round, and is counted once.
KEPT = (
    "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.parallel_loader as pl\n\n\n"
    "def batches(loader):\n    return pl.MpDeviceLoader(loader, xm.xla_device())\n"
)


@pytest.mark.parametrize("text", [NESTED, KEPT], ids=["replaced-away", "kept"])
def test_a_fix_inside_one_that_rewrites_its_code_counts_as_the_check_did(tmp_path: Path, text: str) -> None:
    (tmp_path / "train.py").write_text(text, encoding="utf-8")
    check = cli("check", "--no-cache", "train.py", cwd=tmp_path).stdout.splitlines()
    fixable = int(check[-1].split()[1])
    assert check[-1] == f"[*] {fixable} fixable with the `--fix` option."
    fixed = cli("check", "--no-cache", "--fix", "train.py", cwd=tmp_path)
    assert fixed.stdout.splitlines()[-1] == f"Found {fixable} findings ({fixable} fixed, 0 remaining)."
    assert "torch_xla" not in (tmp_path / "train.py").read_text(encoding="utf-8")


def test_a_replaced_call_is_fixed_once_in_the_result() -> None:
    from neuron_migrate.settings import Settings

    result = pipeline.check_source(NESTED, "train.py", Settings(fix=True))
    assert sorted(f.code for f in result.fixed) == ["NM101", "NM105", "NM601", "NM601"]
    assert result.fixed_source is not None and 'torch.autocast("neuron"' in result.fixed_source


def test_with_unsafe_fixes_a_check_counts_the_imports_only_unsafe_fixes_free(tmp_path: Path) -> None:
    """`xr.using_pjrt()` folds to `True` only with `--unsafe-fixes`; then the `"xla"` backend
    strings go, and with them the backend imports and `xr`: the check counts what that fix does."""
    shutil.copy(ROOT / "tests" / "e2e" / "programs" / "pjrt_group.py", tmp_path / "train.py")
    plain = cli("check", "--no-cache", "train.py", cwd=tmp_path).stdout
    assert " NM602 Keep the `torch_xla.distributed.xla_backend` import" in plain  # true without them
    check = cli("check", "--no-cache", "--unsafe-fixes", "train.py", cwd=tmp_path).stdout.splitlines()
    (backend,) = [x for x in check if " NM602 " in x and "xla_backend" in x]
    assert backend.endswith("`--fix --unsafe-fixes` removes it once the other fixes in this file leave it unneeded")
    assert " NM602 [*] " in backend
    assert check[-2:] == ["Found 9 findings.", "[*] 9 fixable with the `--fix` option."]
    fixed = cli("check", "--no-cache", "--fix", "--unsafe-fixes", "train.py", cwd=tmp_path)
    assert fixed.stdout.splitlines()[-1] == "Found 9 findings (9 fixed, 0 remaining)."
    assert "torch_xla" not in (tmp_path / "train.py").read_text(encoding="utf-8")


def test_unsafe_fixes_key_the_result_cache(tmp_path: Path) -> None:
    """A cached plain check is not what `check --unsafe-fixes` shows, nor the other way round."""
    shutil.copy(ROOT / "tests" / "e2e" / "programs" / "pjrt_group.py", tmp_path / "train.py")
    for _ in range(2):
        plain = cli("check", "train.py", cwd=tmp_path).stdout.splitlines()
        assert plain[-2:] == [
            "[*] 3 fixable with the `--fix` option.",
            "[-] 3 more fixable with the `--unsafe-fixes` option.",
        ]
        unsafe = cli("check", "--unsafe-fixes", "train.py", cwd=tmp_path).stdout.splitlines()
        assert unsafe[-1] == "[*] 9 fixable with the `--fix` option."
