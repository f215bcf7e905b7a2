"""Issue 40 item 3: `report` treats the files `check` cannot read (NM903) or refuses for their
size (NM904) as `check` does: each is one finding in the report, the report is written, and
its counts are `check`'s. Before, any such file made `report` end in a `KeyError` traceback
with no report written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hostile_bounds import bounded
from hostile_helpers import XLA, cli, out

pytestmark = pytest.mark.slow  # subprocesses of the installed script

GiB = 2**30


def unread_project(tmp_path: Path) -> Path:
    """One good file beside every kind of file the check cannot read or refuses."""
    (tmp_path / "good.py").write_text(XLA)
    (tmp_path / "dangling.py").symlink_to("nowhere.py")
    (tmp_path / "loop.py").symlink_to("loop.py")
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "zero.py").symlink_to("/dev/zero")  # read-only from the tool's side: it never writes
    (tmp_path / "huge.py").write_text("x = 1\n" * (2 * 1024 * 1024))  # 12 MiB, over the 10 MiB limit
    (tmp_path / "costly.py").write_text(XLA + 'y = f"' + "{x}" * 160_000 + '"\n')  # over the parse budget
    return tmp_path


EXPECTED = {
    "dangling.py": "NM903",
    "loop.py": "NM903",
    "pipe.py": "NM903",
    "zero.py": "NM903",
    "huge.py": "NM904",
    "costly.py": "NM904",
}


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_report_lists_unreadable_and_refused_files_and_is_written(tmp_path: Path, jobs: str) -> None:
    project = unread_project(tmp_path)
    for run in ("cold", "cached"):  # the second run takes the checks from the result cache
        done = cli(["report", "--jobs", jobs, "--format", "json", "-o", "plan.json", "."], project, limit_as=2 * GiB)
        text = out(done)
        assert done.returncode == 0, (run, text)
        assert "Traceback" not in text and "KeyError" not in text
        report = json.loads((project / "plan.json").read_text())
        items = [item for group in report["manual"] for item in group["items"]]
        codes = {item["filename"]: item["code"] for item in items if item["code"].startswith("NM9")}
        assert codes == EXPECTED, run
        assert report["check"]["found"] == 8  # NM101 and NM601 of good.py, and the six files
        (project / "plan.json").unlink()


def test_report_counts_are_check_counts_with_unreadable_files(tmp_path: Path) -> None:
    """In bounded time too: the report's own reading of imports skips the file the check
    refused to parse (`costly.py` took 30 s of CPU to parse)."""
    project = unread_project(tmp_path)
    checked = out(cli(["check", "--no-cache", "--statistics", "."], project, limit_as=2 * GiB))
    done = bounded(["report", "--no-cache", "--format", "md", "-o", "plan.md", "."], project, cpu=30, space=2 * GiB)
    assert done.rc == 0, done.out
    assert done.cpu < 8, done.cpu
    plan = (project / "plan.md").read_text()
    found = checked.split("Found ", 1)[1].split(" ", 1)[0]
    assert f"{found} findings" in plan  # 8: NM101 and NM601 of good.py, and the six files
    assert "`huge.py:1` NM904 Exclude this file or split it; it is larger than 10 MiB" in plan
    assert "`dangling.py:1` NM903 Make this file readable" in plan
