"""Hostile and unusual input: bounded time and memory, clear errors, and `--fix` that never surprises.

Time and memory bounds are measured in a fresh subprocess (peak RSS of that process) and are
generous: they catch exponential and quadratic blow-ups, not small regressions.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.settings import Settings

pytestmark = pytest.mark.slow  # measures time and memory in subprocesses

ROOT = Path(__file__).resolve().parents[1]

_MEASURE = """
import json, resource, sys, time
from pathlib import Path
from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.settings import Settings
text = Path(sys.argv[1]).read_text()
settings = Settings(fix=sys.argv[2] == "fix")
start = time.process_time()  # CPU time: the bounds must hold on a loaded CI machine too
result = check_source(text, sys.argv[1], settings)
elapsed = time.process_time() - start
try:  # this process's own high-water mark: ru_maxrss also counts the parent's at fork time
    status = Path("/proc/self/status").read_text()
    peak = int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1]) * 1024
except (OSError, StopIteration):
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"seconds": elapsed, "peak": peak, "codes": sorted({f.code for f in result.findings})}))
"""


def measure(tmp_path: Path, text: str, mode: str = "check") -> dict:
    """Check `text` in a fresh interpreter; its CPU seconds, peak memory in bytes and finding codes."""
    path = tmp_path / "measured.py"
    path.write_text(text)
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path), mode],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
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


def test_thousands_of_rebinds_and_a_long_alias_chain_stay_linear(tmp_path: Path) -> None:
    rebinds = "".join(f"x = x.a{i % 7}\n" for i in range(5_000))
    got = measure(tmp_path, f"import torch_xla.core.xla_model as x\n{rebinds}x.xla_device()\n")
    assert got["seconds"] < 10.0 and "NM905" not in got["codes"]  # no recursion blow-up
    chain = "".join(f"a{i} = a{i - 1}\n" for i in range(1, 5_000))
    got = measure(tmp_path, f"import torch_xla.core.xla_model as a0\n{chain}a4999.xla_device()\n")
    assert got["seconds"] < 10.0
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
    assert result.findings == ()


def test_noqa_inside_a_string_of_a_broken_file_does_not_hide_its_syntax_error() -> None:
    text = 'import torch_xla.core.xla_model as xm\nmsg = "# noqa"; x = (1,\n'
    result = check_source(text, "broken.py", Settings(fix=True))
    assert [f.code for f in result.findings] == ["NM901"]
    assert result.fixed_source is None


def test_tokenizable_but_unparsable_file_gets_no_noqa_removal() -> None:
    text = "x = 1  # noqa: NM101\nif True:\n\ty = 1\n        z = 2\n"  # tabs and spaces mixed
    result = check_source(text, "broken.py", Settings(fix=True))
    assert result.fixed_source is None


# -- 6-10. --fix and the user's files --------------------------------------------------------
XLA = "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\n"
FIXED_MARK = 'torch.device("neuron")'


def cli(args: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The CLI in a subprocess, with the worktree first on the path."""
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(cwd)}
    return subprocess.run(
        [sys.executable, "-m", "neuron_migrate", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


def temp_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if ".neuron-migrate-" in p.name or p.name.endswith(".tmp"))


def test_symlink_to_a_checked_file_fixes_the_target_once(tmp_path: Path) -> None:
    (tmp_path / "real.py").write_text(XLA)
    (tmp_path / "link.py").symlink_to("real.py")
    done = cli(["check", "--fix", "--no-cache", "."], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "link.py").is_symlink()
    assert FIXED_MARK in (tmp_path / "real.py").read_text()
    assert "Found 2 findings (2 fixed, 0 remaining)" in done.stdout  # one file's two findings, once


def test_symlink_to_a_file_outside_the_paths_is_skipped_with_a_notice(tmp_path: Path) -> None:
    outside, project = tmp_path / "outside", tmp_path / "project"
    outside.mkdir()
    project.mkdir()
    (outside / "real.py").write_text(XLA)
    (project / "link.py").symlink_to(outside / "real.py")
    done = cli(["check", "--fix", "--no-cache", "."], project)
    assert done.returncode == 2  # an NM9xx finding: the file could not be handled
    assert (project / "link.py").is_symlink()
    assert (outside / "real.py").read_text() == XLA
    assert "NM903 Fix the link's target by hand" in done.stdout


def test_symlink_loop_is_reported_under_its_own_name(tmp_path: Path) -> None:
    (tmp_path / "a.py").symlink_to("b.py")
    (tmp_path / "b.py").symlink_to("a.py")
    done = cli(["check", "--no-cache", "."], tmp_path)
    assert done.returncode == 2, done.stderr
    assert "a.py:1:1: NM903 Make this file readable; Too many levels of symbolic links" in done.stdout
    assert "b.py:1:1: NM903" in done.stdout
    assert "Traceback" not in done.stderr


def test_hard_linked_file_is_skipped_with_a_notice(tmp_path: Path) -> None:
    (tmp_path / "one.py").write_text(XLA)
    os.link(tmp_path / "one.py", tmp_path / "two.py")
    done = cli(["check", "--fix", "--no-cache", "one.py"], tmp_path)
    assert done.returncode == 2
    assert "NM903 Fix this file by hand; it has 2 hard links" in done.stdout
    assert "NM101" in done.stdout  # its findings are still reported, unfixed
    assert (tmp_path / "one.py").stat().st_ino == (tmp_path / "two.py").stat().st_ino
    assert (tmp_path / "two.py").read_text() == XLA


def test_read_only_file_is_respected(tmp_path: Path) -> None:
    path = tmp_path / "ro.py"
    path.write_text(XLA)
    path.chmod(0o444)
    done = cli(["check", "--fix", "--no-cache", "ro.py"], tmp_path)
    if os.geteuid() == 0:  # root may write any file, as `open(path, "w")` would
        assert FIXED_MARK in path.read_text()
    else:
        assert "NM903 Make this file writable to fix it; the file is read-only" in done.stdout
        assert path.read_text() == XLA
    assert stat.S_IMODE(path.stat().st_mode) == 0o444


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root can give a file to another user")
def test_owner_and_group_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "theirs.py"
    path.write_text(XLA)
    os.chown(path, 4321, 8765)
    done = cli(["check", "--fix", "--no-cache", "theirs.py"], tmp_path)
    assert done.returncode == 0, done.stdout
    info = path.stat()
    assert (info.st_uid, info.st_gid) == (4321, 8765)
    assert FIXED_MARK in path.read_text()


def test_edit_made_during_the_run_is_not_overwritten(tmp_path: Path) -> None:
    from neuron_migrate.engine.pipeline import process_file

    path = tmp_path / "edited.py"
    path.write_text(XLA + "# the user's new line\n")
    result = process_file(path, "edited.py", Settings(fix=True), data=XLA.encode())  # read before the edit
    assert path.read_text() == XLA + "# the user's new line\n"
    assert any(f.code == "NM903" and "changed while it was being fixed" in f.message for f in result.findings)
    assert not result.fixed


def test_write_back_checks_the_file_just_before_replacing(tmp_path: Path) -> None:
    from neuron_migrate.engine import writeback

    path = tmp_path / "x.py"
    path.write_bytes(b"old\n")
    seen = writeback.snapshot(path, b"old\n")
    path.write_bytes(b"new by the user\n")
    assert (
        writeback.write_back(path, b"fixed\n", seen) == "Run `--fix` again; the file changed while it was being fixed"
    )
    assert path.read_bytes() == b"new by the user\n"
    assert temp_files(tmp_path) == []


def test_stale_temp_files_are_swept_by_the_next_run(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(XLA)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".train.py.neuron-migrate-{dead.pid}-abc123.tmp"
    stale.write_text("half a file")
    foreign = tmp_path / ".train.py.other-tool.tmp"
    foreign.write_text("not ours")
    cache = tmp_path / ".neuron_migrate_cache"
    cache.mkdir()
    stale_index = cache / f".0123.idx.neuron-migrate-{dead.pid}-xyz.tmp"
    stale_index.write_text("torn index")
    done = cli(["check", "."], tmp_path)
    assert done.returncode == 1
    assert not stale.exists() and not stale_index.exists()
    assert foreign.exists()  # only files named by this tool are removed


def test_temp_files_are_new_private_and_named_for_the_sweep(tmp_path: Path) -> None:
    """What `write_atomic` writes into first: a new file each time (never one that exists), mode
    0600 as `tempfile.mkstemp` makes it, named so a later run's sweep knows it is ours."""
    from neuron_migrate.engine import writeback

    target = tmp_path / "train.py"
    names = {writeback._temp_for(target) for _ in range(20)}
    assert len(names) == 20
    for name in names:
        assert os.stat(name).st_mode & 0o777 == 0o600 and os.path.getsize(name) == 0
        assert writeback._TEMP.match(os.path.basename(name)) and os.path.dirname(name) == str(tmp_path)
    assert writeback.sweep(tmp_path) == 0  # this process is alive: its temporary files stay


def _fixed_count(folder: Path, count: int, body: str) -> int:
    return sum((folder / f"m{i:03}.py").read_text() != body for i in range(count))


@pytest.mark.slow
def test_kill_9_during_fix_leaves_old_or_new_files_and_no_temp_files(tmp_path: Path) -> None:
    count = 150
    body = XLA + "".join(f"\ndef step_{i}():\n    xm.mark_step()\n" for i in range(40))
    for i in range(count):
        (tmp_path / f"m{i:03}.py").write_text(body)
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    fixed_text, partial_kills = None, 0
    for _ in range(4):
        before = _fixed_count(tmp_path, count, body)
        if before == count:
            break
        proc = subprocess.Popen(
            [sys.executable, "-m", "neuron_migrate", "check", "--fix", "--no-cache", "--jobs", "1", "."],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while _fixed_count(tmp_path, count, body) == before and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)  # kill as soon as this run has started writing
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        after = _fixed_count(tmp_path, count, body)
        partial_kills += 0 < after < count
        for i in range(count):
            text = (tmp_path / f"m{i:03}.py").read_text()
            if text != body:
                fixed_text = fixed_text or text
                assert text == fixed_text, f"m{i:03}.py is neither the original nor the fixed file"
    assert partial_kills, "no kill landed while the run was writing"
    cli(["check", "--fix", "--no-cache", "."], tmp_path)
    assert temp_files(tmp_path) == []
    assert _fixed_count(tmp_path, count, body) == count
    for i in range(count):
        compile((tmp_path / f"m{i:03}.py").read_text(), f"m{i:03}.py", "exec")


# -- 15. --since runs nothing the repository's git config names -----------------------------
def _git(repo: Path, *args: str, check: bool = True) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(repo), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", *args], cwd=repo, check=check, capture_output=True, env=env)


def hostile_repo(tmp_path: Path, filters: bool = True) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "start")
    (repo / "train.py").write_text("import torch\n")
    _git(repo, "add", "train.py")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "train")
    marker = tmp_path / "PWNED"
    commands = {
        "core.fsmonitor": f"touch {marker}-fsmonitor; false",
        "diff.evil.textconv": f"touch {marker}-textconv; cat",
        "diff.external": f"touch {marker}-external",
    }
    if filters:
        commands |= {
            "filter.evil.clean": f"touch {marker}-clean; cat",
            "filter.evil.process": f"touch {marker}-process",
        }
    for key, command in commands.items():
        _git(repo, "config", key, command)
    (repo / ".gitattributes").write_text("*.py diff=evil" + (" filter=evil\n" if filters else "\n"))
    (repo / "train.py").write_text("import torch\nimport torch_xla.core.xla_model as xm\nxm.mark_step()\n")
    return repo


