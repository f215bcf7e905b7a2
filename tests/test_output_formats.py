"""Each output format checked against what its consumer reads.

SARIF is validated with the OASIS 2.1.0 schema, GitHub workflow commands are parsed back,
GitLab and rdjson columns are checked on a line with non-ASCII text before the finding, JUnit is
parsed with ElementTree, and fixes carried by SARIF and rdjson are applied to reproduce `--fix`.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from typing import Any

import pytest
from conftest import sarif_schema as load_sarif_schema
from github_commands import parse_commands
from output_sample import sample_results

from neuron_migrate.catalogue import load_catalogue
from neuron_migrate.engine.pipeline import check_source
from neuron_migrate.model import FileResult, Finding, Position, Severity
from neuron_migrate.output import (
    RenderOptions,
    full,
    github,
    gitlab,
    json_lines,
    junit,
    rdjson,
    render,
    repo_path,
    sarif,
)
from neuron_migrate.output import json as json_output
from neuron_migrate.output_formats import NAMES as FORMATS
from neuron_migrate.settings import Settings

REPO = RenderOptions(root="/repo", cwd="/repo")

# Non-ASCII text (2- and 3-byte UTF-8, and wide characters) before the finding on line 4.
REAL = (
    "import torch_xla.core.xla_model as xm\n"
    "\n"
    "def train(model, loader):\n"
    '    name = "modèle—日本"; device = xm.xla_device()\n'
    "    for batch in loader:\n"
    "        model(batch.to(device))\n"
    "        xm.mark_step()\n"
)
DEVICE_LINE = REAL.splitlines()[3]


def checked(source: str = REAL, path: str = "pkg/train.py", **settings: Any) -> FileResult:
    return check_source(source, path, Settings(**settings))


def only(result: FileResult, code: str) -> Finding:
    (finding,) = [f for f in result.findings if f.code == code]
    return finding


# --- SARIF -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sarif_schema() -> dict[str, Any]:
    return load_sarif_schema()


def _validate(document: dict[str, Any], schema: dict[str, Any]) -> None:
    import jsonschema

    jsonschema.Draft7Validator(schema).validate(document)


def test_sarif_validates_against_the_schema(sarif_schema: dict[str, Any]) -> None:
    for results in (sample_results(), [checked()], []):
        text = sarif.render(results, RenderOptions(root="/repo", cwd="/repo", rules=load_catalogue()))
        _validate(json.loads(text), sarif_schema)


def test_sarif_schema_rejects_a_broken_log(sarif_schema: dict[str, Any]) -> None:
    """The validation above can fail: a wrong `columnKind` is caught."""
    import jsonschema

    document = sarif.document([checked()], root="/repo", cwd="/repo")
    document["runs"][0]["columnKind"] = "bytes"
    with pytest.raises(jsonschema.ValidationError):
        _validate(document, sarif_schema)


def test_sarif_run_carries_tool_rules_and_column_kind() -> None:
    document = sarif.document(sample_results(), root="/repo", cwd="/repo", rules=load_catalogue())
    run = document["runs"][0]
    assert document["version"] == "2.1.0"
    assert run["columnKind"] == "unicodeCodePoints"
    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": "file:///repo/"}}
    rules = run["tool"]["driver"]["rules"]
    ids = [rule["id"] for rule in rules]
    assert ids == sorted(ids)
    assert {s.code for s in load_catalogue() if not s.retired} <= set(ids)
    smoke = rules[ids.index("NM701")]  # not in the catalogue: described from the finding
    assert smoke["properties"]["category"] == "smoke"
    assert smoke["defaultConfiguration"]["level"] == "warning"
    nm101 = rules[ids.index("NM101")]
    assert nm101["help"]["markdown"].startswith("**What it does.**")
    assert nm101["properties"]["problem.severity"] == "error"
    assert {"id", "name", "shortDescription", "fullDescription", "help", "defaultConfiguration", "properties"} <= set(
        nm101
    )
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
    levels = {r["ruleId"]: r["level"] for r in run["results"]}
    assert levels["NM604"] == "note" and levels["NM603"] == "warning" and levels["NM101"] == "error"


def test_sarif_regions_count_code_points_with_exclusive_end() -> None:
    result = checked()
    document = sarif.document([result], root="/repo", cwd="/repo")
    lines = REAL.splitlines()
    for item, finding in zip(document["runs"][0]["results"], sorted(result.findings, key=lambda f: f.sort_key)):
        region = item["locations"][0]["physicalLocation"]["region"]
        text = lines[region["startLine"] - 1][region["startColumn"] - 1 : region["endColumn"] - 1]
        assert text == finding.snippet
    device = next(r for r in document["runs"][0]["results"] if r["ruleId"] == "NM101")
    assert device["locations"][0]["physicalLocation"]["region"]["startColumn"] == DEVICE_LINE.index("xm.") + 1


def _apply(source: str, replacements: list[tuple[int, int, int, int, str]], *, unit: str) -> str:
    """Apply (line, column, end line, end column, text) edits, columns counted in `unit`."""
    lines = source.splitlines(keepends=True)
    data = source.encode() if unit == "bytes" else source

    def offset(line: int, column: int) -> int:
        before = "".join(lines[: line - 1])
        return len(before.encode() if unit == "bytes" else before) + column - 1

    for line, column, end_line, end_column, text in sorted(replacements, reverse=True):
        start, end = offset(line, column), offset(end_line, end_column)
        insert = text.encode() if unit == "bytes" else text
        data = data[:start] + insert + data[end:]  # type: ignore[operator]
    return data.decode() if isinstance(data, bytes) else data


def test_sarif_fixes_reproduce_the_fix() -> None:
    result = checked(select=("NM101",))
    item = sarif.document([result], root="/repo", cwd="/repo")["runs"][0]["results"][0]
    (change,) = item["fixes"][0]["artifactChanges"]
    assert change["artifactLocation"] == {"uri": "pkg/train.py", "uriBaseId": "%SRCROOT%"}
    edits = [
        (
            r["deletedRegion"]["startLine"],
            r["deletedRegion"]["startColumn"],
            r["deletedRegion"]["endLine"],
            r["deletedRegion"]["endColumn"],
            r["insertedContent"]["text"],
        )
        for r in change["replacements"]
    ]
    fixed = checked(select=("NM101",), fix=True).fixed_source
    assert fixed is not None and _apply(REAL, edits, unit="code points") == fixed


def test_sarif_lists_fixes_only_for_fixable_findings() -> None:
    results = sarif.document(sample_results(), root="/repo", cwd="/repo")["runs"][0]["results"]
    with_fix = {
        (r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]) for r in results if "fixes" in r
    }
    assert with_fix == {
        ("NM101", "src/train.py"),
        ("NM603", "src/train.py"),
        ("NM201", "src/train.py"),
        ("NM204", "src/launch.py"),
    }


def test_sarif_paths_are_relative_to_the_repository_root() -> None:
    finding = only(checked(), "NM101")
    cases = {
        ("src/a b.py", "/repo/pkg"): {"uri": "pkg/src/a%20b.py", "uriBaseId": "%SRCROOT%"},
        ("/repo/pkg/x.py", "/elsewhere"): {"uri": "pkg/x.py", "uriBaseId": "%SRCROOT%"},
        ("/other/x.py", "/repo"): {"uri": "file:///other/x.py"},
    }
    for (path, cwd), expected in cases.items():
        result = FileResult(path, (replace(finding, path=path),), source=REAL)
        item = sarif.document([result], root="/repo", cwd=cwd)["runs"][0]["results"][0]
        assert item["locations"][0]["physicalLocation"]["artifactLocation"] == expected


def _line_hashes(source: str) -> list[str]:
    results = sarif.document([checked(source)], root="/repo", cwd="/repo")["runs"][0]["results"]
    return [r["partialFingerprints"]["primaryLocationLineHash"] for r in results]


def test_sarif_fingerprints_survive_line_moves_and_keep_duplicates_apart() -> None:
    moved = REAL.replace("def train", "# a comment\n\n\ndef train")
    assert _line_hashes(moved) == _line_hashes(REAL)
    twice = REAL + "xm.mark_step()\nxm.mark_step()\n"
    hashes = _line_hashes(twice)
    assert len(set(hashes)) == len(hashes)
    assert [h.split(":")[1] for h in hashes[-2:]] == ["2", "3"]  # same line text: occurrences 2 and 3


# --- GitHub workflow commands ----------------------------------------------------------------


def test_github_commands_parse_back_to_the_findings() -> None:
    findings = [f for r in sample_results() for f in r.findings]
    parsed = parse_commands(github.render(sample_results(), REPO))
    assert len(parsed) == len(findings)
    kinds = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
    expected = sorted(
        (
            kinds[f.severity],
            f.path,
            str(f.start.line),
            str(f.start.column),
            str(f.end.column),
            f"{f.code} ({f.name})",
            f.message if f.cell is None else f"cell {f.cell}: {f.message}",
        )
        for f in findings
    )
    got = sorted((p["kind"], p["file"], p["line"], p["col"], p["endColumn"], p["title"], p["message"]) for p in parsed)
    assert got == expected


def test_github_commands_come_most_severe_first() -> None:
    parsed = parse_commands(github.render(sample_results()))
    rank = {"error": 0, "warning": 1, "notice": 2}
    keys = [(rank[p["kind"]], p["file"], int(p["line"])) for p in parsed]
    assert keys == sorted(keys)
    assert [p["kind"] for p in parsed][:6] == ["error"] * 6


def test_github_escapes_messages_and_properties() -> None:
    finding = Finding(
        path="odd, dir/100%:x.py",
        code="NM999",
        name="odd",
        message="50% done\r\nnext: a, b",
        severity=Severity.WARNING,
        start=Position(3, 2),
        end=Position(3, 9),
    )
    output = github.render([FileResult(finding.path, (finding,))])
    assert output.count("\n") == 1  # one line per annotation, whatever the message holds
    (parsed,) = parse_commands(output)
    assert parsed["file"] == "odd, dir/100%:x.py"
    assert parsed["message"] == "50% done\r\nnext: a, b"
    assert "file=odd%2C dir/100%25%3Ax.py" in output


def test_github_drops_columns_on_multi_line_annotations() -> None:
    finding = Finding(
        path="a.py",
        code="NM101",
        name="n",
        message="m",
        severity=Severity.ERROR,
        start=Position(2, 5),
        end=Position(4, 3),
    )
    (parsed,) = parse_commands(github.render([FileResult("a.py", (finding,))]))
    assert parsed["line"] == "2" and parsed["endLine"] == "4"
    assert "col" not in parsed and "endColumn" not in parsed


def _many(count: int) -> list[FileResult]:
    findings = tuple(
        Finding(
            path="big.py",
            code="NM201",
            name="xla_mark_step_call",
            message=f"Remove `xm.mark_step()` number {i}",
            severity=Severity.ERROR,
            start=Position(i + 1, 1),
            end=Position(i + 1, 15),
        )
        for i in range(count)
    )
    return [FileResult("big.py", findings)]


def test_github_summary_lists_every_finding() -> None:
    text = github.summary(sample_results(), root="/repo", cwd="/repo")
    for finding in (f for r in sample_results() for f in r.findings):
        assert f"`{finding.path}:{finding.start.line}:{finding.start.column}` | {finding.code} |" in text
    assert "Found **9** findings" in text


def test_github_summary_stays_under_the_limit_with_a_note() -> None:
    results = _many(5000)
    limit = 40_000
    text = github.summary(results, limit=limit)
    assert len(text.encode("utf-8")) <= limit
    rows = len(re.findall(r"^\| `big\.py:", text, re.MULTILINE))
    hidden = int(re.search(r"_(\d+) more findings are not shown", text)[1])  # type: ignore[index]
    assert rows > 100 and rows + hidden == 5000
    full_text = github.summary(results)  # the default 1 MiB holds all 5000
    assert len(re.findall(r"^\| `big\.py:", full_text, re.MULTILINE)) == 5000
    assert len(full_text.encode("utf-8")) <= github.SUMMARY_LIMIT


def test_github_summary_without_findings() -> None:
    text = github.summary([FileResult("a.py"), FileResult("b.py")])
    assert "All checks passed! (2 files checked)" in text


# --- GitLab Code Quality ---------------------------------------------------------------------

GITLAB_SEVERITIES = {"info", "minor", "major", "critical", "blocker"}


def test_gitlab_columns_count_code_points_on_a_non_ascii_line() -> None:
    issues = json.loads(gitlab.render([checked()], REPO))
    (issue,) = [i for i in issues if i["check_name"] == "NM101"]
    begin, end = issue["location"]["positions"]["begin"], issue["location"]["positions"]["end"]
    assert begin["line"] == end["line"] == 4
    assert DEVICE_LINE[begin["column"] - 1 : end["column"] - 1] == "xm.xla_device()"
    assert len(DEVICE_LINE[: begin["column"] - 1].encode()) > begin["column"] - 1  # bytes would differ


def test_gitlab_issues_have_the_fields_gitlab_requires() -> None:
    issues = json.loads(gitlab.render(sample_results(), RenderOptions(root="/repo", cwd="/repo/sub")))
    assert len(issues) == 9
    for issue in issues:
        assert isinstance(issue["description"], str) and issue["description"]
        assert re.fullmatch(r"NM\d{3}", issue["check_name"])
        assert issue["severity"] in GITLAB_SEVERITIES
        assert re.fullmatch(r"[0-9a-f]{32}", issue["fingerprint"])
        assert issue["location"]["path"].startswith("sub/")  # relative to the repository root
        assert issue["location"]["positions"]["begin"]["line"] >= 1
    assert len({i["fingerprint"] for i in issues}) == len(issues)
    severity = {i["check_name"]: i["severity"] for i in issues}
    assert severity["NM201"] == "critical" and severity["NM603"] == "major" and severity["NM604"] == "minor"


def test_gitlab_fingerprints_are_stable_and_unique() -> None:
    def prints(source: str) -> list[str]:
        return [i["fingerprint"] for i in json.loads(gitlab.render([checked(source)]))]

    assert prints(REAL.replace("def train", "\n\n\ndef train")) == prints(REAL)
    repeated = prints(REAL + "xm.mark_step()\nxm.mark_step()\n")
    assert len(set(repeated)) == len(repeated)
    renamed = json.loads(gitlab.render([checked(path="pkg/other.py")]))
    assert not {i["fingerprint"] for i in renamed} & set(prints(REAL))


# --- rdjson (reviewdog) ----------------------------------------------------------------------


def test_rdjson_columns_are_utf8_bytes_with_exclusive_end() -> None:
    document = json.loads(rdjson.render([checked()]))
    assert document["source"] == {"name": "neuron-migrate", "url": "https://github.com/neuron-migrate/neuron-migrate"}
    (diag,) = [d for d in document["diagnostics"] if d["code"]["value"] == "NM101"]
    start, end = diag["location"]["range"]["start"], diag["location"]["range"]["end"]
    raw = DEVICE_LINE.encode("utf-8")
    assert raw[start["column"] - 1 : end["column"] - 1] == b"xm.xla_device()"
    assert start["column"] == DEVICE_LINE.index("xm.") + 1 + len("è—日本".encode()) - len("è—日本")
    assert diag["severity"] == "ERROR" and diag["location"]["path"] == "pkg/train.py"
    assert diag["code"]["url"].endswith("#nm101")


def test_rdjson_suggestions_reproduce_the_fix() -> None:
    result = checked(select=("NM101",))
    (diag,) = json.loads(rdjson.render([result]))["diagnostics"]
    edits = [
        (
            s["range"]["start"]["line"],
            s["range"]["start"]["column"],
            s["range"]["end"]["line"],
            s["range"]["end"]["column"],
            s["text"],
        )
        for s in diag["suggestions"]
    ]
    fixed = checked(select=("NM101",), fix=True).fixed_source
    assert fixed is not None and _apply(REAL, edits, unit="bytes") == fixed


def test_rdjson_severities_and_findings_without_fixes() -> None:
    diagnostics = json.loads(rdjson.render(sample_results()))["diagnostics"]
    assert {d["severity"] for d in diagnostics} == {"ERROR", "WARNING", "INFO"}
    unfixable = [d for d in diagnostics if d["code"]["value"] in ("NM601", "NM901", "NM604")]
    assert unfixable and all("suggestions" not in d for d in unfixable)


# --- JUnit -----------------------------------------------------------------------------------


def test_junit_has_one_case_per_rule_per_file() -> None:
    results = sample_results() + [checked(REAL + "xm.mark_step()\n")]
    root = ET.fromstring(junit.render(results))
    cases = {(case.get("classname"), case.get("name")) for case in root.iter("testcase")}
    expected = {(f.path, f"{f.code} ({f.name})") for r in results for f in r.findings}
    expected |= {(r.path, junit.CLEAN_CASE) for r in results if not r.findings}
    assert cases == expected
    assert len(list(root.iter("testcase"))) == len(expected)
    (mark_step,) = [
        c
        for c in root.iter("testcase")
        if c.get("classname") == "pkg/train.py" and c.get("name", "").startswith("NM201")
    ]
    failure = mark_step.find("failure")
    assert failure is not None and failure.get("message", "").startswith("2 findings:")
    assert "pkg/train.py:7:9: NM201" in (failure.text or "") and "pkg/train.py:8:1: NM201" in (failure.text or "")
    assert int(root.get("tests", "0")) == len(expected)
    assert int(root.get("failures", "0")) + int(root.get("errors", "0")) == len(expected) - 2  # two clean files


def test_junit_reports_tool_findings_as_errors_and_stays_valid_xml() -> None:
    bad = Finding(
        path="a&b<c>.py",
        code="NM901",
        name="syntax_error",
        message='Fix this \x00 \x1b "quoted" <tag> & more',
        severity=Severity.ERROR,
        start=Position(1, 1),
        end=Position(1, 1),
        category="tool",
    )
    root = ET.fromstring(junit.render([FileResult(bad.path, (bad,))]))
    case = root.find("testsuite/testcase")
    assert case is not None and case.get("classname") == "a&b<c>.py"
    error = case.find("error")
    assert error is not None and case.find("failure") is None
    assert '"quoted" <tag> & more' in (error.text or "")
    assert root.get("errors") == "1" and root.get("failures") == "0"


# --- JSON Lines, full, dispatch ----------------------------------------------------------------


def test_json_lines_holds_the_json_objects_one_per_line() -> None:
    lines = json_lines.render(sample_results()).splitlines()
    assert [json.loads(line) for line in lines] == json.loads(json_output.render(sample_results()))
    assert len(lines) == 9


def test_full_underlines_under_wide_and_non_ascii_text() -> None:
    result = checked()
    out = full.render([result])
    lines = out.splitlines()
    index = lines.index('4 |     name = "modèle—日本"; device = xm.xla_device()')
    caret_line = lines[index + 1]
    source_line = lines[index]
    # `日本` takes four terminal columns for two characters: pad it to four to find `xm.` on screen.
    shown = source_line.replace("日本", "日本  ")
    assert caret_line.index("^") == shown.index("xm.")
    assert caret_line.endswith("^" * len("xm.xla_device()") + " NM101")


def test_full_shows_the_fix_as_a_diff() -> None:
    out = full.render([checked(select=("NM201",))])
    assert "  = safe fix: Remove `xm.mark_step`" in out
    assert "  -        xm.mark_step()" in out
    assert out.rstrip().endswith("[*] 1 fixable with the `--fix` option.")


def test_every_format_dispatches() -> None:
    options = RenderOptions(root="/repo", cwd="/repo", rules=load_catalogue())
    for fmt in FORMATS:
        out = render(fmt, [checked()], options)
        assert "NM101" in out, fmt


def test_repo_path_keeps_paths_outside_the_root() -> None:
    assert repo_path("a.py", "/repo", "/repo/x") == "x/a.py"
    assert repo_path("../b.py", "/repo", "/repo/x") == "b.py"
    assert repo_path("../../c.py", "/repo", "/repo/x") == "../../c.py"
    assert repo_path("a.py", None, None) == "a.py"
