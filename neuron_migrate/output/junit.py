"""JUnit XML: a test suite per file and a test case per rule that fired in it.

A file without findings gets one passing case, so CI dashboards count every file checked.
A tool finding (NM9xx: unreadable or unparseable file) is an `<error>`, a rule finding a `<failure>`.
File names are shown as `github` shows them: control characters (a newline that would start a
forged finding line in the `<failure>` body) escaped, bytes that are not UTF-8 as `\\xNN`.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from itertools import groupby

from neuron_migrate.fsio import visible_name
from neuron_migrate.model import FileResult, Finding
from neuron_migrate.output.base import PLAIN, TOOL_NAME, RenderOptions, printable_path

CLEAN_CASE = "all rules"
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")  # characters XML 1.0 cannot hold


def _text(value: str) -> str:
    return _NOT_XML.sub("\ufffd", value)


def _name(path: str) -> str:
    """A file name as one line of XML text: control characters and non-UTF-8 bytes escaped."""
    return printable_path(visible_name(path))


def _where(finding: Finding) -> str:
    cell = f"cell {finding.cell}:" if finding.cell is not None else ""
    return f"{_name(finding.path)}:{cell}{finding.start.line}:{finding.start.column}"


def _case(suite: ET.Element, path: str, code: str, findings: list[Finding]) -> tuple[int, int]:
    """Add one rule's case to a file's suite; returns (failures, errors) added."""
    first = findings[0]
    case = ET.SubElement(
        suite,
        "testcase",
        name=_text(f"{code} ({first.name})"),
        classname=_name(path),
        file=_name(path),
        line=str(first.start.line),
    )
    tag = "error" if first.category == "tool" else "failure"
    noun = "finding" if len(findings) == 1 else "findings"
    element = ET.SubElement(case, tag, type=code, message=_text(f"{len(findings)} {noun}: {first.message}"))
    element.text = _text("\n".join(f"{_where(f)}: {f.code} {f.message}" for f in findings))
    return (0, 1) if tag == "error" else (1, 0)


def _suite(parent: ET.Element, result: FileResult) -> tuple[int, int, int]:
    """One file's suite; returns (tests, failures, errors)."""
    suite = ET.SubElement(parent, "testsuite", name=_name(result.path))
    findings = sorted(result.findings, key=lambda f: (f.code, f.sort_key))
    tests = failures = errors = 0
    for code, group in groupby(findings, key=lambda f: f.code):
        failed, errored = _case(suite, result.path, code, list(group))
        tests, failures, errors = tests + 1, failures + failed, errors + errored
    if not findings:
        name = _name(result.path)
        ET.SubElement(suite, "testcase", name=CLEAN_CASE, classname=name, file=name)
        tests = 1
    suite.attrib.update(tests=str(tests), failures=str(failures), errors=str(errors), skipped="0")
    return tests, failures, errors


def render(results: Sequence[FileResult], options: RenderOptions = PLAIN) -> str:
    root = ET.Element("testsuites", name=TOOL_NAME)
    totals = [0, 0, 0]
    for result in sorted(results, key=lambda r: r.path):
        for index, count in enumerate(_suite(root, result)):
            totals[index] += count
    root.attrib.update(tests=str(totals[0]), failures=str(totals[1]), errors=str(totals[2]))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