@pytest.mark.parametrize("filters", [True, False])
def test_since_runs_nothing_from_a_hostile_git_config(tmp_path: Path, filters: bool) -> None:
    repo = hostile_repo(tmp_path, filters)
    done = cli(["check", "--no-cache", "--since", "HEAD", "."], repo)
    assert "NM201" in done.stdout, done.stdout + done.stderr
    assert sorted(p.name for p in tmp_path.glob("PWNED*")) == []


@pytest.mark.slow
@pytest.mark.parametrize(
    ("filters", "expected"), [(True, {"fsmonitor", "process"}), (False, {"fsmonitor", "external"})]
)
def test_plain_git_would_have_run_the_hostile_commands(tmp_path: Path, filters: bool, expected: set[str]) -> None:
    repo = hostile_repo(tmp_path, filters)  # proves the test above has teeth
    _git(repo, "diff", "HEAD", "--", check=False)
    _git(repo, "diff", "--no-ext-diff", "HEAD", "--", check=False)
    assert expected <= {p.name.split("-", 1)[1] for p in tmp_path.glob("PWNED*")}


def test_empty_since_is_a_usage_error(tmp_path: Path) -> None:
    done = cli(["check", "--since", "", "."], tmp_path)
    assert done.returncode == 2
    assert "--since needs a git revision" in done.stderr


