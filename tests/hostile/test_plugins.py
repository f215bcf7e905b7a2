"""Item 5 of issue 24: a project's plugin code runs only when the user trusts the config, and a
plugin that raises anything (KeyboardInterrupt, `sys.exit(0)`) is one error line, exit 2."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hostile_helpers import ROOT, XLA, cli, out

pytestmark = pytest.mark.slow  # subprocesses of the installed script

PROJECT = ROOT / "fixtures" / "_project"
MARK = "RAN-PROJECT-CODE"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The example project, its plugin also leaving a mark file whenever it is imported."""
    target = tmp_path / "project"
    shutil.copytree(PROJECT, target, ignore=shutil.ignore_patterns("__pycache__"))
    plugin = target / "nm_plugins" / "acme.py"
    mark = f"import ast\nimport pathlib\n\npathlib.Path({str(target / MARK)!r}).write_text('x')\n"
    plugin.write_text(plugin.read_text().replace("import ast\n", mark, 1))
    return target


UNTRUSTED = [
    ["check", "--no-cache", "train.py"],
    ["check", "--show-files"],
    ["check", "--show-settings", "train.py"],
    ["report", "train.py"],
    ["rules"],
    ["explain", "NM101"],
]


@pytest.mark.parametrize("args", UNTRUSTED, ids=lambda a: " ".join(a))
def test_without_trust_no_plugin_code_runs(project: Path, args: list[str]) -> None:
    done = cli(args, project)
    assert not (project / MARK).exists(), "the project's plugin was imported"
    assert done.returncode == 2, out(done)
    assert "`plugins` names project code (nm_plugins.acme), which runs only when you trust this config" in out(done)
    assert "--allow-plugins or set NEURON_MIGRATE_ALLOW_PLUGINS=1" in out(done)


@pytest.mark.parametrize("how", ["flag", "env"])
@pytest.mark.parametrize("args", [["check", "--no-cache", "train.py"], ["rules"], ["explain", "NMX101"]])
def test_trusted_plugins_load(project: Path, how: str, args: list[str]) -> None:
    flag = ["--allow-plugins"] if how == "flag" else []
    env = {"NEURON_MIGRATE_ALLOW_PLUGINS": "1"} if how == "env" else None
    done = cli([*args, *flag], project, env=env)
    assert (project / MARK).exists()
    assert done.returncode in (0, 1), out(done)
    assert "NMX101" in out(done)


def test_the_projects_pre_commit_hooks_trust_the_config() -> None:
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text()
    entries = [line.split(":", 1)[1].strip() for line in hooks.splitlines() if line.strip().startswith("entry:")]
    assert entries and all("--allow-plugins" in entry.split() for entry in entries)


@pytest.mark.parametrize(
    ("body", "raised"),
    [
        ("raise KeyboardInterrupt\n", "KeyboardInterrupt"),
        ("import sys\nsys.exit(0)\n", "SystemExit: 0"),
        ("raise SystemExit('bye')\n", "SystemExit: bye"),
        ("raise MemoryError\n", "MemoryError"),
    ],
)
def test_a_plugin_that_raises_anything_on_import_is_one_error_line(tmp_path: Path, body: str, raised: str) -> None:
    (tmp_path / "a.py").write_text(XLA)
    (tmp_path / "evil.py").write_text(body)
    (tmp_path / "neuron-migrate.toml").write_text('plugins = ["evil"]\n')
    done = cli(["check", "--no-cache", "--allow-plugins", "a.py"], tmp_path)
    assert done.returncode == 2, out(done)
    assert f"plugin evil: cannot import it: {raised}" in out(done)
    assert "Traceback" not in out(done)


def test_a_detector_that_calls_sys_exit_is_a_finding_and_other_files_are_checked(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(XLA)
    (tmp_path / "b.py").write_text("import acme\nacme.boom()\n" + XLA)
    (tmp_path / "evil.py").write_text(
        "import ast, sys\n"
        "RULES = [{'code': 'NMX900', 'name': 'boom', 'message': 'Boom', 'detector': 'boom', 'triggers': ['boom'],\n"
        "          'severity': 'error', 'safety': 'manual', 'doc': {'what': 'Boom.', 'why': 'Boom.'}}]\n"
        "def boom(rule, analysis, node, scope):\n"
        "    if isinstance(node.func, ast.Attribute) and node.func.attr == 'boom':\n"
        "        sys.exit(0)\n"
        "    return iter(())\n"
        "DETECTORS = {'boom': ((ast.Call,), boom)}\n"
    )
    (tmp_path / "neuron-migrate.toml").write_text('plugins = ["evil"]\n')
    done = cli(["check", "--no-cache", "--allow-plugins", "a.py", "b.py"], tmp_path)
    text = out(done)
    assert done.returncode == 2, text  # never exit 0 with no output
    assert "b.py:1:1: NM908 Report this bug; neuron-migrate failed on this file: SystemExit: 0" in text
    assert "a.py:3:10: NM101" in text
