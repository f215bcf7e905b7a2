"""Items 7, 8 and 12 (names in reports) of issue 24: output files and file names that are not UTF-8.

Every target here lives in the test's temporary folder: a FIFO made with os.mkfifo stands for a
device node (the tool must refuse both the same way, before writing a byte).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from hostile_helpers import XLA, cli, no_stray, out

pytestmark = pytest.mark.slow  # subprocesses of the installed script

UTF8 = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}  # stdout strict UTF-8, as on most desktops and CI


def writes(kind: str) -> list[list[str]]:
    return {
        "check": [["check", "--no-cache", "-o", "{target}", "a.py"]],
        "baseline": [["check", "--no-cache", "--write-baseline", "{target}", "a.py"]],
        "report": [["report", "-o", "{target}", "a.py"]],
    }[kind]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text(XLA)
    return tmp_path


def run_writing(project: Path, kind: str, target: str) -> tuple[int, str]:
    (args,) = writes(kind)
    done = cli([a.replace("{target}", target) for a in args], project, timeout=60)
    return done.returncode, out(done)


@pytest.mark.parametrize("kind", ["check", "baseline", "report"])
def test_a_fifo_is_never_replaced_by_an_output_file(project: Path, kind: str) -> None:
    os.mkfifo(project / "out.fifo")
    code, text = run_writing(project, kind, "out.fifo")
    assert code == 2, text
    assert "out.fifo" in text and "it is a FIFO (named pipe), not a regular file" in text
    assert stat.S_ISFIFO(os.lstat(project / "out.fifo").st_mode)  # still the FIFO
    assert no_stray(project) == []


@pytest.mark.parametrize("kind", ["check", "baseline", "report"])
def test_a_link_to_a_fifo_or_a_dangling_link_is_refused(project: Path, kind: str) -> None:
    os.mkfifo(project / "pipe")
    (project / "to-pipe").symlink_to("pipe")
    code, text = run_writing(project, kind, "to-pipe")
    assert code == 2 and "a symbolic link to a FIFO (named pipe)" in text, text
    assert stat.S_ISFIFO(os.lstat(project / "pipe").st_mode) and (project / "to-pipe").is_symlink()
    (project / "dangling").symlink_to("missing/file")
    code, text = run_writing(project, kind, "dangling")
    assert code == 2 and "which does not exist" in text, text
    assert not (project / "missing").exists() and (project / "dangling").is_symlink()


@pytest.mark.parametrize("kind", ["check", "baseline", "report"])
def test_a_link_to_a_regular_file_writes_the_target_and_keeps_the_link(project: Path, kind: str) -> None:
    real = project / "real.out"
    real.write_text("old\n")
    real.chmod(0o640)
    (project / "link.out").symlink_to("real.out")
    code, text = run_writing(project, kind, "link.out")
    assert code in (0, 1), text
    assert (project / "link.out").is_symlink()
    assert real.read_text() != "old\n" and real.read_text().strip()
    assert stat.S_IMODE(real.stat().st_mode) == 0o640  # the file's mode is kept
    assert no_stray(project) == []


def test_a_new_output_file_gets_the_usual_mode(project: Path) -> None:
    code, _ = run_writing(project, "check", "new.txt")
    assert code == 1
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((project / "new.txt").stat().st_mode) == 0o666 & ~umask


BAD = b"bad\xff\x1b[31m.py"  # not UTF-8, with a terminal escape


@pytest.fixture
def bad_name(tmp_path: Path) -> Path:
    (Path(os.fsdecode(tmp_path)) / os.fsdecode(BAD)).write_text(XLA)
    return tmp_path


@pytest.mark.parametrize("fmt", ["text", "full", "json", "json-lines", "sarif", "gitlab", "github", "junit", "rdjson"])
def test_a_name_that_is_not_utf8_never_stops_a_report(bad_name: Path, fmt: str) -> None:
    done = cli(["check", "--no-cache", "--output-format", fmt, "."], bad_name, env=UTF8)
    assert done.returncode == 1, out(done)
    assert b"Traceback" not in done.stderr
    if fmt in ("json", "sarif", "gitlab", "rdjson"):
        document = json.loads(done.stdout.decode("utf-8"))  # valid UTF-8 JSON
        assert document
    if fmt == "sarif":
        assert '"uri": "bad%FF%1B%5B31m.py"' in done.stdout.decode()
    if fmt == "json":
        assert {os.fsencode(f["filename"]) for f in document} == {BAD}  # the \udcff escape reads back as the name
    if fmt == "github":
        assert b"\x1b" not in done.stdout and b"\xff" not in done.stdout
        assert b"file=bad\\xff\\x1b[31m.py," in done.stdout


def test_a_baseline_with_a_name_that_is_not_utf8_round_trips(bad_name: Path) -> None:
    done = cli(["check", "--no-cache", "--write-baseline", "base.json", "."], bad_name, env=UTF8)
    assert done.returncode == 0, out(done)
    json.loads((bad_name / "base.json").read_bytes().decode("utf-8"))
    again = cli(["check", "--no-cache", "--baseline", "base.json", "."], bad_name, env=UTF8)
    assert again.returncode == 0 and b"All checks passed!" in again.stdout, out(again)


@pytest.mark.parametrize("fmt", ["html", "md", "json"])
def test_a_report_with_a_name_that_is_not_utf8_is_written(bad_name: Path, fmt: str) -> None:
    done = cli(["report", "--format", fmt, "-o", f"r.{fmt}", "."], bad_name, env=UTF8)
    assert done.returncode == 0, out(done)
    text = (bad_name / f"r.{fmt}").read_bytes().decode("utf-8")
    assert "bad" in text


def test_an_existing_output_file_is_replaced_only_once_the_report_is_rendered(bad_name: Path) -> None:
    (bad_name / "old.sarif").write_text("previous report\n")
    done = cli(["check", "--no-cache", "--output-format", "sarif", "-o", "old.sarif", "."], bad_name, env=UTF8)
    assert done.returncode == 1, out(done)
    assert json.loads((bad_name / "old.sarif").read_text())["runs"]
    assert no_stray(bad_name) == []


def test_a_backtick_in_a_name_cannot_inject_markdown(tmp_path: Path) -> None:
    (tmp_path / "x` **bold** `y.py").write_text(XLA)
    done = cli(["report", "--format", "md", "."], tmp_path)
    text = done.stdout.decode()
    assert "| ``x` **bold** `y.py`` |" in text, text


def test_control_characters_in_a_name_stay_out_of_annotations_and_summaries(tmp_path: Path) -> None:
    (tmp_path / "bell\a.py").write_text(XLA)
    summary = tmp_path / "summary.md"
    done = cli(
        ["check", "--no-cache", "--output-format", "github", "."], tmp_path, env={"GITHUB_STEP_SUMMARY": str(summary)}
    )
    assert b"\a" not in done.stdout and b"file=bell\\x07.py," in done.stdout
    assert "\a" not in summary.read_text() and "`bell\\x07.py:1:1`" in summary.read_text()


def test_a_fifo_as_step_summary_is_skipped_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(XLA)
    os.mkfifo(tmp_path / "summary")
    env = {"GITHUB_STEP_SUMMARY": str(tmp_path / "summary")}
    done = cli(["check", "--no-cache", "--output-format", "github", "a.py"], tmp_path, env=env, timeout=60)
    assert done.returncode == 1 and "is not a regular file; no step summary written" in out(done)
