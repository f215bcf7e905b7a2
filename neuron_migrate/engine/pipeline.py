"""Process files: read, check, fix until nothing changes, verify, write atomically."""

from __future__ import annotations

import ast
import warnings
from collections import Counter
from dataclasses import replace
from pathlib import Path

from neuron_migrate.analysis.analyze import Analysis
from neuron_migrate.analysis.source import DecodeError, Encoded, decode, encode
from neuron_migrate.engine import suppress, waiting_imports
from neuron_migrate.engine.apply import Applied, apply_once, choose, plan_key, verify
from neuron_migrate.engine.budget import refusals
from neuron_migrate.engine.check import (
    Planned,
    analyze,
    findings_for,
    tool_finding,
    with_edits,
)
from neuron_migrate.engine.formats import notebook
from neuron_migrate.engine.formats.textfiles import (
    check_text_file,
    file_kind,
    packaging_findings,
)
from neuron_migrate.engine.ruleset import Ruleset, build_ruleset, enabled_codes, might_match
from neuron_migrate.engine.writeback import snapshot, write_back
from neuron_migrate.fsio import NotRegularFile, TooLarge, read_regular
from neuron_migrate.model import FileResult, Finding, Fix, Safety
from neuron_migrate.settings import Settings

# A text's planning: its planned findings, or the NM9xx finding that stops planning; and the
# analysis planned on. `Plans`: that of each text a file's fix runs reach, by text.
Planning = tuple[list[Planned], Finding | None, Analysis | None]
Plans = dict[str, Planning]


def check_source(text: str, path: str, settings: Settings) -> FileResult:
    """Check (and with `settings.fix`, fix) one file's text. Never raises for bad input."""
    if notebook.is_notebook(path):
        return notebook.check_notebook(text, path, settings, check_python)
    kind = file_kind(path)
    if kind is not None and kind != "setup_py":
        return check_text_file(text, path, settings)
    result = check_python(text, path, settings)
    if kind == "setup_py":
        extra = packaging_findings(result.fixed_source or text, path, settings)
        findings = tuple(sorted((*result.findings, *extra), key=lambda f: f.sort_key))
        return replace(result, findings=findings)
    return result


def check_python(text: str, path: str, settings: Settings) -> FileResult:
    """Check Python text, then apply `# noqa` comments and per-file-ignores."""
    return suppress.finish(_check(text, path, settings), settings)


def _check(text: str, path: str, settings: Settings) -> FileResult:
    ruleset = ruleset_for(settings)
    start = first_round(text, path, settings, ruleset)
    if isinstance(start, FileResult):
        return start
    planned, analysis = start
    if not settings.fix:
        if settings.fix_edits and analysis is not None:
            planned = with_edits(analysis, planned)
        return FileResult(
            path, tuple(_imports_fixed_later(text, path, settings, ruleset, planned, analysis)), source=text
        )
    return _fix_loop(text, path, settings, ruleset, planned, analysis)


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
    planned, error, analysis = _plan_with_analysis(text, path, ruleset)
    if error is None and planned and analysis is not None:
        error = _compile_error(analysis.tree, path)  # parses, but Python would refuse it: never edited
    if error is not None:
        return FileResult(path, (error,), source=text)
    if no_fix is not None:
        refused = tool_finding(path, "NM904", f"Fix this file by hand or split it; {no_fix}")
        findings = sorted((*(p.finding for p in planned), refused), key=lambda f: f.sort_key)
        return FileResult(path, tuple(findings), source=text)
    return planned, analysis


