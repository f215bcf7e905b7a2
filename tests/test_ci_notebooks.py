"""Notebook findings in the formats CI tools read: placed in the raw `.ipynb`, fixes applicable to it.

A bot reading SARIF, rdjson, GitLab Code Quality or GitHub annotations knows only the file, so a
finding in a cell must point at the line and column where that code is written in the JSON, and
a replacement must be one of the JSON text. The small appliers here do what such a bot does; the
notebook they produce must be the one `--fix` writes.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from itertools import pairwise
from typing import Any

import pytest
from conftest import sarif_schema
from github_commands import parse_commands
from test_notebook import STYLES, cell, notebook

from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.model import FileResult, Position
from neuron_migrate.output import RenderOptions, github, gitlab, rdjson, sarif
from neuron_migrate.output.raw_notebook import RawNotebook
from neuron_migrate.settings import Settings

SELECT = ("NM101", "NM201", "NM203")


def ci_notebook() -> dict[str, Any]:
    """Cells with fixes of every shape: in a line, a whole line removed, one-string sources, non-ASCII."""
    return notebook(
        cell("markdown", ["# Überblick — set-up\n"]),
        cell(
            "code",
            [
                "import torch\n",
                "import torch_xla.core.xla_model as xm\n",
                'label = "modèle—日本"; device = xm.xla_device()\n',
                "rank = xm.get_ordinal()",
            ],
        ),
        cell(
            "code",
            ["for step in range(3):\n", "    loss = torch.ones(2, device=device).sum()\n", "    xm.mark_step()\n"],
        ),
        cell("code", 'x = torch.zeros(1, device=xm.xla_device())\nprint("tab\\there", x)\n'),  # type: ignore[arg-type]
    )


def _text(style: str) -> str:
    return STYLES[style](ci_notebook())


def _results(text: str, **settings: Any) -> FileResult:
    return check_source(text, "nb/train.ipynb", Settings(select=SELECT, **settings))


def _lines(text: str) -> list[str]:
    """The file's lines with their endings, split as SARIF and rdjson count lines (CR LF, LF)."""
    return text.splitlines(keepends=True) if "\r" not in text.replace("\r\n", "") else [text]


def _offset(text: str, line: int, column: int, unit: str) -> int:
    """An offset into `text` (or its UTF-8 bytes) for a 1-based line and column counted in `unit`."""
    lines = _lines(text)
    before = "".join(lines[: line - 1])
    if unit == "bytes":
        return len(before.encode()) + column - 1
    return len(before) + column - 1


def apply(text: str, edits: list[tuple[int, int, int, int, str]], unit: str) -> str:
    """What a bot does: apply non-overlapping (line, column, end line, end column, text) replacements."""
    spans = sorted((_offset(text, a, b, unit), _offset(text, c, d, unit), new) for a, b, c, d, new in edits)
    assert all(x[1] <= y[0] for x, y in pairwise(spans)), "overlapping replacements"
    data: Any = text.encode() if unit == "bytes" else text
    for start, end, new in reversed(spans):
        data = data[:start] + (new.encode() if unit == "bytes" else new) + data[end:]
    return data.decode() if unit == "bytes" else data


def _sarif_edits(document: dict[str, Any]) -> list[tuple[int, int, int, int, str]]:
    out = []
    for result in document["runs"][0]["results"]:
        for fix in result.get("fixes", ()):
            for change in fix["artifactChanges"]:
                for r in change["replacements"]:
                    d = r["deletedRegion"]
                    out.append(
                        (d["startLine"], d["startColumn"], d["endLine"], d["endColumn"], r["insertedContent"]["text"])
                    )
    return out


def _rdjson_edits(document: dict[str, Any]) -> list[tuple[int, int, int, int, str]]:
    out = []
    for diagnostic in document["diagnostics"]:
        for s in diagnostic.get("suggestions", ()):
            a, b = s["range"]["start"], s["range"]["end"]
            out.append((a["line"], a["column"], b["line"], b["column"], s["text"]))
    return out


def _quoted(text: str, start: tuple[int, int], end: tuple[int, int], unit: str = "code points") -> str:
    if unit == "bytes":
        data = text.encode()
        return data[_offset(text, *start, unit) : _offset(text, *end, unit)].decode()
    return text[_offset(text, *start, unit) : _offset(text, *end, unit)]


@pytest.mark.parametrize("style", ["jupyter", "indent2-ascii-no-newline", "crlf", "one-line", "compact"])
def test_sarif_and_rdjson_fixes_applied_to_the_raw_notebook_give_the_fix_output(style: str) -> None:
    text = _text(style)
    fixed = _results(text, fix=True).fixed_source
    assert fixed is not None and fixed != text
    result = _results(text)
    document = sarif.document([result], root="/repo", cwd="/repo")
    assert apply(text, _sarif_edits(document), "code points") == fixed
    assert apply(text, _rdjson_edits(json.loads(rdjson.render([result]))), "bytes") == fixed
    assert json.loads(fixed)  # still a notebook


