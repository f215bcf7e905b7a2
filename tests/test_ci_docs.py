"""The YAML in the README, run for real: the pre-commit config with the real `pre-commit` tool,
the GitHub workflow's step through `action.yml` (its shell steps run as the runner runs them),
and the GitLab job's script.

Only what needs the network is replaced: the repository URL and tag become a local copy of this
checkout, and `actions/checkout` / `upload-sarif` are recorded rather than run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT, sarif_schema
from github_commands import parse_commands

from neuron_migrate import __version__
from neuron_migrate.output import TOOL_URL

pytestmark = pytest.mark.slow  # builds virtualenvs and runs hooks

DOCS = ROOT / "README.md"
REV = f"v{__version__}"
ACTION_REF = f"{TOOL_URL.removeprefix('https://github.com/')}@{REV}"
SKIP_COPY = shutil.ignore_patterns(
    ".git",
    "__pycache__",
    "*.pyc",
    ".pytest_cache",
    ".hypothesis",
    "*.egg-info",
    "build",
    "dist",
    ".venv",
    ".neuron_migrate_cache",
    ".ruff_cache",
    ".mypy_cache",
)
# Fully fixable by the safe fixes.
TRAIN = "import torch_xla.core.xla_model as xm\ndevice = xm.xla_device()\nxm.mark_step()\n"
TRAIN_FIXED = 'import torch\ndevice = torch.device("neuron")\n'
# A manual finding (no fix) in a script that has a Python shebang and no suffix.
LAUNCH = "#!/usr/bin/env python3\nimport torch_xla.core.xla_model as xm\nxm.all_reduce(xm.REDUCE_SUM, [t], groups=[[0, 1]])\n"


def yaml_blocks() -> list[Any]:
    text = DOCS.read_text(encoding="utf-8")
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", text, re.DOTALL)]


def block_with(key: str) -> Any:
    """The one YAML block with `key` at the top (for `jobs`, the one that runs the action)."""
    (block,) = [
        b
        for b in yaml_blocks()
        if isinstance(b, dict) and key in b and (key != "jobs" or "neuron-migrate" in b["jobs"])
    ]
    return block


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without git's hook variables (pytest may run inside a git hook)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(extra)
    return env


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=clean_env(), capture_output=True, text=True, check=True)
    return done.stdout.strip()


def init_repo(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    git(path, "config", "user.name", "Test")
    git(path, "config", "user.email", "test@example.org")
    git(path, "config", "commit.gpgsign", "false")


def write_workspace(path: Path) -> None:
    """A user's repository: Python files, a shebang script, and files pre-commit must not pass."""
    (path / "scripts").mkdir(parents=True, exist_ok=True)
    (path / "train.py").write_text(TRAIN, encoding="utf-8")
    (path / "clean.py").write_text("print('ok')\n", encoding="utf-8")
    launch = path / "scripts" / "launch"
    launch.write_text(LAUNCH, encoding="utf-8")
    launch.chmod(launch.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    (path / "notes.md").write_text("We still `import torch_xla` here.\n", encoding="utf-8")
    (path / "requirements.txt").write_text("torch_xla==2.5.0\n", encoding="utf-8")


@pytest.fixture(scope="module")
def project_copy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """This checkout, copied and committed, as the repository users point pre-commit and Actions at."""
    copy = tmp_path_factory.mktemp("neuron-migrate") / "neuron-migrate"
    shutil.copytree(ROOT, copy, ignore=SKIP_COPY)
    init_repo(copy)
    git(copy, "add", "-A")
    git(copy, "commit", "-q", "-m", "snapshot for tests")
    return copy, git(copy, "rev-parse", "HEAD")


def test_docs_point_at_this_project_and_version() -> None:
    config = block_with("repos")
    assert config["repos"][0]["repo"] == TOOL_URL and config["repos"][0]["rev"] == REV
    steps = block_with("jobs")["jobs"]["neuron-migrate"]["steps"]
    assert [s["uses"] for s in steps] == ["actions/checkout@v4", ACTION_REF]
    install = block_with("neuron-migrate")["neuron-migrate"]["script"][0]
    assert install == f'pip install "neuron-migrate @ git+{TOOL_URL}@{REV}"'


# --- pre-commit ------------------------------------------------------------------------------


def pre_commit(repo: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=repo,
        capture_output=True,
        check=False,
        text=True,
        env=clean_env(PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never"),
        timeout=300,
    )


@pytest.mark.slow
def test_pre_commit_config_from_the_docs(project_copy: tuple[Path, str], tmp_path: Path) -> None:
    copy, sha = project_copy
    config = block_with("repos")
    config["repos"][0].update(repo=str(copy), rev=sha)
    assert [h["id"] for h in config["repos"][0]["hooks"]] == ["neuron-migrate-fix", "neuron-migrate"]
    repo = tmp_path / "user"
    init_repo(repo)
    write_workspace(repo)
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    git(repo, "add", "-A")
    home = tmp_path / "pre-commit-home"

    done = pre_commit(repo, home, "run", "--all-files")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert re.search(r"neuron-migrate \(fix\)\.+Failed", out), out
    assert "- files were modified by this hook" in out
    assert re.search(r"^neuron-migrate\.+Failed", out, re.MULTILINE), out
    assert out.count("scripts/launch:3:1: NM306") == 1  # a shebang script is checked; only one hook reports it
    assert re.search(
        r"^Fixed \d+ findings? in \d+ files? \(\d+ left; `neuron-migrate check` lists them\)\.$", out, re.MULTILINE
    ), out
    assert "notes.md" not in out
    assert "requirements.txt:1:1: NM620" in out  # packaging files are checked too
    assert (repo / "train.py").read_text(encoding="utf-8") == TRAIN_FIXED  # every finding had a safe fix
    assert (repo / "notes.md").read_text(encoding="utf-8") == "We still `import torch_xla` here.\n"

    git(repo, "add", "-A")
    other = pre_commit(repo, home, "run", "--files", "notes.md")
    assert other.returncode == 0, other.stdout  # a text file that is not a packaging file is ignored
    assert "notes.md" not in other.stdout.replace("--files", ""), other.stdout
    passed = pre_commit(repo, home, "run", "--files", "clean.py", "train.py", "notes.md")
    assert passed.returncode == 0, passed.stdout
    assert len(re.findall(r"\.+Passed$", passed.stdout, re.MULTILINE)) == 2, passed.stdout


# --- GitHub Actions --------------------------------------------------------------------------

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def github_string(value: Any) -> str:
    """A `with:` value as the runner passes it: YAML booleans become "true"/"false"."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def lookup(path: str, context: dict[str, Any]) -> str:
    value: Any = context
    for part in path.split("."):
        assert isinstance(value, dict), f"cannot evaluate {path!r}"
        value = value.get(part, "")
    return str(value)


def evaluate_if(condition: str, context: dict[str, Any]) -> bool:
    """The only `if:` forms action.yml uses: `<path> == '<text>'`."""
    match = re.fullmatch(r"([\w.-]+) == '([^']*)'", condition.strip())
    assert match, f"action.yml uses an `if:` this test cannot evaluate: {condition!r}"
    return lookup(match[1], context) == match[2]


def substitute(text: str, context: dict[str, Any]) -> str:
    return EXPRESSION.sub(lambda m: lookup(m[1], context), text)


def run_action(action_dir: Path, inputs: dict[str, str], workspace: Path, temp: Path) -> dict[str, Any]:
    """Run a composite action's steps the way the runner does; `uses:` steps are only recorded."""
    action = yaml.safe_load((action_dir / "action.yml").read_text(encoding="utf-8"))
    assert action["runs"]["using"] == "composite"
    declared = {name: github_string(spec.get("default", "")) for name, spec in action["inputs"].items()}
    assert set(inputs) <= set(declared), f"unknown inputs {set(inputs) - set(declared)}"
    context: dict[str, Any] = {
        "inputs": {**declared, **inputs},
        "github": {"action_path": str(action_dir)},
        "steps": {},
    }
    summary = temp / "step-summary.md"
    log: dict[str, Any] = {"ran": [], "uses": [], "summary": summary}
    for index, step in enumerate(action["runs"]["steps"]):
        if "if" in step and not evaluate_if(step["if"], context):
            continue
        if "uses" in step:
            log["uses"].append(
                (step["uses"], {k: substitute(github_string(v), context) for k, v in step["with"].items()})
            )
            continue
        outputs = temp / f"output-{index}"
        outputs.write_text("", encoding="utf-8")
        env = clean_env(
            GITHUB_OUTPUT=str(outputs),
            GITHUB_STEP_SUMMARY=str(summary),
            RUNNER_TEMP=str(temp),
            GITHUB_WORKSPACE=str(workspace),
            GITHUB_ACTION_PATH=str(action_dir),
            GITHUB_ACTIONS="true",
        )
        env.update({k: substitute(github_string(v), context) for k, v in step.get("env", {}).items()})
        script = temp / f"step-{index}.sh"
        script.write_text(step["run"], encoding="utf-8")
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=workspace,
            env=env,
            capture_output=True,
            check=False,
            text=True,
            timeout=300,
        )
        log["ran"].append((step["name"], done))
        values = dict(line.split("=", 1) for line in outputs.read_text(encoding="utf-8").splitlines() if "=" in line)
        context["steps"][step.get("id", f"step{index}")] = {"outputs": values}
        if done.returncode != 0:
            break  # later steps need `if: always()`, which action.yml does not use
    return log


@pytest.mark.slow
def test_github_workflow_from_the_docs(project_copy: tuple[Path, str], tmp_path: Path) -> None:
    copy, _ = project_copy
    steps = block_with("jobs")["jobs"]["neuron-migrate"]["steps"]
    (step,) = [s for s in steps if s["uses"] == ACTION_REF]
    workspace = tmp_path / "workspace"
    init_repo(workspace)
    write_workspace(workspace)
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    inputs = {k: github_string(v) for k, v in step.get("with", {}).items()}
    log = run_action(copy, inputs, workspace, temp)

    names = [name for name, _ in log["ran"]]
    assert names == ["Install neuron-migrate", "Write the SARIF report", "Run neuron-migrate"], log["ran"]
    install, write_sarif, check = (done for _, done in log["ran"])
    assert install.returncode == 0, install.stderr
    assert write_sarif.returncode == 0, write_sarif.stderr
    assert check.returncode == 1, check.stderr  # findings remain: the step fails

    annotations = parse_commands(check.stdout)
    assert {a["file"] for a in annotations} == {"train.py", "requirements.txt"}  # .py and packaging files
    assert {a["title"] for a in annotations} == {
        "NM101 (xla_device_call)",
        "NM201 (xla_mark_step_call)",
        "NM601 (xla_import)",
        "NM620 (torch_xla_requirement)",
    }

    assert log["uses"] == [
        ("github/codeql-action/upload-sarif@v3", {"sarif_file": "neuron-migrate.sarif", "category": "neuron-migrate"})
    ]
    document = json.loads((workspace / "neuron-migrate.sarif").read_text(encoding="utf-8"))
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in document["runs"][0]["results"]}
    assert uris == {"train.py", "requirements.txt"}
    import jsonschema

    jsonschema.Draft7Validator(sarif_schema()).validate(document)

    summary = log["summary"].read_text(encoding="utf-8")
    assert summary.startswith("## neuron-migrate\n") and "| `train.py:2:10` | NM101 | error |" in summary


