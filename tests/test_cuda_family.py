"""The CUDA family (NM8xx): off by default, on with `--from cuda` / `from = ["cuda"]`, and `--target`."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from neuron_migrate.catalogue import (
    RuleSpecError,
    load_catalogue,
    parse_rule,
    select_rules,
)
from neuron_migrate.cli import main
from neuron_migrate.config import Config, ConfigError, Overrides, merge, parse_config
from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.engine.ruleset import enabled_codes
from neuron_migrate.settings import Settings

SPECS = load_catalogue()
CUDA_SCRIPT = "import torch\n\nx = torch.zeros(2).cuda()\ntorch.cuda.synchronize()\n"
BOTH_SCRIPT = (
    'import torch_xla.core.xla_model as xm\nimport torch\n\nd = xm.xla_device()\ny = torch.ones(2).to("cuda")\n'
)


def _bands(codes: frozenset[str]) -> set[str]:
    return {code[:3] for code in codes}


def test_the_cuda_family_is_off_by_default() -> None:
    codes = enabled_codes(Settings())
    assert "NM8" not in _bands(codes)
    assert {"NM1", "NM2", "NM3", "NM4", "NM5", "NM6", "NM9"} <= _bands(codes)
    assert "NM8" not in _bands(select_rules(SPECS, ("ALL",), families=("xla",)))


def test_from_cuda_runs_the_cuda_rules_and_the_shared_bands_only() -> None:
    bands = _bands(enabled_codes(Settings(families=("cuda",))))
    assert bands == {"NM4", "NM5", "NM7", "NM8", "NM9"}
    both = _bands(enabled_codes(Settings(families=("xla", "cuda"))))
    assert {"NM1", "NM2", "NM3", "NM6", "NM8"} <= both


def test_naming_a_code_or_band_enables_it_whatever_the_family() -> None:
    assert enabled_codes(Settings(select=("NM801",))) == frozenset({"NM801"})
    assert "NM805" in enabled_codes(Settings(select=("NM8",)))
    assert "NM201" in enabled_codes(Settings(select=("NM2",), families=("cuda",)))
    assert "NM801" not in enabled_codes(Settings(select=("NM8",), ignore=("NM801",)))


def test_rules_declare_their_family_by_band_or_with_from() -> None:
    by_code = {s.code: s for s in SPECS}
    assert by_code["NM801"].families == ("cuda",) and by_code["NM801"].category == "cuda"
    assert by_code["NM201"].families == ("xla",) and by_code["NM201"].category == "migration"
    assert by_code["NM506"].families == ("xla", "cuda")
    data = {"code": "NM299", "name": "x", "message": "Do it", "severity": "info", "safety": "manual"}
    assert parse_rule({**data, "from": ["cuda"]}, "NM299.toml").families == ("cuda",)
    with pytest.raises(RuleSpecError, match=re.escape("NM299.toml: `from`")):
        parse_rule({**data, "from": ["gpu"]}, "NM299.toml")


def test_config_from_and_target(tmp_path: Path) -> None:
    config = parse_config({"from": ["cuda", "xla"], "target": "accelerator"}, tmp_path / "pyproject.toml")
    settings = merge(config, Overrides())
    assert (settings.families, settings.target) == (("cuda", "xla"), "accelerator")
    assert merge(config, Overrides(families=("xla",), target="neuron")).families == ("xla",)
    assert merge(Config(), Overrides()).target == "neuron"
    for bad in ({"from": ["gpu"]}, {"from": []}, {"from": "cuda"}, {"target": "gpu"}):
        with pytest.raises(ConfigError, match=re.escape("pyproject.toml")):
            parse_config(bad, tmp_path / "pyproject.toml")


def test_config_selection_keeps_the_family_rule(tmp_path: Path) -> None:
    config = parse_config({"from": ["cuda"], "ignore": ["NM5"]}, tmp_path / "pyproject.toml")
    codes = enabled_codes(merge(config, Overrides()))
    assert "NM801" in codes and "NM201" not in codes and "NM504" not in codes


def test_targets_write_neuron_or_device_agnostic_code() -> None:
    neuron = check_source(CUDA_SCRIPT, "t.py", Settings(families=("cuda",), fix=True))
    assert neuron.fixed_source == 'import torch\n\nx = torch.zeros(2).to("neuron")\ntorch.neuron.synchronize()\n'
    accel = check_source(CUDA_SCRIPT, "t.py", Settings(families=("cuda",), fix=True, target="accelerator"))
    assert accel.fixed_source is not None
    assert "torch.accelerator.synchronize()" in accel.fixed_source
    assert 'torch.accelerator.current_accelerator(check_available=True) or torch.device("cpu")' in accel.fixed_source


def _run(args: list[str], cwd: Path) -> tuple[int, str]:
    old = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(main, args, catch_exceptions=False)
    finally:
        os.chdir(old)
    return result.exit_code, result.output


def test_cli_from_and_target(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(BOTH_SCRIPT)
    code, out = _run(["--no-cache", "--output-format", "json", "train.py"], tmp_path)
    assert code == 1 and {f["code"] for f in json.loads(out)} == {"NM101", "NM601"}
    code, out = _run(["--no-cache", "--output-format", "json", "--from", "cuda", "train.py"], tmp_path)
    found = json.loads(out)
    assert {f["code"] for f in found} == {"NM801"} and found[0]["category"] == "cuda"
    code, out = _run(["--no-cache", "--output-format", "json", "--from", "xla,cuda", "train.py"], tmp_path)
    assert {f["code"] for f in json.loads(out)} == {"NM101", "NM601", "NM801"}
    code, out = _run(["--no-cache", "--from", "xla,gpu", "train.py"], tmp_path)
    assert code == 2 and "--from" in out
    code, _ = _run(["--no-cache", "--from", "xla,cuda", "--target", "accelerator", "--fix", "train.py"], tmp_path)
    fixed = (tmp_path / "train.py").read_text()
    assert fixed.count("torch.accelerator.current_accelerator(check_available=True)") == 1, fixed  # once, as `_DEVICE`
    assert "d = _DEVICE\n" in fixed and ".to(_DEVICE)" in fixed, fixed


def test_config_from_cuda_turns_the_family_on(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(CUDA_SCRIPT)
    (tmp_path / "pyproject.toml").write_text('[tool.neuron-migrate]\nfrom = ["cuda"]\ntarget = "accelerator"\n')
    code, out = _run(["--no-cache", "--fix", "train.py"], tmp_path)
    assert code == 0, out
    assert "torch.accelerator.synchronize()" in (tmp_path / "train.py").read_text()


def test_explain_and_rules_show_the_family() -> None:
    code, out = _run(["explain", "NM803"], Path.cwd())
    assert code == 0 and "From: cuda (off by default; enable with `--from cuda`)" in out
    assert "Use instead, with --target accelerator" in out
    code, out = _run(["rules", "--format", "json"], Path.cwd())
    rows = {row["code"]: row for row in json.loads(out)}
    assert rows["NM801"]["category"] == "cuda" and rows["NM801"]["from"] == ["cuda"]
    assert len([c for c in rows if c.startswith("NM8")]) == 13


# -- robustness: CUDA idioms in assorted contexts never break the fixer ---------------------------
_PIECES = (
    "x.cuda()",
    "x.cuda(1)",
    "x.cuda(*a)",
    "x.cuda(device=d, non_blocking=True)",
    'x.to("cuda")',
    'x.to(f"cuda:{r}")',
    'torch.device("cuda", r)',
    'torch.device("cuda" if torch.cuda.is_available() else "cpu")',
    '"cuda" if torch.cuda.is_available() else "cpu"',
    "x.is_cuda",
    "torch.cuda.amp.autocast(True, torch.float16)",
    'torch.autocast("cuda")',
    'torch.amp.GradScaler(device_type="cuda")',
    "torch.cuda.amp.GradScaler(**kw)",
    'dist.init_process_group("nccl")',
    'dist.init_process_group("nccl|gloo")',
    "torch.cuda.synchronize()",
    "torch.cuda.mem_get_info()",
    "torch.cuda.Stream()",
    "torch.backends.cudnn.enabled",
    'x.device.type == "cuda"',
    'load(name="k", sources=["k.cu"])',
    'torch.load(p, map_location="cuda:0")',
)
_CONTEXTS = (
    "y = {0}\n",
    "f({0})\n",
    "if {0}:\n    pass\n",
    "with {0}:\n    pass\n",
    "z = [{0} for x in xs]\n",
    "def g(x=None):\n    return {0}\n",
    "w = ({0},)\n",
    "v = not {0}\n",
    "lambda x: {0}\n",
)
_HEADER = "import torch\nimport torch.distributed as dist\nfrom torch.utils.cpp_extension import load\n"


@pytest.mark.parametrize("target", ["neuron", "accelerator"])
def test_cuda_idioms_in_any_context_fix_to_valid_stable_code(target: str) -> None:
    import ast

    hypothesis = pytest.importorskip("hypothesis")
    strategies = hypothesis.strategies

    @hypothesis.settings(max_examples=60, deadline=None, derandomize=True)
    @hypothesis.given(
        strategies.lists(
            strategies.tuples(strategies.sampled_from(_PIECES), strategies.sampled_from(_CONTEXTS)),
            min_size=1,
            max_size=4,
        )
    )
    def check(parts: list[tuple[str, str]]) -> None:
        text = _HEADER + "".join(context.format(piece) for piece, context in parts)
        settings = Settings(families=("xla", "cuda"), fix=True, unsafe_fixes=True, target=target)
        result = check_source(text, "t.py", settings)
        assert not [f for f in result.findings if f.code.startswith("NM9")], (text, result.findings)
        if result.fixed_source is not None:
            ast.parse(result.fixed_source)
            assert check_source(result.fixed_source, "t.py", settings).fixed_source is None, text

    check()


def test_project_rules_run_under_any_family() -> None:
    data = {"code": "NMX001", "name": "x", "message": "Do it", "severity": "info", "safety": "manual"}
    spec = parse_rule(data, "NMX001.toml", project=True)
    assert spec.families == ("xla", "cuda")
    assert "NMX001" in select_rules((spec,), ("NM",), families=("cuda",))
