"""The output formats of `check`: one table that the command line, the config, the renderers,
the escaping of reports, the tests and the README's list all read.

It imports nothing of the package, so `--help` and config validation know the formats without
loading a renderer. Adding a format is a row here and a module under `output/` (see
CONTRIBUTING, "A new output format").
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Escaping(Enum):
    """How text from the files checked (messages, names) is made safe in a report.

    TERMINAL: control characters shown as escapes (`\\x1b`, `\\n`), so a message can neither
    drive the terminal nor forge a second line; names that are not UTF-8 keep their bytes.
    JSON: the JSON encoder escapes control characters; such names become `\\udcXX` escapes.
    MARKUP: control characters shown as escapes (XML 1.0 cannot hold them at all); names that
    are not UTF-8 shown as `\\xNN`.
    """

    TERMINAL = "terminal"
    JSON = "json"
    MARKUP = "markup"


@dataclass(frozen=True)
class OutputFormat:
    """One `--output-format` value."""

    name: str  # as `--output-format` and the `output-format` config key spell it
    module: str  # neuron_migrate.output.<module> holds `render(results, options) -> str`
    suffix: str  # what a saved report is called: `report<suffix>` (and the snapshot tests' files)
    escaping: Escaping
    carries_fixes: bool  # each finding's fix is in the report as edits a tool can apply
    for_people: bool  # read in a terminal: summaries and extras go to stdout beside it
    describes_rules: bool  # the report lists the rules (it needs the catalogue)
    summary: str  # one line for the README's list and `--help`
    aliases: tuple[str, ...] = ()  # other names `--output-format` and the config accept


OUTPUT_FORMATS: tuple[OutputFormat, ...] = (
    OutputFormat("text", "text", ".txt", Escaping.TERMINAL, False, True, False,
                 "one line per finding, then the totals (the default)", ("concise",)),
    OutputFormat("full", "full", ".txt", Escaping.TERMINAL, False, True, False,
                 "each finding with its source lines and the fix as a diff"),
    OutputFormat("json", "json", ".json", Escaping.JSON, True, False, False,
                 "a list of Ruff-shaped objects, fixes as edits"),
    OutputFormat("json-lines", "json_lines", ".jsonl", Escaping.JSON, True, False, False,
                 "the `json` objects, one per line"),
    OutputFormat("sarif", "sarif", ".sarif", Escaping.JSON, True, False, True,
                 "SARIF 2.1.0 for code scanning, with the rules and the fixes"),
    OutputFormat("github", "github", ".txt", Escaping.TERMINAL, False, False, False,
                 "GitHub Actions annotations (and the job's step summary)"),
    OutputFormat("gitlab", "gitlab", ".json", Escaping.JSON, False, False, False,
                 "GitLab Code Quality report"),
    OutputFormat("junit", "junit", ".xml", Escaping.MARKUP, False, False, False,
                 "JUnit XML: a test case per rule per file"),
    OutputFormat("rdjson", "rdjson", ".json", Escaping.JSON, True, False, False,
                 "reviewdog's rdjson, fixes as suggestions"),
)  # fmt: skip
# The formats, in `--help`'s order; CHOICES adds their aliases (`concise`, Ruff's name for `text`).
NAMES: tuple[str, ...] = tuple(f.name for f in OUTPUT_FORMATS)
CHOICES: tuple[str, ...] = tuple(name for f in OUTPUT_FORMATS for name in (f.name, *f.aliases))


def output_format(name: str) -> OutputFormat:
    """The row for `name` or one of its aliases; KeyError for a name not in the table."""
    for row in OUTPUT_FORMATS:
        if name == row.name or name in row.aliases:
            return row
    raise KeyError(name)