# --- GitLab CI -------------------------------------------------------------------------------


def test_gitlab_job_from_the_docs(tmp_path: Path) -> None:
    job = block_with("neuron-migrate")["neuron-migrate"]
    assert job["artifacts"] == {"when": "always", "reports": {"codequality": "gl-code-quality-report.json"}}
    install, *commands = job["script"]
    assert install.startswith("pip install ")  # needs the network; the rest runs against this checkout
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "neuron-migrate"
    wrapper.write_text(
        f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m neuron_migrate "$@"\n', encoding="utf-8"
    )
    wrapper.chmod(0o755)
    workspace = tmp_path / "workspace"
    init_repo(workspace)
    write_workspace(workspace)
    env = clean_env(PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    codes = [
        subprocess.run(
            ["bash", "-eo", "pipefail", "-c", command],
            cwd=workspace,
            env=env,
            capture_output=True,
            check=False,
            text=True,
        ).returncode
        for command in commands
    ]
    assert codes == [0, 1]  # the report never fails the job; the check does when findings remain
    issues = json.loads((workspace / "gl-code-quality-report.json").read_text(encoding="utf-8"))
    expected = {("train.py", c) for c in ("NM101", "NM201", "NM601")} | {("requirements.txt", "NM620")}
    assert {(i["location"]["path"], i["check_name"]) for i in issues} == expected
    assert all(i["severity"] in {"info", "minor", "major", "critical", "blocker"} and i["fingerprint"] for i in issues)
