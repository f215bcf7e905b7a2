"""One text's planning: parse it once, analyse it, and plan every finding's fix.

`first_round` is what `check` does to a file (and the first round of `--fix`): plan the text as
read, then mark the torch_xla imports that other fixes free (`engine/waiting_imports.py`) and,
for the formats that show edits, make the structural fixes' edits. A plain check parses the
file once and runs no fix.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import replace

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.engine import waiting_imports
from neuron_migrate.engine.budget import refusals
from neuron_migrate.engine.check import Planned, analyze, findings_for, tool_finding, with_edits
from neuron_migrate.engine.ruleset import Ruleset, build_ruleset, enabled_codes, might_match
from neuron_migrate.model import FileResult, Finding
from neuron_migrate.settings import Settings

# A text's planning: its planned findings, or the NM9xx finding that stops planning; and the
# analysis planned on.
Planning = tuple[list[Planned], Finding | None, Analysis | None]


def ruleset_for(settings: Settings) -> Ruleset:
    return build_ruleset(enabled_codes(settings), settings.target_version, settings.rule_sources, settings.target)


def first_round(
    text: str, path: str, settings: Settings, ruleset: Ruleset
) -> FileResult | tuple[list[Planned], Analysis | None]:
    """The findings planned on the text as read (and its analysis), or the result that ends the
    work there: nothing can match, a file over the budget, one that does not parse or compile."""
    if not might_match(text, ruleset):
        return FileResult(path, source=text)
    too_big, no_fix = refusals(text, settings.fix)
    if too_big is not None:
        return FileResult(
            path, (tool_finding(path, "NM904", f"Exclude this file or split it; {too_big}"),), source=text
        )
    planned, error, analysis = plan(text, path, ruleset)
    if error is None and planned and analysis is not None:
        error = _compile_error(analysis.tree, path)  # parses, but Python would refuse it: never edited
    if error is not None:
        return FileResult(path, (error,), source=text)
    if no_fix is not None:  # its findings stay, without the fixes this run will not make (NM904 says why)
        refused = tool_finding(path, "NM904", f"Fix this file by hand or split it; {no_fix}")
        findings = sorted((*(replace(p.finding, fix=None) for p in planned), refused), key=lambda f: f.sort_key)
        return FileResult(path, tuple(findings), source=text)
    return planned, analysis


def reported(analysis: Analysis | None, planned: list[Planned], settings: Settings, ruleset: Ruleset) -> list[Planned]:
    """`planned` as a result reports it: the torch_xla imports that other fixes free marked with
    their own fix (requiring those), and for the formats that show edits, the structural fixes'
    edits made."""
    if analysis is None:
        return planned
    planned = waiting_imports.with_freed(analysis, planned, settings, ruleset.index.import_codes)
    return with_edits(analysis, planned) if settings.fix_edits else planned


def plan(text: str, path: str, ruleset: Ruleset) -> Planning:
    """The planned findings, or the NM9xx finding that stops planning; and the analysis planned on."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences are the user's business
            tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        message = f"Fix the syntax error before migrating: {exc.msg}"
        return [], tool_finding(path, "NM901", message, exc.lineno or 1, max(exc.offset or 1, 1)), None
    except (RecursionError, MemoryError):
        return [], tool_finding(path, "NM905", "Split this file; it is nested too deeply to parse"), None
    except ValueError as exc:  # source code string cannot contain null bytes
        return [], tool_finding(path, "NM901", f"Fix the file before migrating: {exc}"), None
    try:
        analysis, matches = analyze(text, tree, ruleset)
        return findings_for(path, analysis, matches), None, analysis
    except RecursionError:
        return [], tool_finding(path, "NM905", "Split this file; it is nested too deeply to analyse"), None


def _compile_error(tree: ast.Module, path: str) -> Finding | None:
    """NM901 for a file that parses but does not compile (`return` outside a function, `await`
    or `nonlocal` at module level): only files with findings pay for the compile. The parsed
    tree is compiled, not the text: the errors left after parsing come from the compiler's own
    passes, which read the tree, so they are the same, and the text is not parsed again."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if ".ipynb" in path else 0  # IPython runs `await` in cells
            compile(tree, path, "exec", flags=flags, dont_inherit=True)
    except SyntaxError as exc:
        message = f"Fix the syntax error before migrating: {exc.msg}"
        return tool_finding(path, "NM901", message, exc.lineno or 1, max(exc.offset or 1, 1))
    except (ValueError, RecursionError, MemoryError):
        return None  # planning reports these
    return None