def _imports_fixed_later(
    text: str,
    path: str,
    settings: Settings,
    ruleset: Ruleset,
    planned: list[Planned],
    analysis: Analysis | None,
    plans: Plans | None = None,
) -> list[Finding]:
    """The findings, with torch_xla imports that `--fix` removes once other fixes leave them unused
    marked as safely fixable (an edit-less fix), so the summary's count is what `--fix` reports, and
    their message saying so (it said why the import stays, which is true only before the fixes).
    Under `--unsafe-fixes`, those that only `--fix --unsafe-fixes` removes are marked too, as
    unsafe (the result cache keys on the option).

    The fix has no edits of its own (alone they would break the uses), so the formats a tool
    applies fixes from (JSON, SARIF, rdjson) show no fix and no applicability for it.

    Whether an import goes depends on every other fix (its uses, the `"xla"` strings a backend
    import serves, names from a star import), so it is found by running the fixes in memory,
    only for files that have such an import and some fix. Most often the first round leaves
    every such import that may go unused: then the second round is planned for the import rules
    alone (`waiting_imports.fixed_by_round_two`), and the whole run is left out. Not when `plans`
    is given: the report's real fix runs reuse the whole run's plans of each text it reaches.
    """
    findings = [p.finding for p in planned]
    import_codes = ruleset.index.import_codes
    waiting = [i for i, p in enumerate(planned) if p.finding.fix is None and p.finding.code in import_codes]
    levels = (Safety.SAFE, Safety.UNSAFE) if settings.unsafe_fixes else (Safety.SAFE,)
    for level in levels:
        marked = _freed(text, path, settings, ruleset, planned, analysis, waiting, level, plans)
        for index in marked:
            finding = findings[index]
            message = finding.message
            if not message.startswith("Remove the "):  # it said why the import stays (`Keep ...`)
                message = waiting_imports.goes_with_uses(finding.snippet, level)
            findings[index] = replace(
                finding, message=message, fix=Fix(level, waiting_imports.goes_with_uses_fix(level), ())
            )
        waiting = [i for i in waiting if i not in marked]
    return findings


def _freed(
    text: str,
    path: str,
    settings: Settings,
    ruleset: Ruleset,
    planned: list[Planned],
    analysis: Analysis | None,
    waiting: list[int],
    level: Safety,
    plans: Plans | None,
) -> list[int]:
    """The waiting imports (indexes into `planned`) that a fix run removes with the fixes up to
    `level` (safe; or safe and unsafe)."""
    allowed = frozenset({Safety.SAFE, level})
    if not waiting or not any(p.plan is not None and p.applicability in allowed for p in planned):
        return []
    if analysis is not None:
        import_codes = ruleset.index.import_codes
        waiting = [i for i in waiting if waiting_imports.may_go(analysis, planned, planned[i], import_codes, allowed)]
        if not waiting:
            return []  # each waiting import keeps a use no such fix touches: the rounds cannot remove it
    simulated = replace(settings, fix=True, unsafe_fixes=level is Safety.UNSAFE)
    two = None
    if analysis is not None and plans is None:  # a report keeps each round's plans for its real fix runs
        two = waiting_imports.fixed_by_round_two(text, path, simulated, ruleset, planned, analysis)
    marked = _gone(planned, waiting, two.gone) if two is not None else None
    if marked is None or len(marked) < len(waiting):  # one may go in a later round: run them all
        if two is not None and two.text is not None and two.tree is not None:
            plans = {two.text: _plan_tree(two.text, two.tree, path, ruleset)}  # its second round, parsed once
        fixed = _fix_loop(text, path, simulated, ruleset, planned, analysis, simulate=True, plans=plans).fixed
        marked = _gone(planned, waiting, Counter((f.code, f.snippet) for f in fixed))
    return marked


def _gone(planned: list[Planned], waiting: list[int], gone: Counter[tuple[str, str]]) -> list[int]:
    """The waiting imports among `planned` that a fix run removes, given what it fixed."""
    marked = []
    for index in waiting:
        key = (planned[index].finding.code, planned[index].finding.snippet)
        if gone[key] > 0:
            gone[key] -= 1
            marked.append(index)
    return marked


def _plan(text: str, path: str, ruleset: Ruleset) -> tuple[list[Planned], Finding | None]:
    planned, error, _ = _plan_with_analysis(text, path, ruleset)
    return planned, error


def _plan_with_analysis(text: str, path: str, ruleset: Ruleset) -> Planning:
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
    return _plan_tree(text, tree, path, ruleset)


def _plan_tree(text: str, tree: ast.Module, path: str, ruleset: Ruleset) -> Planning:
    """`_plan_with_analysis` of a text already parsed."""
    try:
        analysis, matches = analyze(text, tree, ruleset)
        return findings_for(path, analysis, matches), None, analysis
    except RecursionError:
        return [], tool_finding(path, "NM905", "Split this file; it is nested too deeply to analyse"), None


