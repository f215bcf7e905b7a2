"""The small things a pipeline and a terminal rely on, through the installed console script:
both spellings of the format option, `-j` from the usable cores, colour only where it belongs,
`--show-settings` as TOML and "did you mean" in `explain`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from neuron_migrate.catalogue import toml_module
from neuron_migrate.run import workflow
from neuron_migrate.run.parallel import usable_cores

SCRIPT = Path(sys.executable).with_name("neuron-migrate")
XLA = "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\n"
ANSI = "\x1b["


def cli(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    return subprocess.run(
        [str(SCRIPT), *args], cwd=cwd, env={**base, **env}, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "xla.py").write_text(XLA, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("flag", ["--format", "--output-format"])
@pytest.mark.parametrize(
    ("command", "parse"),
    [
        (("check", "xla.py"), json.loads),
        (("xla.py",), json.loads),
        (("rules",), json.loads),
        (("report", "xla.py"), json.loads),
    ],
)
def test_both_format_spellings_everywhere(project: Path, flag: str, command: tuple[str, ...], parse: object) -> None:
    done = cli(*command, flag, "json", cwd=project)
    assert done.returncode in (0, 1), done.stderr
    assert json.loads(done.stdout)


def test_smoke_takes_both_spellings(project: Path) -> None:
    help_text = cli("smoke", "--help", cwd=project).stdout
    assert "--output-format, --format" in help_text
    done = cli("smoke", "--format", "json", "missing.py", cwd=project)
    assert "No such option" not in done.stderr


def test_jobs_default_to_the_usable_cores() -> None:
    assert usable_cores() == (
        os.process_cpu_count() if hasattr(os, "process_cpu_count") else len(os.sched_getaffinity(0))
    )
    options = {
        "add_noqa": False, "fix": False, "diff": False, "stdin_filename": None, "baseline": None,
        "write_baseline": None, "since": None, "select": (), "ignore": (), "extend_select": (), "exclude": (),
        "target_version": None, "unsafe_fixes": None, "output_format": None, "config_file": None, "jobs": None,
    }  # fmt: skip
    assert workflow.request_from([], options).jobs == usable_cores()
    assert workflow.request_from([], {**options, "jobs": 3}).jobs == 3
    assert "default: the usable CPU cores" in " ".join(cli("check", "--help", cwd=Path.cwd()).stdout.split())


def _on_a_terminal(project: Path, **env: str) -> str:
    """The check's stdout when stdout is a pseudo-terminal."""
    pty = pytest.importorskip("pty")  # POSIX only
    leader, follower = pty.openpty()
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "CI")}
    with subprocess.Popen(
        [str(SCRIPT), "check", "--no-cache", "xla.py"], cwd=project, env={**base, "TERM": "xterm", **env},
        stdout=follower, stderr=subprocess.DEVNULL,
    ) as process:  # fmt: skip
        os.close(follower)
        chunks = []
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        process.wait(timeout=120)
    os.close(leader)
    return b"".join(chunks).decode()


def test_colour_on_a_terminal_only_and_as_the_environment_says(project: Path) -> None:
    assert ANSI in _on_a_terminal(project)
    assert ANSI not in _on_a_terminal(project, NO_COLOR="1")
    assert ANSI in _on_a_terminal(project, NO_COLOR="1", FORCE_COLOR="1")  # forcing wins
    piped = cli("check", "--no-cache", "xla.py", cwd=project)
    assert ANSI not in piped.stdout and "NM101" in piped.stdout
    forced = cli("check", "--no-cache", "xla.py", cwd=project, FORCE_COLOR="1")
    assert f"{ANSI}31m{ANSI}1mNM101" in forced.stdout  # the code in bold red, as Ruff
    assert ANSI not in cli("check", "--no-cache", "--format", "json", "xla.py", cwd=project, FORCE_COLOR="1").stdout
    assert ANSI not in cli("check", "--no-cache", "xla.py", cwd=project, FORCE_COLOR="0").stdout


def test_show_settings_is_toml(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.neuron-migrate]\nextend-exclude = ["gen/*.py"]\n[tool.neuron-migrate.per-file-ignores]\n"t_*.py" = ["NM2"]\n',
        encoding="utf-8",
    )
    done = cli("check", "--show-settings", ".", cwd=project)
    assert done.returncode == 0
    (group,) = toml_module().loads(done.stdout)["settings"]
    assert group["resolved"]["config-file"] == (project / "pyproject.toml").as_posix()
    assert group["extend-exclude"] == [(project / "gen/*.py").as_posix()]  # anchored at the config's folder
    assert group["per-file-ignores"] == {"t_*.py": ["NM2"]}
    assert group["unsafe-fixes"] is False and isinstance(group["resolved"]["max-file-bytes"], int)


@pytest.mark.parametrize(
    ("word", "suggestion"),
    [("NM1O1", "NM101 (xla_device_call)"), ("xla_device_cal", "NM101 (xla_device_call)"), ("nm20", "NM201")],
)
def test_explain_says_did_you_mean(project: Path, word: str, suggestion: str) -> None:
    done = cli("explain", word, cwd=project)
    assert done.returncode == 2
    assert "did you mean" in done.stderr and suggestion in done.stderr


def test_explain_takes_a_rule_name(project: Path) -> None:
    done = cli("explain", "xla_device_call", cwd=project)
    assert done.returncode == 0 and done.stdout.startswith("NM101 (xla_device_call)")