# -- 11-14. clear errors instead of tracebacks ----------------------------------------------
DEEP_TOML = "x = " + "[" * 100_000 + "]" * 100_000 + "\n"


@pytest.mark.parametrize("name", ["neuron-migrate.toml", "pyproject.toml"])
def test_deeply_nested_config_is_a_one_line_error(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text("[tool.neuron-migrate]\n" + DEEP_TOML if name == "pyproject.toml" else DEEP_TOML)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "train.py").write_text(XLA)
    done = cli(["check", "--no-cache", "train.py"], tmp_path / "sub")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert name in done.stderr and "nested too deeply" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (
            '{"format": "neuron-migrate-baseline", "version": 1, "findings": ' + "[" * 100_000 + "]" * 100_000 + "}",
            "nested too deeply",
        ),
        ('{"format": "neuron-migrate-baseline", "version": 1, "findings": 5}', "`findings` must be a list"),
        (
            '{"format": "neuron-migrate-baseline", "version": 1, "findings": [{"path": "a.py", "code": "NM101", "snippet": "x", "count": 1e400}]}',
            "entry 1 needs",
        ),
        ('{"format": "neuron-migrate-baseline", "version": 1, "findings": ["x"]}', "entry 1 needs"),
    ],
)
def test_hostile_baseline_is_a_one_line_error(tmp_path: Path, document: str, expected: str) -> None:
    from neuron_migrate.run import baseline

    (tmp_path / "base.json").write_text(
        document.replace("neuron-migrate-baseline", baseline.FORMAT).replace(
            '"version": 1', f'"version": {baseline.VERSION}'
        )
    )
    (tmp_path / "train.py").write_text(XLA)
    done = cli(["check", "--no-cache", "--baseline", "base.json", "train.py"], tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "base.json" in done.stderr and expected in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def notebook(*cells: str) -> str:
    return '{"cells": [' + ", ".join(cells) + '], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'


CODE_CELL = '{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": null, "source": %s}'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"cells": [], "metadata": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        (notebook(CODE_CELL % "5"), "`source` must be a string or a list of strings"),
        (notebook(CODE_CELL % '["import torch_xla\\n", 7]'), "`source` must be a string or a list of strings"),
        (
            notebook(CODE_CELL % '"import torch_xla.core.xla_model as xm\\n", "source": "xm.xla_device()"'),
            "appears twice",
        ),
    ],
)
def test_hostile_notebooks_are_nm911(text: str, expected: str) -> None:
    result = check_source(text, "nb.ipynb", Settings(fix=True))
    assert [f.code for f in result.findings] == ["NM911"]
    assert expected in result.findings[0].message
    assert result.fixed_source is None