@pytest.mark.parametrize("style", ["jupyter", "indent2-ascii-no-newline", "crlf", "compact"])
def test_every_ci_format_points_at_the_code_in_the_raw_file(style: str) -> None:
    text = _text(style)
    result = _results(text)
    expected = sorted((f.code, f.cell, f.snippet) for f in result.findings)
    assert {"NM101", "NM201"} <= {code for code, _, _ in expected}

    def seen(code: str, message: str, quoted: str) -> tuple[str, int, str]:
        """(code, cell, snippet) as a reader of the output sees them: the cell from the message."""
        assert message.startswith("cell "), message
        number = int(message.split(":", 1)[0].removeprefix("cell "))
        return code, number, json.loads(f'"{quoted}"')  # the raw text is JSON-escaped

    document = sarif.document([result], root="/repo", cwd="/repo")
    found = []
    for item in document["runs"][0]["results"]:
        region = item["locations"][0]["physicalLocation"]["region"]
        start, end = (region["startLine"], region["startColumn"]), (region["endLine"], region["endColumn"])
        found.append(seen(item["ruleId"], item["message"]["text"], _quoted(text, start, end)))
        assert item["properties"]["cell"] == found[-1][1]
    assert sorted(found) == expected

    found = []
    for diagnostic in json.loads(rdjson.render([result]))["diagnostics"]:
        r = diagnostic["location"]["range"]
        start, end = (r["start"]["line"], r["start"]["column"]), (r["end"]["line"], r["end"]["column"])
        found.append(seen(diagnostic["code"]["value"], diagnostic["message"], _quoted(text, start, end, "bytes")))
    assert sorted(found) == expected

    found = []
    for issue in json.loads(gitlab.render([result], RenderOptions(root="/repo", cwd="/repo"))):
        p = issue["location"]["positions"]
        start, end = (p["begin"]["line"], p["begin"]["column"]), (p["end"]["line"], p["end"]["column"])
        code, message = issue["description"].split(" ", 1)
        found.append(seen(code, message, _quoted(text, start, end)))
    assert sorted(found) == expected

    commands = parse_commands(github.render([result], RenderOptions(root="/repo", cwd="/repo")))
    summary = github.summary([result], root="/repo", cwd="/repo")
    rows = re.findall(r"^\| `nb/train\.ipynb:(\d+):(\d+)` \| (NM\d+) \|", summary, re.MULTILINE)
    assert sorted(rows) == sorted((c["line"], c["col"], c["title"].split()[0]) for c in commands)  # agree

    found = []
    for command in commands:
        start, end = (int(command["line"]), int(command["col"])), (int(command["line"]), int(command["endColumn"]))
        found.append(seen(command["title"].split()[0], command["message"], _quoted(text, start, end)))
    assert sorted(found) == expected


def test_nm101_in_the_jupyter_layout_is_on_its_own_json_line() -> None:
    """A fixed expectation, so the checks above cannot agree with themselves by accident."""
    text = _text("jupyter")
    lines = text.split("\n")
    (item,) = [
        r
        for r in sarif.document([_results(text)], root="/repo", cwd="/repo")["runs"][0]["results"]
        if r["ruleId"] == "NM101" and r["properties"]["cell"] == 2
    ]
    region = item["locations"][0]["physicalLocation"]["region"]
    line = lines[region["startLine"] - 1]
    assert line.lstrip().startswith('"label = \\"modèle—日本\\"; device = xm.xla_device()\\n"')
    assert line[region["startColumn"] - 1 : region["endColumn"] - 1] == "xm.xla_device()"


def test_a_fix_touching_ipython_syntax_is_not_offered_against_the_json() -> None:
    """The checker saw a placeholder where `%time ...` is written: an edit over it has no raw form."""
    nb = notebook(
        cell("code", ["import torch_xla.core.xla_model as xm\n", "%time xm.mark_step()\n", "xm.mark_step()\n"])
    )
    text = STYLES["jupyter"](nb)
    (finding,) = _results(text).findings
    assert finding.code == "NM201" and finding.fix is not None and finding.fix.edits
    placed = RawNotebook(text).raw(finding)
    assert placed is not None and placed.fix is not None  # the plain line's own fix is kept
    over_magic = replace(finding.fix.edits[0], start=Position(2, 1))
    widened = replace(finding, fix=replace(finding.fix, edits=(over_magic,)))
    placed = RawNotebook(text).raw(widened)
    assert placed is not None and placed.fix is None and placed.message.startswith("cell 1: ")
    (item,) = sarif.document([replace(_results(text), findings=(widened,))])["runs"][0]["results"]
    assert "fixes" not in item and "fixApplicability" not in item["properties"]


def test_notebook_sarif_validates_against_the_schema() -> None:
    import jsonschema

    schema = sarif_schema()
    for style in STYLES:
        jsonschema.Draft7Validator(schema).validate(sarif.document([_results(_text(style))], root="/repo", cwd="/repo"))