def _fix_loop(
    text: str,
    path: str,
    settings: Settings,
    ruleset: Ruleset,
    planned: list[Planned],
    analysis: Analysis | None,
    simulate: bool = False,
    seen: list[Planned] | None = None,
    plans: Plans | None = None,
) -> FileResult:
    """Apply fixes round by round, each on the analysis its plans came from; verify the result once.

    `seen`, when given, collects the plans of every round (what `engine/variants.py` reads to
    know whether `--unsafe-fixes` could have chosen otherwise); `plans` keeps the planning of
    each text reached, for the other runs of the same file (a text planned once).

    `simulate` learns what `--fix` would fix without LibCST: text edits only, no verification,
    and it stops before a round that would only remove imports (it learns what that round fixes).

    A fix whose result does not compile is dropped alone: the others are applied, and its finding
    stays without a fix, with an NM906 finding beside it. So is the second of two fixes that
    compile apart but not together.
    """
    original = text
    fixed: list[Finding] = []
    dropped: set[tuple[str, str, str]] = set()  # plans that broke the file, by what they do
    converged = False
    for _ in range(settings.max_fix_iterations):
        if seen is not None:
            seen.extend(planned)
        reported = suppress.reporter(text, path, settings)  # suppressed findings are not fixed
        chosen = choose(planned, settings, reported, dropped)
        if not chosen or analysis is None:
            converged = True
            break
        if simulate and fixed and _only_imports(chosen, ruleset):
            fixed.extend(p.finding for p in chosen)  # removing unused imports enables no other fix
            converged = True
            break
        applied = apply_once(analysis, chosen, text_only=simulate)
        dropped.update(plan_key(p) for p in applied.declined)  # a transform that declined: not fixed
        if applied.text == text:
            converged = True
            break
        replanned, error, next_analysis = _replan(applied.text, path, ruleset, plans)
        if error is not None and error.code == "NM901":  # some fix broke the syntax: drop it alone
            good, bad = _split_breaking(analysis, chosen, path)
            if not bad:
                return _rejected(original, path, ruleset, error.message)
            dropped.update(plan_key(p) for p in bad)
            applied = apply_once(analysis, good) if good else Applied(text, ())
            if applied.text == text:
                converged = True
                break
            replanned, error, next_analysis = _replan(applied.text, path, ruleset, plans)
        if error is not None:
            return _rejected(original, path, ruleset, error.message)
        text = applied.text
        fixed.extend(applied.fixed)
        planned, analysis = replanned, next_analysis
    problem = verify(text, path) if text != original and not simulate else None
    if problem is not None:
        return _rejected(original, path, ruleset, problem)
    if settings.fix_edits and analysis is not None and not simulate:
        planned = with_edits(analysis, planned)
    remaining = [replace(p.finding, fix=None) if plan_key(p) in dropped else p.finding for p in planned]
    remaining += [_dropped_finding(path, p.finding) for p in planned if plan_key(p) in dropped]
    if not converged:
        remaining.append(
            tool_finding(
                path, "NM907", f"Review the fixes; they did not settle after {settings.max_fix_iterations} rounds"
            )
        )
    return FileResult(
        path,
        tuple(sorted(remaining, key=lambda f: f.sort_key)),
        fixed=tuple(fixed),
        source=original,
        fixed_source=text if text != original else None,
    )


def _replan(text: str, path: str, ruleset: Ruleset, plans: Plans | None) -> Planning:
    if plans is None:
        return _plan_with_analysis(text, path, ruleset)
    if text not in plans:
        plans[text] = _plan_with_analysis(text, path, ruleset)
    return plans[text]


def _only_imports(chosen: list[Planned], ruleset: Ruleset) -> bool:
    codes = ruleset.index.import_codes
    return all(p.finding.code in codes for p in chosen)


_MAX_ISOLATED = 200  # beyond this many plans in one round, a broken round rejects the file


def _split_breaking(analysis: Analysis, chosen: list[Planned], path: str) -> tuple[list[Planned], list[Planned]]:
    """The plans that keep the file compiling, and those that break it: alone, or together with
    the plans kept before them (two fixes that are each fine but not together: the second goes)."""
    if len(chosen) > _MAX_ISOLATED:
        return chosen, []
    good: list[Planned] = []
    bad: list[Planned] = []
    for item in chosen:
        alone = apply_once(analysis, [item]).text
        (bad if _syntax_problem(alone, path) is not None else good).append(item)
    if bad or _syntax_problem(apply_once(analysis, good).text, path) is None:
        return good, bad
    kept: list[Planned] = []
    for item in good:
        together = apply_once(analysis, [*kept, item]).text
        (bad if _syntax_problem(together, path) is not None else kept).append(item)
    return kept, bad


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


