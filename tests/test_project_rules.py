"""A project's own rules: `extend-rules` (TOML data) and `plugins` (Python checks), end to end.

The project is `fixtures/_project/`: a training script that reaches torch_xla only through the
team's wrapper module `mylib/xla.py`, migrated by the project's rules NMX001 (TOML) and NMX101
(a plugin module). Each test runs the real command line on a copy, as a user would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

pytestmark = pytest.mark.slow  # runs the CLI in subprocesses

PROJECT = FIXTURES / "_project"


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI trusting the project's plugins (tests/hostile/test_plugins.py covers the refusal)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NEURON_MIGRATE_ALLOW_PLUGINS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "neuron_migrate", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        check=False,
        text=True,
        timeout=60,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    target = tmp_path / "project"
    shutil.copytree(PROJECT, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def test_project_rules_find_the_wrappers(project: Path) -> None:
    result = cli(project, "check", "--no-cache", "train.py")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert (
        'train.py:7:10: NMX001 [*] Replace `get_device()` with `torch.device("neuron")`; the wrapper only called `xm.xla_device()`'
        in lines
    )
    assert 'train.py:9:9: NMX101 [*] Replace `to_device(x)` with `x.to("neuron")`' in lines
    assert 'train.py:10:10: NMX101 [*] Replace `acme_xla.to_device(x)` with `x.to("neuron")`' in lines
    assert 'train.py:12:7: NMX101 [*] Replace `to_device(x)` with `x.to("neuron")`' in lines  # `(batch + 1).to(...)`
    assert 'train.py:16:7: NMX101 Replace `to_device(x)` with `x.to("neuron")`' in lines  # `tensor=`: no fix


def test_fix_migrates_the_project_with_its_own_rules(project: Path) -> None:
    result = cli(project, "check", "--no-cache", "--fix", "train.py")
    assert result.returncode == 1, result.stderr  # the `tensor=labels` call is left to a human
    assert (project / "train.py").read_text() == (
        '"""A training script that reaches torch_xla only through the team\'s own wrappers."""\n'
        "import torch\n\n"
        "from mylib.xla import get_device, to_device\n"
        "from mylib import xla as acme_xla\n\n"
        'device = torch.device("neuron")  # where the model lives\n'
        "model = torch.nn.Linear(4, 2).to(device)\n"
        'batch = torch.randn(8, 4).to("neuron")\n'
        'labels = torch.randint(0, 2, (8,)).to("neuron")\n'
        "loss = torch.nn.functional.cross_entropy(model(batch), labels)\n"
        'print((batch + 1).to("neuron").shape)\n'
        "features = torch.zeros(8, 4).to(  # zeros where the batch is padded\n"  # the plugin's LibCST transform
        '    "neuron",\n'
        ")\n"
        "print(to_device(tensor=labels).shape)\n"
    )
    fixed = (project / "train.py").read_text()
    cli(project, "check", "--no-cache", "--fix", "train.py")
    assert (project / "train.py").read_text() == fixed  # a second --fix changes nothing


def test_select_and_noqa_know_project_codes(project: Path) -> None:
    only = cli(project, "check", "--no-cache", "--select", "NMX1", "train.py")
    assert {line.split()[1] for line in only.stdout.splitlines() if line.startswith("train.py")} == {"NMX101"}
    script = project / "train.py"
    script.write_text(script.read_text().replace("device = get_device()", "device = get_device()  # noqa: NMX001"))
    quiet = cli(project, "check", "--no-cache", "train.py")
    assert "NMX001" not in quiet.stdout
    assert "NM910" not in quiet.stdout  # the project code is known, so the noqa is not "unused"


def test_rules_and_explain_show_project_rules(project: Path) -> None:
    listing = cli(project, "rules")
    assert listing.returncode == 0, listing.stderr
    codes = [line.split()[0] for line in listing.stdout.splitlines()]
    assert "NMX001" in codes and "NMX101" in codes and "NM101" in codes
    explained = cli(project, "explain", "nmx001")
    assert explained.returncode == 0, explained.stderr
    assert "Checks for calls to our `mylib.xla.get_device()` wrapper." in explained.stdout
    assert (
        'Use instead\n  import torch\n  from mylib.xla import get_device\n  \n  device = torch.device("neuron")'
        in explained.stdout
    )
    assert "Checks for calls to our `mylib.xla.to_device(x)` wrapper." in cli(project, "explain", "NMX101").stdout


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            ("tools/nm-rules/NMX001.toml", 'code = "NMX001"', 'code = "NM101"'),
            "`code` of a project rule must look like NMX001",
        ),
        (("tools/nm-rules/NMX001.toml", 'severity = "error"', 'severity = "fatal"'), "`severity` must be one of"),
        (("tools/nm-rules/NMX001.toml", "[[map]]", "[[map]]\nnew_thing = 1"), "unknown key `new_thing`"),
        (("tools/nm-rules/NMX001.toml", 'name = "acme', 'name = = "acme'), "invalid TOML"),
        (("nm_plugins/acme.py", '"fix": "acme_to_device"', '"fix": "acme_to_dev"'), "names unknown fix 'acme_to_dev'"),
        (
            ("nm_plugins/acme.py", "import ast\n", "import ast\nimport not_installed_anywhere\n"),
            "plugin nm_plugins.acme: cannot import it: ModuleNotFoundError",
        ),
        (("nm_plugins/acme.py", '"detector": "acme_to_device"', '"detector": "nope"'), "unknown detector 'nope'"),
        (("nm_plugins/acme.py", '"code": "NMX101"', '"code": "NMX001"'), "NMX001: the code is defined twice"),
        (("pyproject.toml", '"tools/nm-rules"', '"tools/missing"'), "extend-rules folder not found"),
    ],
)
def test_a_broken_project_rule_is_one_error_line(project: Path, edit: tuple[str, str, str], expected: str) -> None:
    name, old, new = edit
    path = project / name
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new, 1))
    for args in (("check", "--no-cache", "train.py"), ("rules",)):
        result = cli(project, *args)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("neuron-migrate: error: pyproject.toml: "), result.stderr
        assert expected in lines[0]
        assert "Traceback" not in result.stderr
