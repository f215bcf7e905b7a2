"""Leftovers of issue 40 (items 2 and 8): a file refused for cost (NM904) is said to be refused,
under `--diff` and after `--fix`, and never offered to `--fix` again; a file name with control
characters and a newline is escaped in every output format, JUnit included.

Before: `check --diff` printed only "No fixes available." for a file whose fix it refused; after
`--fix` refused 20,000 aliases on one import line, the summary still said "[*] 20001 fixable with
the `--fix` option"; JUnit turned ESC and BEL in a name into U+FFFD and left its newline raw in
the `<failure>` body, where a forged `forged.py:1:1: NM101` line appeared."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hostile_helpers import cli, out

from neuron_migrate.output_formats import NAMES, Escaping, output_format

pytestmark = pytest.mark.slow  # subprocesses of the installed script

HEAD = "import torch_xla.core.xla_model as xm\nd = xm.xla_device()\n"
FSTRING = HEAD + 'x = 1\ny = f"' + "{x}" * 50_000 + '"\n'  # refused to check: parsing it is too slow
FIXABLE = "import torch_xla.core.xla_model as xm\nd = xm.xla_device()\n"


def aliases(n: int) -> str:
    """Checked, but refused for `--fix` (its LibCST tree would be too large)."""
    head = "from torch_xla.core.xla_model import xla_device, " + ", ".join(f"xla_device as o{i}" for i in range(n))
    return head + "\nxla_device()\n" + "".join(f"o{i}()\n" for i in range(n))


def test_diff_says_which_file_it_refused_and_why(tmp_path: Path) -> None:
    (tmp_path / "slow.py").write_text(FSTRING)
    (tmp_path / "good.py").write_text(FIXABLE)
    done = cli(["check", "--no-cache", "--diff", "slow.py", "good.py"], tmp_path)
    assert done.returncode == 1, out(done)
    stdout, stderr = done.stdout.decode(), done.stderr.decode()
    assert stdout.startswith("--- a/good.py\n+++ b/good.py\n") and "slow.py" not in stdout  # a patch only
    refused = [line for line in stderr.splitlines() if line.startswith("slow.py:")]
    assert len(refused) == 1, stderr
    assert refused[0].startswith("slow.py:1:1: NM904 Exclude this file or split it; parsing its 50,000 f-string")
    assert stderr.endswith("Would fix 2 findings in 1 file.\n"), stderr
    assert (tmp_path / "slow.py").read_text() == FSTRING
    as_json = cli(["check", "--no-cache", "--diff", "--output-format", "json", "slow.py"], tmp_path)
    assert [row["code"] for row in json.loads(as_json.stdout)] == ["NM904"], out(as_json)
    assert as_json.stderr == b"No fixes available.\n"  # said once, in the report


def test_diff_says_the_fix_it_refused_and_unreadable_files(tmp_path: Path) -> None:
    (tmp_path / "long.py").write_text(aliases(20_000))
    (tmp_path / "dangling.py").symlink_to("nowhere.py")
    done = cli(["check", "--no-cache", "--diff", "long.py", "dangling.py"], tmp_path)
    assert done.returncode == 2, out(done)  # NM903: an I/O error
    assert done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert lines[0].startswith("dangling.py:1:1: NM903 "), lines
    assert lines[1].startswith("long.py:1:1: NM904 Fix this file by hand or split it; analysing its "), lines
    assert lines[2:] == ["No fixes available."]
    assert not any("NM101" in line for line in lines)  # the findings themselves are check's to list


def test_quiet_diff_still_says_which_file_it_refused(tmp_path: Path) -> None:
    """`--quiet` drops the summary, not the findings: a refusal is one."""
    (tmp_path / "slow.py").write_text(FSTRING)
    done = cli(["check", "--no-cache", "--diff", "--quiet", "slow.py"], tmp_path)
    assert done.returncode == 1 and done.stdout == b"", out(done)
    assert done.stderr.decode().startswith("slow.py:1:1: NM904 ") and done.stderr.count(b"\n") == 1, out(done)


FIXABLE_LINE = re.compile(r"^\[\*\] (\d+) fixable", re.MULTILINE)


@pytest.mark.parametrize("fix", [["--fix"], ["--diff"]])
def test_a_file_whose_fix_was_refused_is_not_offered_to_fix_again(tmp_path: Path, fix: list[str]) -> None:
    (tmp_path / "long.py").write_text(aliases(20_000))
    (tmp_path / "good.py").write_text(FIXABLE + "e = xm.xla_device()\n")
    text = out(cli(["check", "--no-cache", *fix, "long.py", "good.py"], tmp_path))
    assert "long.py:1:1: NM904 Fix this file by hand or split it" in text, text
    assert not re.search(r"^long\.py:\S+ NM101 \[", text, re.MULTILINE), "a refused finding marked fixable"
    if fix == ["--fix"]:
        assert "Found 20006 findings (3 fixed, 20003 remaining)." in text and FIXABLE_LINE.search(text) is None, text
    base = ["check", "--no-cache", *fix, "long.py"]  # alone: `--diff` prints no patch before the report
    rows = json.loads(cli([*base, "--output-format", "json"], tmp_path).stdout)
    assert len(rows) == 20003 and [r for r in rows if r["fix"] is not None] == []
    statistics = json.loads(cli([*base, "--statistics", "--output-format", "json"], tmp_path).stdout)
    assert [(r["code"], r["count"], r["fixable_count"]) for r in statistics][:1] == [("NM101", 20001, 0)]
    assert sum(r["fixable_count"] for r in statistics) == 0
    plain = cli([*base, "--statistics"], tmp_path).stdout.decode()
    assert "20001\tNM101\txla-device-call\n" in plain and FIXABLE_LINE.search(plain) is None, plain
    assert (tmp_path / "long.py").read_text() == aliases(20_000)


NAME = "a\x1b]0;owned\x07\x1b[2J\nforged.py:1:1: NM101 fake.py"
SHOWN = r"a\x1b]0;owned\x07\x1b[2J\nforged.py:1:1: NM101 fake.py"
RAW_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _names(fmt: str, data: bytes) -> set[str]:
    """The file names a JSON-escaped report holds, decoded."""
    document = [json.loads(line) for line in data.splitlines()] if fmt == "json-lines" else json.loads(data)
    if fmt == "sarif":
        return {
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in document["runs"][0]["results"]
        }
    if fmt == "rdjson":
        return {d["location"]["path"] for d in document["diagnostics"]}
    if fmt == "gitlab":
        return {issue["location"]["path"] for issue in document}
    return {finding["filename"] for finding in document}


@pytest.mark.parametrize("fmt", NAMES)
def test_every_format_escapes_a_file_name_that_forges_a_line(tmp_path: Path, fmt: str) -> None:
    (Path(os.fsdecode(tmp_path)) / NAME).write_text(FIXABLE)
    done = cli(["check", "--no-cache", "--output-format", fmt, "."], tmp_path)
    assert done.returncode == 1, out(done)
    assert RAW_CONTROL.findall(done.stdout) == [] and b"\nforged.py" not in done.stdout, fmt
    text = done.stdout.decode("utf-8")
    assert "\ufffd" not in text and not any(line.lstrip().startswith("forged.py") for line in text.splitlines())
    if output_format(fmt).escaping is Escaping.JSON:
        names = _names(fmt, done.stdout)
        assert names in ({NAME}, {"a%1B%5D0%3Bowned%07%1B%5B2J%0Aforged.py%3A1%3A1%3A%20NM101%20fake.py"}), names
        return
    assert SHOWN in text or fmt == "github", text
    if output_format(fmt).escaping is Escaping.MARKUP:
        root = ET.fromstring(done.stdout)
        names = {s.get("name") for s in root.iter("testsuite")} | {c.get("file") for c in root.iter("testcase")}
        assert names == {SHOWN}
        bodies = [line for failure in root.iter("failure") for line in (failure.text or "").splitlines()]
        assert bodies and all(line.startswith(SHOWN + ":") for line in bodies), bodies


def test_junit_shows_a_name_that_is_not_utf8_as_its_bytes(tmp_path: Path) -> None:
    (Path(os.fsdecode(tmp_path)) / os.fsdecode(b"bad\xff\x1b[31m.py")).write_text(FIXABLE)
    env = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    done = cli(["check", "--no-cache", "--output-format", "junit", "."], tmp_path, env=env)
    assert done.returncode == 1, out(done)
    root = ET.fromstring(done.stdout)
    assert {s.get("name") for s in root.iter("testsuite")} == {r"bad\xff\x1b[31m.py"}