def _syntax_problem(text: str, path: str) -> str | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    except (RecursionError, MemoryError):
        return None  # planning reports files nested too deeply
    return None


def _dropped_finding(path: str, finding: Finding) -> Finding:
    message = f"Fix this `{finding.code}` finding by hand; its automatic fix produced invalid code"
    return tool_finding(path, "NM906", message, finding.start.line, finding.start.column)


def _rejected(original: str, path: str, ruleset: Ruleset, problem: str) -> FileResult:
    """The fixes broke the file: keep it untouched and say so."""
    planned, _ = _plan(original, path, ruleset)
    message = f"Fix this file by hand; the automatic fixes produced invalid code ({problem})"
    # The fixes were rolled back: `--fix` cannot fix these findings, so they carry no fix.
    findings = [replace(p.finding, fix=None) for p in planned]
    findings.append(tool_finding(path, "NM906", message.replace("\n", " ")))
    return FileResult(path, tuple(findings), source=original)


def read_source(
    path: Path, display: str, settings: Settings, data: bytes | None = None
) -> tuple[str, Encoded] | Finding:
    """The decoded text of a file (or of `data`, its bytes already read), or the NM9xx finding that says why it cannot be read."""
    if data is None:
        read = read_bytes(path, display, settings)
        if isinstance(read, Finding):
            return read
        data = read
    try:
        return decode(data)
    except DecodeError as exc:
        return tool_finding(display, "NM902", f"Save this file in the encoding it declares; {exc}")


def read_bytes(path: Path, display: str, settings: Settings) -> bytes | Finding:
    """A file's bytes, or the NM9xx finding that says why they cannot be read."""
    try:
        return read_regular(path, settings.max_file_bytes)[0]
    except TooLarge:
        limit = settings.max_file_bytes // (1024 * 1024)
        return tool_finding(display, "NM904", f"Exclude this file or split it; it is larger than {limit} MiB")
    except NotRegularFile as exc:
        if exc.kind == "a folder":
            return tool_finding(display, "NM903", "Rename or exclude this directory; it is named like a Python file")
        return tool_finding(display, "NM903", f"Remove or exclude this file; {exc}")
    except OSError as exc:
        return tool_finding(display, "NM903", f"Make this file readable; {exc.strerror or exc}")


def process_file(
    path: Path, display: str, settings: Settings, write: bool = True, data: bytes | None = None
) -> FileResult:
    """Read (unless `data` holds the bytes), check, maybe fix, and write back one file."""
    if data is None:
        read = read_bytes(path, display, settings)
        if isinstance(read, Finding):
            return FileResult(display, (read,))
        data = read
    seen = snapshot(path, data) if write else None  # what the fix is computed from
    decoded = read_source(path, display, settings, data)
    if isinstance(decoded, Finding):
        return FileResult(display, (decoded,))
    text, how = decoded
    try:
        result = check_source(text, display, settings)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - one file's bug (a plugin's `sys.exit`) must not stop the run
        message = f"Report this bug; neuron-migrate failed on this file: {type(exc).__name__}: {exc}"
        return FileResult(display, (tool_finding(display, "NM908", message.replace("\n", " ")[:300]),), source=text)
    if write and result.changed:
        try:
            problem = write_back(path, encode(result.fixed_source or "", how), seen)
        except (OSError, UnicodeEncodeError) as exc:
            problem = f"Make this file writable; {exc}"
        if problem is not None:
            return _unwritten(text, display, settings, problem)
    return result


def _unwritten(text: str, display: str, settings: Settings, problem: str) -> FileResult:
    """The file was not written: its findings as a check reports them, and why it was skipped."""
    result = check_source(text, display, replace(settings, fix=False, add_noqa=False))
    unfixed = (replace(f, fix=None) for f in result.findings)  # `--fix` could not write them
    findings = sorted((*unfixed, tool_finding(display, "NM903", problem)), key=lambda f: f.sort_key)
    return replace(result, findings=tuple(findings))