def test_deeply_nested_pyproject_target_is_a_syntax_finding() -> None:
    text = "[project]\nname = 'x'\ndependencies = ['torch-xla']\n" + DEEP_TOML
    result = check_source(text, "pyproject.toml", Settings(fix=True))
    assert [f.code for f in result.findings] == ["NM901"]
    assert "nested too deeply" in result.findings[0].message


def test_empty_select_in_config_enables_nothing(tmp_path: Path) -> None:
    (tmp_path / "neuron-migrate.toml").write_text("select = []\n")
    (tmp_path / "train.py").write_text(XLA)
    done = cli(["check", "--no-cache", "train.py"], tmp_path)
    assert done.returncode == 0, done.stdout
    assert "All checks passed!" in done.stdout


def test_utf16_without_bom_is_refused_as_python_refuses_it(tmp_path: Path) -> None:
    (tmp_path / "wide.py").write_bytes(XLA.encode("utf-16-le"))
    done = cli(["check", "--no-cache", "wide.py"], tmp_path)
    assert done.returncode == 1
    assert "wide.py:1:1: NM902" in done.stdout and "NUL bytes" in done.stdout


def test_newline_in_a_file_name_stays_on_one_output_line(tmp_path: Path) -> None:
    (tmp_path / "bad\nname.py").write_text(XLA)
    done = cli(["check", "--no-cache", "."], tmp_path)
    lines = [line for line in done.stdout.splitlines() if "NM101" in line]
    assert lines == ['bad\\nname.py:3:10: NM101 [*] Replace `xm.xla_device()` with `torch.device("neuron")`']


# -- 4. the other quadratic paths --------------------------------------------------------------
def test_long_shell_assignment_line_checks_fast(tmp_path: Path) -> None:
    from neuron_migrate.engine.formats import shell

    words = " ".join(f"V{i}=1" for i in range(50_000)) + " python -m torch_xla.distributed.xla_run train.py\n"
    start = time.process_time()
    command = next(iter(shell.commands(words)))
    assert len(list(shell.settings(command))) == 50_000
    assert shell.program(command) is not None
    assert time.process_time() - start < 5.0  # pop(0) made it quadratic


def test_pyproject_with_many_dependencies_checks_fast() -> None:
    deps = ", ".join(f'"pkg{i}"' for i in range(20_000))
    text = f'[project]\nname = "x"\ndependencies = [{deps}, "torch-xla"]\n'
    start = time.process_time()
    result = check_source(text, "pyproject.toml", Settings())
    assert time.process_time() - start < 5.0
    assert any(f.code.startswith("NM6") for f in result.findings)
