"""Ruff's habits, through the installed `neuron-migrate` in a subprocess: `--watch`, `concise`,
`--exit-non-zero-on-fix`, `help`, inline `--config KEY = VALUE`, NEURON_MIGRATE_OUTPUT_FORMAT,
coloured `full`, whole command summaries in `--help`, `--show-settings` that pastes back,
upper-case rule codes, and kebab-case names in `--statistics`."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from neuron_migrate.catalogue import toml_module

SCRIPT = Path(sys.executable).with_name("neuron-migrate")
TRAIN = "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\nxm.mark_step()\n"
SAFE_ONLY = "import torch\nimport torch_xla.core.xla_model as xm\n\nxm.mark_step()\nprint(torch.ones(1))\n"
ANSI = "\x1b["


def cli(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "NO_COLOR": "", **env}
    return subprocess.run(
        [str(SCRIPT), *args], cwd=cwd, env=environ, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    return tmp_path


# -- --watch -------------------------------------------------------------------------------------


def _read_until(fd: int, wanted: str, seen: list[str], timeout: float = 60) -> str:
    """Read the pty until `wanted` has appeared after what `seen` held; everything read so far."""
    start, text = len("".join(seen)), ""
    deadline = time.monotonic() + timeout
    while wanted not in "".join(seen)[start:]:
        assert time.monotonic() < deadline, f"no {wanted!r} in {''.join(seen)[start:]!r}"
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen.append(os.read(fd, 65536).decode("utf-8", "replace"))
            except OSError:
                break
    text = "".join(seen)[start:]
    return text


def test_watch_checks_again_after_a_change_and_clears_the_screen(project: Path) -> None:
    leader, follower = pty.openpty()  # stdout is a terminal, as when a person watches
    process = subprocess.Popen(
        [str(SCRIPT), "check", "--watch", "--no-cache", "train.py"],
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(project), "NO_COLOR": "1", "TERM": "xterm"},
    )
    os.close(follower)
    seen: list[str] = []
    try:
        first = _read_until(leader, "Watching for file changes.", seen)
        assert first.startswith("\x1b[H\x1b[2J\x1b[3J[")  # cleared, then `[HH:MM:SS] Starting ...`
        assert "Starting check in watch mode..." in first and "Found 3 findings." in first
        time.sleep(0.5)
        (project / "train.py").write_text("import torch\n\ndevice = torch.device('neuron')\n", encoding="utf-8")
        second = _read_until(leader, "Watching for file changes.", seen)
        assert second.lstrip("\r\n").startswith("\x1b[H\x1b[2J\x1b[3J[")  # cleared again
        assert "File change detected..." in second and "All checks passed!" in second
        assert "NM101" not in second
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=30)
        os.close(leader)
    assert code == 0


def test_watch_refuses_what_it_cannot_repeat(project: Path) -> None:
    done = cli(project, "check", "--watch", "--add-noqa", ".")
    assert done.returncode == 2 and "--watch checks files as they change; it does not take --add-noqa" in done.stderr


# -- formats, exit codes, help -----------------------------------------------------------------


def test_concise_is_the_default_format_by_ruffs_name(project: Path) -> None:
    text = cli(project, "check", "--no-cache", "train.py")
    assert cli(project, "check", "--no-cache", "--output-format", "concise", "train.py").stdout == text.stdout
    (project / "neuron-migrate.toml").write_text('output-format = "concise"\n', encoding="utf-8")
    assert cli(project, "check", "--no-cache", "train.py").stdout == text.stdout
    assert "concise" in cli(project, "check", "--help").stdout


def test_the_output_format_environment_variable(project: Path) -> None:
    done = cli(project, "check", "--no-cache", "train.py", NEURON_MIGRATE_OUTPUT_FORMAT="json")
    assert {f["code"] for f in json.loads(done.stdout)} == {"NM101", "NM201", "NM601"}
    flag = cli(
        project, "check", "--no-cache", "--output-format", "text", "train.py", NEURON_MIGRATE_OUTPUT_FORMAT="json"
    )
    assert flag.stdout.startswith("train.py:"), "the flag wins over the variable"
    bad = cli(project, "check", "train.py", NEURON_MIGRATE_OUTPUT_FORMAT="yaml")
    assert bad.returncode == 2 and "'yaml' is not one of" in bad.stderr


def test_exit_non_zero_on_fix(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(SAFE_ONLY, encoding="utf-8")
    assert cli(tmp_path, "check", "--no-cache", "--fix", "a.py").returncode == 0  # all fixed: 0
    (tmp_path / "a.py").write_text(SAFE_ONLY, encoding="utf-8")
    done = cli(tmp_path, "check", "--no-cache", "--fix", "--exit-non-zero-on-fix", "a.py")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "mark_step" not in (tmp_path / "a.py").read_text(encoding="utf-8")
    assert (
        cli(tmp_path, "check", "--no-cache", "--fix", "--exit-non-zero-on-fix", "a.py").returncode == 0
    )  # nothing to fix
    (tmp_path / "a.py").write_text(SAFE_ONLY, encoding="utf-8")
    assert (
        cli(tmp_path, "check", "--no-cache", "--fix", "--exit-non-zero-on-fix", "--exit-zero", "a.py").returncode == 0
    )


def test_help_subcommand(project: Path) -> None:
    assert cli(project, "help").stdout == cli(project, "--help").stdout
    assert cli(project, "help", "check").stdout == cli(project, "check", "--help").stdout
    assert cli(project, "help", "check").stdout.startswith("Usage: neuron-migrate check [OPTIONS] [PATHS]...")
    unknown = cli(project, "help", "chek")
    assert unknown.returncode == 2 and "unknown command 'chek'" in unknown.stderr


def test_top_level_help_shows_whole_summaries(project: Path) -> None:
    listing = cli(project, "--help").stdout.split("Commands:", 1)[1]
    assert "..." not in listing
    joined = " ".join(listing.split())
    assert "check Check PATHS (default: the current folder) for torch_xla code and APIs TorchNeuron lacks." in joined
    assert "rules List every rule (the project's own too): code, name, severity, fix safety and summary." in joined
    assert " dev " not in joined  # the developers' command is hidden


# -- --config KEY = VALUE -------------------------------------------------------------------------


def test_inline_config_overrides_one_key(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.neuron-migrate]\nignore = ["NM6"]\n', encoding="utf-8")
    codes = {line.split()[1] for line in cli(project, "check", "--no-cache", "train.py").stdout.splitlines()[:-2]}
    assert codes == {"NM101", "NM201"}
    inline = cli(project, "check", "--no-cache", "--config", 'ignore = ["NM2"]', "train.py")
    assert [line.split()[1] for line in inline.stdout.splitlines() if line.startswith("train.py")] == [
        "NM601",
        "NM101",
    ], "the pair replaced the file's `ignore`"
    two = cli(project, "check", "--no-cache", "--config", 'ignore = ["NM2"]', "--config", 'target = "accelerator"', ".")
    assert (
        "torch.accelerator"
        in cli(project, "check", "--no-cache", "--config", 'target = "accelerator"', "--diff").stdout
    )
    assert two.returncode == 1
    other = project / "other.toml"
    other.write_text('select = ["NM2"]\n', encoding="utf-8")
    both = cli(
        project, "check", "--no-cache", "--config", str(other), "--config", 'extend-select = ["NM1"]', "train.py"
    )
    assert {line.split()[1] for line in both.stdout.splitlines() if line.startswith("train.py")} == {"NM101", "NM201"}


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("ignor = []", "--config: unknown key `ignor` (did you mean `ignore`?)"),
        ("ignore = [1", "is neither a config file nor a TOML `KEY = VALUE` pair"),
        ('select = ["NM1"]\nignore = ["NM2"]', "must set one key"),
        ("missing.toml", "missing.toml: config file not found"),
    ],
)
def test_inline_config_errors(project: Path, value: str, words: str) -> None:
    done = cli(project, "check", "--config", value, "train.py")
    assert done.returncode == 2 and words in done.stderr


# -- colour, settings, codes, statistics ----------------------------------------------------------


def test_full_is_coloured_on_request(project: Path) -> None:
    coloured = cli(project, "check", "--no-cache", "--output-format", "full", "train.py", FORCE_COLOR="1").stdout
    assert f"{ANSI}34m{ANSI}1m3 |{ANSI}0m device = xm.xla_device()" in coloured  # blue line numbers
    assert f"{ANSI}31m{ANSI}1m" in coloured and f"{ANSI}32m+import torch{ANSI}0m" in coloured
    plain = cli(project, "check", "--no-cache", "--output-format", "full", "train.py").stdout
    assert ANSI not in plain and "3 | device = xm.xla_device()" in plain


def test_show_settings_pastes_back_into_the_config(tmp_path: Path) -> None:
    first = tmp_path / "first"
    first.mkdir()
    (first / "train.py").write_text(TRAIN, encoding="utf-8")
    (first / "pyproject.toml").write_text(
        '[tool.neuron-migrate]\nignore = ["NM6"]\nextend-exclude = ["gen/*.py"]\nfrom = ["xla", "cuda"]\n'
        'target = "accelerator"\nunsafe-fixes = true\n[tool.neuron-migrate.per-file-ignores]\n"t_*.py" = ["NM2"]\n',
        encoding="utf-8",
    )
    shown = cli(first, "check", "--show-settings", ".")
    assert shown.returncode == 0, shown.stderr
    (group,) = toml_module().loads(shown.stdout)["settings"]
    assert group["resolved"]["paths"] == ["."] and group["resolved"]["config-file"].endswith("pyproject.toml")
    keys = shown.stdout.split("[[settings]]\n", 1)[1].split("\n\n[settings.resolved]", 1)[0]
    (first / "pyproject.toml").write_text("[tool.neuron-migrate]\n" + keys + "\n", encoding="utf-8")
    again = cli(first, "check", "--show-settings", ".")
    assert again.returncode == 0, again.stderr
    assert again.stdout == shown.stdout
    assert "NM601" not in group["select"] and "NM801" in group["select"] and group["from"] == ["xla", "cuda"]


def test_rule_codes_are_upper_case_as_in_ruff(project: Path) -> None:
    done = cli(project, "check", "--select", "nm201", "train.py")
    assert done.returncode == 2 and "rule codes are upper case (did you mean NM201?)" in done.stderr
    (project / "neuron-migrate.toml").write_text('ignore = ["nm6"]\n', encoding="utf-8")
    config = cli(project, "check", "train.py")
    assert config.returncode == 2 and "did you mean NM6?" in config.stderr
    (project / "neuron-migrate.toml").unlink()
    assert cli(project, "explain", "nm201").stdout.startswith("NM201 (xla_mark_step_call)")  # docs only: any case


def test_statistics_names_are_kebab_case(project: Path) -> None:
    text = cli(project, "check", "--no-cache", "--statistics", "train.py").stdout
    assert re.search(r"^1\tNM201\t\[\*\] xla-mark-step-call$", text, re.MULTILINE), text
    rows = json.loads(cli(project, "check", "--no-cache", "--statistics", "--output-format", "json", "train.py").stdout)
    assert {r["name"] for r in rows} == {"xla-device-call", "xla-mark-step-call", "xla-import"}
