"""Messages with control characters (a project rule's TOML may write ESC, BEL, NUL and newlines)
are escaped for the terminal and for every output format, as the format table's `escaping`
column says; the code shown by `full` cannot drive the terminal either; and `--diff` keeps the
file's bytes, escape sequences included, so the patch still applies."""

from __future__ import annotations

import json
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hostile_helpers import cli

from neuron_migrate.output_formats import NAMES, Escaping, output_format

MESSAGE_TOML = r"Replace `{old}()`\u001b]0;owned\u0007\u001b[2J\u0000\nforged.py:1:1: NM101 fake"
MESSAGE = "Replace `mylib.get_device()`\x1b]0;owned\x07\x1b[2J\x00\nforged.py:1:1: NM101 fake"
SHOWN = r"Replace `mylib.get_device()`\x1b]0;owned\x07\x1b[2J\x00\nforged.py:1:1: NM101 fake"
RULE = f'''code = "NMX001"
name = "acme_get_device"
message = "{MESSAGE_TOML}"
severity = "error"
safety = "manual"

[doc]
what = "Checks for `mylib.get_device`.\\u001b[2J"
why = "It wraps xla.\\u0007"

[[map]]
old = "mylib.get_device"
'''
# Control bytes a report may never carry raw (newline, CR and tab are layout).
RAW_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[tool.neuron-migrate]\nextend-rules = ["nm-rules"]\n')
    (tmp_path / "nm-rules").mkdir()
    (tmp_path / "nm-rules" / "NMX001.toml").write_text(RULE)
    (tmp_path / "train.py").write_text("import mylib\nmylib.get_device()\n")
    return tmp_path


def _messages(fmt: str, data: bytes) -> list[str]:
    """The finding messages of a JSON-escaped report, decoded."""
    document = [json.loads(line) for line in data.splitlines()] if fmt == "json-lines" else json.loads(data)
    if fmt == "sarif":
        return [r["message"]["text"] for r in document["runs"][0]["results"]]
    if fmt == "rdjson":
        return [d["message"] for d in document["diagnostics"]]
    if fmt == "gitlab":
        return [issue["description"].removeprefix("NMX001 ") for issue in document]
    return [finding["message"] for finding in document]


@pytest.mark.parametrize("fmt", NAMES)
def test_every_format_escapes_a_rules_control_characters(project: Path, fmt: str) -> None:
    done = cli(["check", "train.py", "--no-cache", "--output-format", fmt], project)
    assert done.returncode == 1, done.stderr
    assert RAW_CONTROL.findall(done.stdout) == [], fmt
    text = done.stdout.decode("utf-8")
    escaping = output_format(fmt).escaping
    if escaping is Escaping.JSON:
        assert _messages(fmt, done.stdout) == [MESSAGE]  # the encoder escaped it; it decodes back whole
        return
    assert SHOWN in text
    assert not any(line.lstrip().startswith("forged.py") for line in text.splitlines()), "a forged finding line"
    if escaping is Escaping.MARKUP:
        failure = ET.fromstring(done.stdout).find(".//failure")
        assert failure is not None and SHOWN in failure.get("message", "") and "\ufffd" not in text


def test_text_shows_one_finding_line(project: Path) -> None:
    done = cli(["check", "train.py", "--no-cache"], project)
    assert done.stdout.decode().splitlines() == [f"train.py:2:1: NMX001 {SHOWN}", "Found 1 finding."]


def test_suppressed_and_noqa_lines_are_escaped_too(project: Path) -> None:
    (project / "train.py").write_text("import mylib\nmylib.get_device()  # noqa: NMX001\n")
    done = cli(["check", "train.py", "--no-cache", "--show-suppressed"], project)
    assert RAW_CONTROL.findall(done.stdout + done.stderr) == []
    assert f"train.py:2:1: NMX001 {SHOWN}" in done.stdout.decode()


def test_explain_and_rules_escape_a_rules_docs(project: Path) -> None:
    for args in (["explain", "NMX001"], ["rules"], ["rules", "--format", "markdown"]):
        done = cli(args, project)
        assert done.returncode == 0, done.stderr
        assert RAW_CONTROL.findall(done.stdout) == [], args
    assert r"Checks for `mylib.get_device`.\x1b[2J" in cli(["explain", "NMX001"], project).stdout.decode()


def test_full_shows_control_characters_in_the_code_as_pictures(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_bytes(
        b'import torch_xla.core.xla_model as xm\nd = xm.xla_device(); s = "\x1b[2J\x07\xe2\x80\xae"\n'
    )
    done = cli(["check", "t.py", "--no-cache", "--select", "NM101", "--output-format", "full"], tmp_path)
    assert RAW_CONTROL.findall(done.stdout) == []
    text = done.stdout.decode()
    assert '2 | d = xm.xla_device(); s = "\u241b[2J\u2407\\u202e"' in text
    assert "  |     ^^^^^^^^^^^^^^^ NM101" in text


def test_diff_keeps_escape_sequences_so_the_patch_applies(tmp_path: Path) -> None:
    source = b'import torch_xla.core.xla_model as xm\nd = xm.xla_device(); s = "\x1b[2J\x07"\n'
    (tmp_path / "t.py").write_bytes(source)
    done = cli(["check", "t.py", "--no-cache", "--select", "NM101", "--diff"], tmp_path)
    assert done.returncode == 1, done.stderr
    assert b'-d = xm.xla_device(); s = "\x1b[2J\x07"\n' in done.stdout
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    applied = subprocess.run(["git", "apply", "-"], cwd=tmp_path, input=done.stdout, capture_output=True, check=False)
    assert applied.returncode == 0, applied.stderr
    assert (tmp_path / "t.py").read_bytes().endswith(b'd = torch.device("neuron"); s = "\x1b[2J\x07"\n')
